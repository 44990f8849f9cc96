"""How an LLM call fails: for one target (an :class:`~inspire_build.errors.LLMError`), or for
every target (:class:`LLMConfigError`)."""

from __future__ import annotations

from inspire_build.errors import InspireError, LLMError


class Refusal(LLMError):
    """The model refused to answer. ``tokens``: what the refused call (and any repair) used."""

    def __init__(self, message: str, tokens: tuple[int, int] = (0, 0)) -> None:
        super().__init__(message)
        self.tokens = tokens


class InvalidOutput(LLMError):
    """The answer did not validate, even after the repair retry. ``tokens``: what both used."""

    def __init__(self, message: str, tokens: tuple[int, int] = (0, 0)) -> None:
        super().__init__(message)
        self.tokens = tokens


class Deferred(LLMError):
    """Batch mode: the answer is not in the log yet; the request waits for the next batch."""


class LLMConfigError(InspireError):
    """The endpoint refused the key, the permission or the model (401, 403, 404): no target can
    succeed, so the build stops at once. Not an LLMError, which is one target's failure."""
