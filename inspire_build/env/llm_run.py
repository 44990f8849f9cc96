"""``inspire agent run --agent llm``: the LLM agent on every instance of a split version, as the
operator (one session per instance), several instances at once, under the LLM limits.

The model's endpoint, key and limits are the pipeline's LLM settings (``INSPIRE_LLM_*``, so a
shell set up by ``inspire sandbox env`` asks the sandbox's model), with the command's
``--model``, ``--base-url`` and ``--api-key-env`` over them. The run and trajectory files are
written in instance order, so the number of instances at once changes no byte of the run file.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import duckdb
from pydantic import SecretStr

from inspire_build.config import Settings
from inspire_build.env import run, transcript
from inspire_build.env.core import SearchEnv
from inspire_build.env.limits import MAX_ID_CHARS
from inspire_build.env.llm_agent import Failure, LlmAgent, Outcome
from inspire_build.http import SourceMode
from inspire_build.llm.tool_chat import ToolChat, Totals

if TYPE_CHECKING:
    from inspire_build.llm.backend import OpenAIClient

AGENT = "llm"


@dataclasses.dataclass(frozen=True)
class LlmRun:
    """A finished run: the version, the run's name, each instance's environment and outcome
    (in instance order), and what the model's turns used."""

    version: str
    run_name: str
    envs: list[SearchEnv]
    outcomes: list[Outcome]
    totals: Totals

    def failures(self) -> dict[str, int]:
        """Instances that ended as an empty submission, by failure (only those that occurred,
        in :class:`Failure`'s order)."""
        counted = collections.Counter(o.failure for o in self.outcomes if o.failure is not None)
        return {failure.value: counted[failure] for failure in Failure if counted[failure]}

    def notes(self) -> list[dict[str, object]]:
        """What each trajectory line adds: its failure and the failure's detail."""
        return [outcome.note() for outcome in self.outcomes]


def agent_settings(
    settings: Settings, model: str | None, base_url: str | None, api_key: str | None
) -> Settings:
    """The settings the agent's model is asked with: the openai backend (the rules play no
    agent), and the command's model, endpoint and key over the environment's."""
    update: dict[str, object] = {"llm_backend": "openai"}
    if model:
        update["llm_model"] = model
    if base_url:
        update["llm_base_url"] = base_url
    if api_key:
        update["llm_api_key"] = SecretStr(api_key)
    return settings.model_copy(update=update)


def run_llm(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    where: tuple[str, str | None, str, int],
    *,
    workers: int,
    deadline_s: float | None,
    started: Callable[[str, int], Callable[[], None]] = lambda _v, _n: lambda: None,
    mode: SourceMode | None = None,
    client: OpenAIClient | None = None,
) -> LlmRun:
    """Run the LLM agent (``settings.llm_model``, at ``settings.llm_base_url``: see
    :func:`agent_settings`) on every instance of the version of ``where`` (split, version or
    None, backend, budget), ``workers`` instances at once, each within ``deadline_s``.
    ``started(version, instances)`` returns what to call after each instance."""
    chosen, sessions = run.open_run(con, settings, AGENT, where, mode)
    # made first: a budget that cannot be kept (a model with no price) is refused before any work
    chat = ToolChat(settings, con, transcript.format_hash(), scope=sessions.run_name, client=client)
    advance = started(chosen, len(sessions.tasks))
    agent = LlmAgent(chat, sessions.budget, deadline_s)
    label = f"{AGENT}:{settings.llm_model}"[:MAX_ID_CHARS]  # the sessions' agent
    try:
        played = run.operate(sessions, label, agent.play, workers, advance)
    finally:
        chat.close()
    envs, outcomes = [env for env, _ in played], [outcome for _, outcome in played]
    return LlmRun(chosen, sessions.run_name, envs, outcomes, chat.totals)
