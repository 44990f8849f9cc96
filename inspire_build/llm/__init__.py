"""The LLM client, in three parts behind one class, :class:`LLM`:

- the backend: ``backend.py`` (the only module that imports openai: any OpenAI-compatible
  endpoint) or the offline, deterministic rules (``inspire_build/llm_rules.py``);
- the call log: ``calls.py`` (keys, the log as a cache, a target's journal, one call per key in
  flight);
- the scheduler: ``scheduler.py`` (the provider's limits, paced by ``pacing.Pacer``; the slots
  of calls in flight and their urgency; a target's calls at once).

``client.py`` holds :class:`LLM`, which joins them and counts each call against the build's
budget (``inspire_build/llm_budget.py``); ``errors.py`` how a call fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspire_build.errors import LLMError
from inspire_build.llm.backend import api_error, failure
from inspire_build.llm.calls import Journal, Use, call_key, schema_text, uses_of
from inspire_build.llm.client import LLM
from inspire_build.llm.errors import Deferred, InvalidOutput, LLMConfigError, Refusal
from inspire_build.llm.scheduler import InFlight, Later
from inspire_build.pacing import Pacer

if TYPE_CHECKING:
    from inspire_build.llm.backend import OpenAIClient as OpenAIClient

__all__ = [
    "LLM",
    "Deferred",
    "InFlight",
    "InvalidOutput",
    "Journal",
    "LLMConfigError",
    "LLMError",
    "Later",
    "Pacer",
    "Refusal",
    "Use",
    "api_error",
    "call_key",
    "failure",
    "schema_text",
    "uses_of",
]
