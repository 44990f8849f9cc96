"""The ``openai`` backend, the only module that imports openai: any OpenAI-compatible endpoint,
through ``chat.completions.parse`` with a strict JSON schema, or a JSON object with the schema
stated in the prompt; and an agent's tool-calling turns (:meth:`OpenAIBackend.send_tools`).
Every call has a timeout; the client retries transient failures; an answer that does not
validate gets one repair retry with the error as feedback; a refusal raises :class:`Refusal`.
An endpoint's error message is redacted (a 401's body may echo the key).
"""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic

from inspire_build.config import Settings
from inspire_build.errors import InspireError, LLMError
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

# json_object mode: what the prompt adds before the answer's JSON schema.
JSON_OBJECT_ASK = "Answer with one JSON object, and nothing else, that matches this JSON schema:"


def api_error() -> type[openai.APIError]:
    """The class of the endpoint's errors, for callers that catch them without importing openai
    (an endpoint call has imported it already)."""
    import openai

    return openai.APIError


def failure(error: openai.APIError, redactor: Redactor, doing: str) -> InspireError:
    """The error to raise for a failed call, its message redacted (a 401 body may echo the key):
    :class:`LLMConfigError` for a refused configuration, else :class:`LLMError`."""
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
    return LLMError(f"{doing} failed: {message}")


def usage_of(raw: Any) -> tuple[int, int]:
    """The tokens a raw response reports (0, 0 when it reports none)."""
    try:
        usage = raw.http_response.json().get("usage") or {}
    except (AttributeError, ValueError):
        return (0, 0)
    return int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))


