"""The ``openai`` backend, the only module that imports openai: any OpenAI-compatible endpoint,
through ``chat.completions.parse`` with a strict JSON schema, or a JSON object with the schema
stated in the prompt (:mod:`shaping`), and an agent's tool-calling turns. Every call has a
timeout and the client's retries; an invalid answer gets one repair retry; a refusal raises
:class:`Refusal`; errors and answers are redacted (a 401's, or a proxy's, may echo the key)."""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic

from inspire_build.config import Settings
from inspire_build.errors import InspireError, LLMError
from inspire_build.llm import shaping
from inspire_build.llm.calls import schema_text
from inspire_build.llm.errors import (
    ChatTimeout,
    InvalidOutput,
    LLMConfigError,
    Refusal,
    Unreadable,
    problem_of,
)
from inspire_build.llm.scheduler import RateLimited
from inspire_build.redaction import Redactor

if TYPE_CHECKING:  # openai takes 1.5 s to import: only a call to the endpoint pays for it
    import openai

    # The client type, for callers that pass one in (tests, proxies) without importing openai.
    OpenAIClient = openai.OpenAI

Output = TypeVar("Output", bound=pydantic.BaseModel)
# One chat call, paid for and in its turn: (messages, the answer's model) -> the raw response.
Ask = Callable[[list[dict[str, str]], type[pydantic.BaseModel]], Any]


def api_error() -> type[openai.APIError]:
    """The class of the endpoint's errors, for callers that do not import openai."""
    import openai

    return openai.APIError


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


