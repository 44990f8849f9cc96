"""How a caller wraps and watches the build: :class:`Hooks`, and the names of what it wraps."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from inspire_build import cancellation, dask_runner, progress
from inspire_build.config import Settings
from inspire_build.driver import steps

T = TypeVar("T")
SELECT, LINEAGE, LLM_STEPS, WRITE = steps.STEPS  # the stages of :meth:`Hooks.progress`
# The build's tasks; a run of one is named by the targets it holds (resolve-lineage targets 1-20).
SELECT_TASK, RESOLVE_TASK, STEPS_TASK = "select-targets", "resolve-lineage", "brief-audit-grade"
WRITE_TASK, REVIEWS_TASK = "write-version", "apply-reviews"
LINEAGE_SHARE = 50.0  # :meth:`Hooks.share`: lineage is the build's first half


class Waitable(Protocol):
    def wait(self) -> object: ...


class Workers(Protocol):
    """The Dask workers a round's chunks go to (:meth:`Hooks.workers`)."""

    @property
    def count(self) -> int: ...

    def submit(
        self, name: str, label: str, step: Callable[..., Any], parameters: dict[str, Any]
    ) -> Any:
        """Run ``step(**parameters)``, one of the build's tasks, on a worker: a future."""
        ...


class Hooks:
    """How a caller wraps and watches the build. These defaults run each task as a plain call
    in this thread, report progress to this process's watchers (the bars of `inspire build`),
    stop at a signal that :mod:`cancellation` caught, and say nothing; the Prefect flow's make
    each task a task run, and report to its log and its artifacts."""

    def run(self, name: str, label: str, step: Callable[..., T], *args: Any) -> T:
        """One of the build's tasks (``name``; ``label`` names this run of it): ``step(*args)``,
        in this thread."""
        return step(*args)

    def follow(
        self, name: str, label: str, step: Callable[..., Any], *args: Any
    ) -> Waitable | None:
        """A task that follows work already running beside this thread (a chunk's LLM steps):
        ``step(*args)`` started, for the build to wait on once it has written that work; None
        where nothing follows it."""
        return None

    @contextlib.contextmanager
    def workers(self, settings: Settings) -> Iterator[Workers]:
        """The Dask workers of a ``runner = "dask"`` build, while a round runs on them."""
        with dask_runner.client(settings, self.say) as workers:
            yield workers

    def progress(self, stage: str, done: int, total: int) -> None:
        """``done`` of ``total`` steps of ``stage`` are behind the build (called beside this
        thread too: lineage's progress comes from its S2 thread)."""
        cancellation.checkpoint()
        progress.advance(stage, done, total)

    def share(self, percent: float) -> None:
        """The build's overall progress, now and then: lineage its first half, the LLM steps
        its second (the first call comes from this thread, as the build starts)."""

    def say(self, line: str, warning: bool = False) -> None:
        """A line for the build's log."""

    def publish(self, split: str, version: dict[str, Any], card: str) -> None:
        """The version written, with its dataset card."""

    def signalled(self) -> bool:
        """Whether a signal has asked the build to stop (polled while it waits for the lock)."""
        return cancellation.signalled()

    def stopped(self, error: BaseException) -> BaseException:
        """The error a build stopped with, as it is recorded (a signal's as Cancelled)."""
        return cancellation.as_cancelled(error)
