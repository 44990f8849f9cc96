"""What a chat call sends besides its prompt, and what its answer reports: the messages around
the prompt, the sampling settings, the options that shape an answer, the tokens used, the shape
of a completion. Pure: the backend (``backend.py``) and the call log key their calls with the
same values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspire_build.config import Settings
from inspire_build.errors import LLMError
from inspire_build.redaction import Redactor

# json_object mode: what the prompt adds before the answer's JSON schema.
JSON_OBJECT_ASK = "Answer with one JSON object, and nothing else, that matches this JSON schema:"


def messages(settings: Settings, text: str) -> list[dict[str, str]]:
    """A call's messages: the settings' system prompt, if any, then the rendered prompt."""
    system = settings.llm_system_prompt
    first = [{"role": "system", "content": system}] if system else []
    return [*first, {"role": "user", "content": text}]


def schema_stated(messages: list[dict[str, str]], schema: str) -> list[dict[str, str]]:
    """``messages`` for an endpoint without strict schemas (``json_object``): the answer's
    JSON ``schema`` stated at the end of the prompt."""
    *before, last = messages
    return [*before, {**last, "content": f"{last['content']}\n\n{JSON_OBJECT_ASK}\n{schema}"}]


def repair(answer: str, problem: str) -> list[dict[str, str]]:
    """The messages that ask once more after an invalid ``answer``, saying its ``problem``."""
    return [
        {"role": "assistant", "content": answer or "(unreadable answer)"},
        {
            "role": "user",
            "content": f"Your answer was invalid: {problem}. Answer again, following the schema "
            "and every rule.",
        },
    ]


def sampling(settings: Settings) -> dict[str, Any]:
    """The sampling settings a call sends: temperature and seed, only when set."""
    chosen = {"temperature": settings.llm_temperature, "seed": settings.llm_seed}
    return {name: value for name, value in chosen.items() if value is not None}


def options(settings: Settings) -> dict[str, Any]:
    """What besides the prompt shapes the endpoint's answer."""
    system, shape = settings.llm_system_prompt, settings.llm_response_format
    chosen = {"system": system, "response_format": None if shape == "json_schema" else shape}
    return {**sampling(settings), **{k: v for k, v in chosen.items() if v}}


def usage_of(raw: Any) -> tuple[int, int]:
    """The tokens a raw response reports (0, 0 when it reports none)."""
    try:
        usage = raw.http_response.json().get("usage") or {}
    except (AttributeError, ValueError):
        return (0, 0)
    return int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))


def completion_of(parse: Callable[[], Any], redactor: Redactor) -> tuple[Any, bool]:
    """The completion ``parse`` reads, each choice's text redacted, and whether the text held a
    secret (an endpoint that echoes the key: nothing of it is kept or stored). LLMError when
    the answer is no chat completion (no choices): a body of another shape is no model output
    to repair. A ValueError of ``parse`` (an answer against the schema) passes on."""
    try:
        completion = parse()
        choices = list(completion.choices)
    except (TypeError, AttributeError) as error:
        raise LLMError("the endpoint's answer is not a chat completion") from error
    if not choices:
        raise LLMError("the endpoint's answer holds no choice")
    echoed = False
    for choice in choices:
        said = choice.message.content
        if said and (clean := redactor.text(said)) != said:
            choice.message.content, echoed = clean, True
    return completion, echoed


def chat_message(raw: Any) -> tuple[dict[str, Any], str | None]:
    """The assistant message of a raw chat completion as the endpoint sent it, and why it
    stopped; ValueError when the answer is no chat completion."""
    try:
        choice = raw.http_response.json()["choices"][0]
        message, finish = choice["message"], choice.get("finish_reason")
    except (ValueError, LookupError, TypeError, AttributeError) as error:
        raise ValueError("the endpoint's answer is not a chat completion") from error
    if not isinstance(message, dict):
        raise ValueError("the endpoint's answer holds no message")
    return message, finish if isinstance(finish, str) else None


def request_body(
    settings: Settings, model: str, text: str, name: str, schema: dict[str, Any]
) -> dict[str, Any]:
    """A chat completion request for a strict JSON ``schema`` named ``name``: what the backend
    sends, as a Batch API line's body."""
    return {
        "model": model,
        "messages": messages(settings, text),
        **sampling(settings),
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        },
    }