class OpenAIBackend:
    """The endpoint the settings name, through one client shared by every thread."""

    def __init__(self, settings: Settings, model: str, redactor: Redactor, client: Any = None):
        self.settings, self.model, self.redactor = settings, model, redactor
        self._client: openai.OpenAI | None = client
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Make the client in a thread of its own (importing openai takes about half a second)."""
        if self._client is None:
            threading.Thread(target=self.client, name="llm-warm-up", daemon=True).start()

    def client(self) -> openai.OpenAI:
        """The OpenAI client, made once, from the settings unless one was passed in."""
        with self._lock:
            if self._client is None:
                import openai

                key = self.settings.llm_api_key
                self._client = openai.OpenAI(
                    api_key=key.get_secret_value() if key else "not-needed",
                    base_url=self.settings.llm_base_url,
                    timeout=self.settings.llm_timeout_s,
                    max_retries=self.settings.llm_max_retries,
                )
            return self._client

    def answer(
        self, text: str, model: type[Output], validate: Callable[[Output], None] | None, ask: Ask
    ) -> tuple[Output, tuple[int, int]]:
        """The answer to ``text`` and the tokens it used, each call made by ``ask``: one repair
        retry when it does not validate; Refusal, InvalidOutput or a redacted error else."""
        import openai

        messages, used = shaping.messages(self.settings, text), [0, 0]
        for attempt in range(2):  # the first answer, and one repair
            try:
                completion, parsed = self._parsed(ask(messages, model), model)
            except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as error:
                # OpenAIErrors, not APIErrors: the answer was cut at max_tokens or filtered
                raise InvalidOutput(
                    f"the model stopped early: {error}", (used[0], used[1])
                ) from error
            except openai.APIError as error:  # not chained: its request and body may hold the key
                raise failure(error, self.redactor, "the LLM call") from None
            except Unreadable as error:
                problem, raw = error.problem, ""
                used = [used[0] + error.tokens[0], used[1] + error.tokens[1]]
            else:
                if completion.usage is not None:
                    used[0] += completion.usage.prompt_tokens
                    used[1] += completion.usage.completion_tokens
                message = completion.choices[0].message
                if message.refusal:
                    raise Refusal(f"the model refused: {message.refusal}", (used[0], used[1]))
                raw = message.content or ""
                if parsed is None:
                    problem = "the answer was empty"
                else:
                    try:
                        if validate is not None:
                            validate(parsed)
                        return parsed, (used[0], used[1])
                    except ValueError as error:
                        problem = str(error)
            if attempt == 0:
                messages += shaping.repair(raw, problem)
        raise InvalidOutput(
            f"the answer stayed invalid after a repair retry: {problem}", (used[0], used[1])
        )

    def _parsed(self, raw: Any, model: type[Output]) -> Any:
        """A raw answer read against ``model`` (its message's ``parsed``, else None: empty or
        refused); Unreadable when it is not the model's JSON."""
        import openai

        try:
            completion, echoed = shaping.completion_of(raw.parse, self.redactor)
            message = completion.choices[0].message
            if self.settings.llm_response_format == "json_schema":  # read against it already
                if echoed:  # parse() read the text before it was redacted
                    return completion, model.model_validate_json(message.content)
                return completion, message.parsed
            # json_object: stopped early or not the model's JSON fails here, as parse() fails
            for choice in completion.choices:
                if choice.finish_reason == "length":
                    raise openai.LengthFinishReasonError(completion=completion)
                if choice.finish_reason == "content_filter":
                    raise openai.ContentFilterFinishReasonError()
            readable = message.content and not message.refusal
            return completion, model.model_validate_json(message.content) if readable else None
        except ValueError as error:  # pydantic's ValidationError, or not JSON at all
            raise Unreadable(problem_of(error), shaping.usage_of(raw)) from error

    def send(self, messages: list[dict[str, str]], model: type[pydantic.BaseModel]) -> Any:
        """The raw chat call: a strict JSON schema (``json_schema``), or for servers without
        one (``json_object``) a JSON object, with the schema stated at the end of the prompt. A
        429 the client's retries did not outlast raises :class:`RateLimited`."""
        import openai

        completions = self.client().chat.completions.with_raw_response
        options = {"timeout": self.settings.llm_timeout_s, **shaping.sampling(self.settings)}
        try:
            if self.settings.llm_response_format == "json_schema":
                return completions.parse(
                    model=self.model,
                    messages=messages,  # type: ignore[arg-type]
                    response_format=model,
                    **options,
                )
            return completions.create(  # type: ignore[call-overload]
                model=self.model,
                messages=shaping.schema_stated(messages, schema_text(model)),
                response_format={"type": "json_object"},
                **options,
            )
        except openai.RateLimitError as error:
            raise RateLimited(error.response.headers, error) from error

    def send_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], timeout_s: float | None
    ) -> Any:
        """The raw chat call of an agent's turn, timing out at the settings' timeout or at
        ``timeout_s`` (the agent's time left) if sooner; :class:`RateLimited` as :meth:`send`."""
        import openai

        completions = self.client().chat.completions.with_raw_response
        limit = self.settings.llm_timeout_s
        try:
            return completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                tools=tools,  # type: ignore[arg-type]
                timeout=min(timeout_s, limit) if timeout_s else limit,
                **shaping.sampling(self.settings),
            )
        except openai.RateLimitError as error:
            raise RateLimited(error.response.headers, error) from error

    def tool_turn(self, ask: Callable[[], Any]) -> tuple[dict[str, Any], str | None]:
        """The assistant message of the turn ``ask`` makes (a :meth:`send_tools` call, paid for)
        and why it stopped: :class:`ChatTimeout` after the client's retries, else
        :func:`failure`'s error, or :class:`LLMError` for no chat completion; all redacted."""
        import openai

        try:
            raw = ask()
        except openai.APITimeoutError as error:
            message = self.redactor.text(str(error))
            raise ChatTimeout(f"the agent's LLM call timed out after retries: {message}") from None
        except openai.APIError as error:
            raise failure(error, self.redactor, "the agent's LLM call") from None
        try:
            said, finish = shaping.chat_message(raw)
        except ValueError as error:
            raise LLMError(str(error)) from error
        return self.redactor.value(said), finish  # a proxy may echo the key

    def request_body(self, text: str, model: type[pydantic.BaseModel]) -> dict[str, Any]:
        """The chat completion request :meth:`answer` sends, as a Batch API line's body."""
        schema = copy.deepcopy(strict_schema(model))
        return shaping.request_body(self.settings, self.model, text, model.__name__, schema)


@functools.cache
def strict_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """openai's own strict schema of ``model``, as chat.completions.parse sends it (a tool's
    parameters): made once per model, not per batch request."""
    import openai

    return dict(openai.pydantic_function_tool(model)["function"]["parameters"])
