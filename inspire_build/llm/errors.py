"""How an LLM call fails: for one target (an :class:`~inspire_build.errors.LLMError`), or for
every target (:class:`LLMConfigError`); and an answer the backend could not read, which gets a
repair (:class:`Unreadable`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pydantic

from inspire_build.errors import InspireError, LLMError

if TYPE_CHECKING:  # openai is imported by the call that fails, not here
    import openai

    from inspire_build.redaction import Redactor


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


def failure(error: openai.APIError, redactor: Redactor, doing: str) -> InspireError:
    """The error to raise for a failed call, its message redacted (a 401 body may echo the key):
    :class:`LLMConfigError` for a refused configuration or an endpoint not reached, else
    :class:`LLMError`."""
    import openai

    message = redactor.text(str(error))
    # A configuration the endpoint refuses: every later call would fail the same way.
    fatal = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)
    if isinstance(error, fatal):
        return LLMConfigError(
            f"the LLM endpoint refused {doing} (HTTP {error.status_code}): {message}; check "
            "INSPIRE_LLM_API_KEY, INSPIRE_LLM_MODEL and INSPIRE_LLM_BASE_URL"
        )
    if isinstance(error, openai.APITimeoutError):
        return LLMError(f"{doing} timed out after retries: {message}")
    if isinstance(error, openai.APIConnectionError):  # no endpoint: every call would fail
        return LLMConfigError(
            f"{doing} reached no LLM endpoint after retries ({message}); check "
            "INSPIRE_LLM_BASE_URL and the network"
        )
    return LLMError(f"{doing} failed: {message}")