class OpenAIBackend:
    """Structured answers from the endpoint the settings name, through one client (``client``,
    else made on first use) shared by every thread."""

    def __init__(
        self, settings: Settings, model: str, redactor: Redactor, client: Any = None
    ) -> None:
        self.settings, self.model, self.redactor = settings, model, redactor
        self._client: openai.OpenAI | None = client
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Make the client in a thread of its own (importing openai takes about half a second),
        so that a build's first chat call does not wait for it."""
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

        messages, used = self.messages(text), [0, 0]
        for attempt in range(2):  # the first answer, and one repair
            try:
                completion, parsed = self._parsed(ask(messages, model), model)
            except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as error:
                # OpenAIErrors, not APIErrors: the answer was cut at max_tokens or filtered
                raise InvalidOutput(
                    f"the model stopped early: {error}", (used[0], used[1])
                ) from error
            except openai.APIError as error:
                raise failure(error, self.redactor, "the LLM call") from error
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
                messages += [
                    {"role": "assistant", "content": raw or "(unreadable answer)"},
                    {
                        "role": "user",
                        "content": "Your answer was invalid: "
                        f"{problem}. Answer again, following the schema and every rule.",
                    },
                ]
        raise InvalidOutput(
            f"the answer stayed invalid after a repair retry: {problem}", (used[0], used[1])
        )

    def _parsed(self, raw: Any, model: type[Output]) -> Any:
        """A raw answer read against ``model`` (its message's ``parsed``, else None: empty or
        refused); Unreadable when it is not the model's JSON."""
        import openai

        try:
            completion = raw.parse()  # json_schema: read against the schema already
            if self.settings.llm_response_format == "json_schema":
                return completion, completion.choices[0].message.parsed
            # json_object: stopped early or not the model's JSON fails here, as parse() fails
            for choice in completion.choices:
                if choice.finish_reason == "length":
                    raise openai.LengthFinishReasonError(completion=completion)
                if choice.finish_reason == "content_filter":
                    raise openai.ContentFilterFinishReasonError()
            message = completion.choices[0].message
            readable = message.content and not message.refusal
            return completion, model.model_validate_json(message.content) if readable else None
        except ValueError as error:  # pydantic's ValidationError, or not JSON at all
            raise Unreadable(problem_of(error), usage_of(raw)) from error

    def send(self, messages: list[dict[str, str]], model: type[pydantic.BaseModel]) -> Any:
        """The raw chat call: a strict JSON schema (``json_schema``), or for servers without
        one (``json_object``) a JSON object, with the schema stated at the end of the prompt. A
        429 the client's retries did not outlast raises :class:`RateLimited`."""
        import openai

        completions = self.client().chat.completions.with_raw_response
        options = {"timeout": self.settings.llm_timeout_s, **self.sampling()}
        try:
            if self.settings.llm_response_format == "json_schema":
                return completions.parse(
                    model=self.model,
                    messages=messages,  # type: ignore[arg-type]
                    response_format=model,
                    **options,
                )
            *before, last = messages
            stated = f"{last['content']}\n\n{JSON_OBJECT_ASK}\n{schema_text(model)}"
            return completions.create(  # type: ignore[call-overload]
                model=self.model,
                messages=[*before, {**last, "content": stated}],
                response_format={"type": "json_object"},
                **options,
            )
        except openai.RateLimitError as error:
            raise RateLimited(error.response.headers, error) from error

    def send_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], timeout_s: float | None
    ) -> Any:
        """The raw chat call of an agent's turn: the conversation and the tools it may call, with
        the sampling settings, timing out at the settings' timeout or ``timeout_s`` if sooner
        (the time left to the agent). A 429 the client's retries did not outlast raises
        :class:`RateLimited`."""
        import openai

        completions = self.client().chat.completions.with_raw_response
        limit = self.settings.llm_timeout_s
        try:
            return completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                tools=tools,  # type: ignore[arg-type]
                timeout=min(timeout_s, limit) if timeout_s else limit,
                **self.sampling(),
            )
        except openai.RateLimitError as error:
            raise RateLimited(error.response.headers, error) from error

    def tool_turn(self, ask: Callable[[], Any]) -> tuple[dict[str, Any], str | None]:
        """The assistant message of one turn made by ``ask`` (a :meth:`send_tools` call in its
        turn, paid for), as the endpoint sent it, and why it stopped. A timeout after the
        client's retries raises :class:`ChatTimeout`; another failure, :func:`failure`'s error;
        an answer that is no chat completion, :class:`LLMError`. Messages are redacted."""
        import openai

        try:
            raw = ask()
        except openai.APITimeoutError as error:
            message = self.redactor.text(str(error))
            raise ChatTimeout(f"the agent's LLM call timed out after retries: {message}") from error
        except openai.APIError as error:
            raise failure(error, self.redactor, "the agent's LLM call") from error
        try:
            choice = raw.http_response.json()["choices"][0]
            message, finish = choice["message"], choice.get("finish_reason")
        except (ValueError, LookupError, TypeError, AttributeError) as error:
            raise LLMError("the endpoint's answer is not a chat completion") from error
        if not isinstance(message, dict):
            raise LLMError("the endpoint's answer holds no message")
        return message, finish if isinstance(finish, str) else None

    def messages(self, text: str) -> list[dict[str, str]]:
        """A call's messages: the settings' system prompt, if any, then the rendered prompt."""
        system = self.settings.llm_system_prompt
        first = [{"role": "system", "content": system}] if system else []
        return [*first, {"role": "user", "content": text}]

    def sampling(self) -> dict[str, Any]:
        """The sampling settings a call sends: temperature and seed, only when set."""
        chosen = {"temperature": self.settings.llm_temperature, "seed": self.settings.llm_seed}
        return {name: value for name, value in chosen.items() if value is not None}

    def options(self) -> dict[str, Any]:
        """What besides the prompt shapes the endpoint's answer."""
        system, shape = self.settings.llm_system_prompt, self.settings.llm_response_format
        chosen = {"system": system, "response_format": None if shape == "json_schema" else shape}
        return {**self.sampling(), **{k: v for k, v in chosen.items() if v}}

    def request_body(self, text: str, model: type[pydantic.BaseModel]) -> dict[str, Any]:
        """The chat completion request :meth:`answer` sends, as a Batch API line's body."""
        return {
            "model": self.model,
            "messages": self.messages(text),
            **self.sampling(),
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": model.__name__,
                    "schema": copy.deepcopy(strict_schema(model)),
                    "strict": True,
                },
            },
        }


@functools.cache
def strict_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """openai's own strict schema of ``model``, as chat.completions.parse sends it (a tool's
    parameters): made once per model, not per batch request."""
    import openai

    return dict(openai.pydantic_function_tool(model)["function"]["parameters"])
