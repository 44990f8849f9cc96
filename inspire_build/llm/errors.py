"""How an LLM call fails: for one target (an :class:`~inspire_build.errors.LLMError`), or for
every target (:class:`LLMConfigError`); and an answer the backend could not read, which gets a
repair (:class:`Unreadable`)."""

from __future__ import annotations

import pydantic

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
    """The endpoint refused the key, the permission or the model (401, 403, 404), or could not
    be reached: no target can succeed, so the build stops at once. Not an LLMError, which is
    one target's failure."""


class Unreadable(Exception):
    """An answer that is not the schema's JSON, with the tokens its call used."""

    def __init__(self, problem: str, tokens: tuple[int, int]) -> None:
        super().__init__(problem)
        self.problem, self.tokens = problem, tokens


def problem_of(error: ValueError) -> str:
    """What was wrong with an answer, in one line, for the repair prompt."""
    if isinstance(error, pydantic.ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
        )
    return str(error).splitlines()[0]


class ChatTimeout(LLMError):
    """A chat call timed out after the client's retries (an agent's turn: a failure it counts
    as a timeout, apart from the endpoint's other errors)."""
