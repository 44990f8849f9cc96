"""The ``build-split`` flow: the build of ``inspire_build/driver/``, as Prefect shows it. Each
task is a task run named by the targets it holds (on the Dask workers through Prefect's Dask
task runner); the build's lines go to the flow run's log, its progress and its version (with
the dataset card) to artifacts; a signal ends the flow run Cancelled."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from typing import Any, cast
from uuid import UUID

from prefect import artifacts, flow, get_run_logger, runtime, states, task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import SyncPrefectClient
from prefect.client.schemas.actions import ArtifactUpdate
from prefect.context import FlowRunContext
from prefect.exceptions import TerminationSignal
from prefect.utilities.annotations import quote

from inspire_build import dask_runner, driver, prefect_runtime
from inspire_build.config import Settings, get_settings
from inspire_build.errors import Cancelled


@functools.cache
def _task(name: str, step: Callable[..., Any], one_line: bool = False) -> Any:
    """``step`` as a task (live connections as parameters: no cache, no result kept); with
    ``one_line``, its run ends Cancelled or Failed with the error, in one line, not raising."""

    @functools.wraps(step)
    def told(*args: Any, **kwargs: Any) -> Any:
        try:
            return step(*args, **kwargs)
        except (CancelledError, Cancelled) as error:  # the build stopped: its steps dropped
            return states.Cancelled(message=str(error) or "the build stopped")
        except Exception as error:  # the build's own thread reports the target's error
            return states.Failed(message=f"a target's LLM steps failed: {error}")

    return task(name=name, cache_policy=NO_CACHE, persist_result=False)(told if one_line else step)


def _named(name: str, label: str, step: Callable[..., Any], one_line: bool = False) -> Any:
    return _task(name, step, one_line).with_options(task_run_name=label)


class Hooks(driver.Hooks):
    """Task runs (their parameters passed on unwalked: a selection's records took seconds), the
    flow run's log, a progress artifact and the version's."""

    def __init__(self, split: str) -> None:
        self.logger, self.split, self.shown = get_run_logger(), split, cast(UUID | None, None)
        # the run's client, for any thread: update_progress_artifact opens one (SSL and all) a call
        self.client = cast(SyncPrefectClient, cast(FlowRunContext, FlowRunContext.get()).client)

    def run(self, name: str, label: str, step: Callable[..., Any], *args: Any) -> Any:
        return _named(name, label, step)(*map(quote, args))

    def follow(self, name: str, label: str, step: Callable[..., Any], *args: Any) -> Any:
        return _named(name, label, step, one_line=True).submit(*map(quote, args))

    @contextlib.contextmanager
    def workers(self, settings: Settings) -> Iterator[driver.Workers]:
        from prefect_dask.task_runners import DaskTaskRunner

        with dask_runner.scheduler(settings, self.say) as at, DaskTaskRunner(address=at) as ran:
            yield dask_runner.Workers(
                ran.client,
                lambda name, label, step, given: ran.submit(_named(name, label, step), given),
            )

    def share(self, percent: float) -> None:
        if self.shown is None:  # a sync call outside an event loop returns the ID itself
            key, said = f"{self.split}-build-progress", f"{self.split}: lineage, then LLM steps"
            self.shown = cast(UUID, artifacts.create_progress_artifact(percent, key, said))
        self.client.update_artifact(self.shown, ArtifactUpdate(data=percent))

    def say(self, line: str, warning: bool = False) -> None:
        (self.logger.warning if warning else self.logger.info)(line)

    def publish(self, split: str, version: dict[str, Any], card: str) -> None:
        said = f"The {split} version this build wrote: its counts and dataset card"
        markdown = f"{driver.summary(version)}\n\n{card}"
        artifacts.create_markdown_artifact(markdown, f"{split}-version", said)

    def stopped(self, error: BaseException) -> BaseException:
        return prefect_runtime.as_cancelled(error)


@flow(name="build-split", log_prints=True)
def build_split(
    split: str = "eval",
    limit: int | None = None,
    instances: int | None = None,
    label: str | None = None,
    llm_backend: str | None = None,
    source_mode: str | None = None,
    concurrency: int | None = None,
    chunk_size: int | None = None,
    warehouse_path: str | None = None,
    llm_concurrency: int | None = None,
    runner: str | None = None,
    dask_address: str | None = None,
    apply_reviews: bool = False,
    llm_budget_usd: float | None = None,
) -> Any:
    """Build one split version into ``warehouse_path`` (else the configured warehouse) and
    return its row: ``instances`` builds until that many are accepted (``limit`` caps the
    candidates walked), ``runner="dask"`` on Dask workers (at ``dask_address``, else a
    LocalCluster), ``llm_budget_usd`` stops it before a call would spend more;
    ``apply_reviews`` only writes the latest version again with the curators' reviews applied.
    A cancelled build ends the flow run Cancelled."""
    given = {k: v for k, v in locals().items() if k not in ("label", "apply_reviews")}
    given["warehouse"] = given.pop("warehouse_path")  # the others are the settings' own names
    settings, hooks, run_id = get_settings().overridden(**given), Hooks(split), runtime.flow_run.id
    try:
        return driver.run(settings, split, label, reviews=apply_reviews, run_id=run_id, hooks=hooks)
    except (Cancelled, TerminationSignal) as error:  # the open transaction rolled back
        stopped = prefect_runtime.as_cancelled(error)
        hooks.say(str(stopped), warning=True)
        return states.Cancelled(message=str(stopped))  # the flow run is Cancelled, not Failed
