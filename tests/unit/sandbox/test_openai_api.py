"""The sandbox's OpenAI emulator: schema-valid structured output, faults, usage, the Batch API.

The sandbox's OpenAI API wired to the world's truth: truthful answers in chat and in batches,
the brief log, rate limits with OpenAI's headers, usage details and max_tokens truncation."""

from __future__ import annotations

import datetime as dt
import enum
import json
import random
import re
import time
import types
import uuid
from typing import Any, Literal

import httpx
import openai
import pydantic
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from openai.lib._pydantic import to_strict_json_schema

from inspire_build.briefs import redactions
from inspire_build.models import BriefDraft
from inspire_build.sandbox import openai_api, server
from inspire_build.sandbox import world as W
from inspire_build.sandbox.llm_truth import Truth, TruthRates
from inspire_build.sandbox.openai_api import REFUSAL, OpenAIConfig, router
from inspire_build.templates import load_prompts

SYSTEM = {"role": "system", "content": "You are terse."}


class Status(enum.Enum):
    DRAFT = "draft"
    FINAL = "final"


class Reference(pydantic.BaseModel):
    title: str = pydantic.Field(min_length=3, max_length=40)
    year: int = pydantic.Field(ge=1990, le=2026)
    arxiv_id: str | None
    intent: Literal["background", "methodology", "result"]


class Author(pydantic.BaseModel):
    name: str
    orcid: str | None = None


class Brief(pydantic.BaseModel):
    topic: str
    status: Status
    references: list[Reference] = pydantic.Field(min_length=2, max_length=5)
    authors: list[Author] = pydantic.Field(max_length=3)
    relevance: float = pydantic.Field(ge=0, le=1)
    accepted: bool
    verdict: Literal["keep"]
    tags: list[str] = []


class Node(pydantic.BaseModel):
    name: str
    children: list[Node] = []


class Bounds(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    rank: int = pydantic.Field(gt=0, lt=3)
    step: int = pydantic.Field(ge=0, le=100, multiple_of=25)
    share: float = pydantic.Field(gt=0, lt=0.01)
    code: str = pydantic.Field(min_length=12, max_length=12)
    published: dt.date
    fetched: dt.datetime
    key: uuid.UUID
    pair: tuple[int, str]
    counts: dict[str, int]
    labels: set[Literal["a", "b", "c"]] = pydantic.Field(min_length=2)
    note: Status | None = None


class Plain(pydantic.BaseModel):
    """No defaults: the OpenAI SDK turns it into a strict schema."""

    title: str
    references: list[Reference]


def make_client(**overrides: Any) -> TestClient:
    app = FastAPI()
    app.include_router(router(OpenAIConfig(**overrides)), prefix="/v1")
    return TestClient(app)


def chat_body(
    model: type[pydantic.BaseModel] | None = None, prompt: str = "Summarise the paper."
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": [SYSTEM, {"role": "user", "content": prompt}],
    }
    if model is not None:
        schema = {"name": model.__name__, "schema": model.model_json_schema(), "strict": True}
        body["response_format"] = {"type": "json_schema", "json_schema": schema}
    return body


def chat(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    completion: dict[str, Any] = response.json()
    return completion


def content(completion: dict[str, Any]) -> str:
    text: str = completion["choices"][0]["message"]["content"]
    return text


# --- structured output ----------------------------------------------------------------------


@pytest.mark.parametrize("model", [Brief, Node, Bounds, Reference])
@pytest.mark.parametrize("seed", range(8))
def test_structured_output_is_valid_against_the_pydantic_schema(
    model: type[pydantic.BaseModel], seed: int
) -> None:
    client = make_client(seed=seed)
    for prompt in ("first prompt", "second prompt"):
        model.model_validate_json(content(chat(client, chat_body(model, prompt))))


def test_structured_output_respects_bounds_and_lengths() -> None:
    client = make_client(seed=4)
    briefs = [
        Brief.model_validate_json(content(chat(client, chat_body(Brief, f"p{i}"))))
        for i in range(20)
    ]
    assert {len(b.references) for b in briefs} <= {2, 3, 4, 5}
    assert all(1990 <= r.year <= 2026 for b in briefs for r in b.references)
    assert {b.verdict for b in briefs} == {"keep"}
    assert {b.status for b in briefs} == {Status.DRAFT, Status.FINAL}  # enums vary
    # Optional fields are sometimes null, sometimes filled.
    assert {r.arxiv_id is None for b in briefs for r in b.references} == {True, False}
    bounds = [
        Bounds.model_validate_json(content(chat(client, chat_body(Bounds, f"p{i}"))))
        for i in range(20)
    ]
    assert {b.rank for b in bounds} == {1, 2}
    assert {b.step for b in bounds} <= {0, 25, 50, 75, 100}
    assert all(len(b.code) == 12 for b in bounds)


def test_strings_are_short_readable_words() -> None:
    brief = json.loads(content(chat(make_client(), chat_body(Brief))))
    words = brief["topic"].split(" ")
    assert 1 <= len(words) <= 3
    assert all(word.isalpha() and word.islower() and len(word) <= 9 for word in words)


def test_free_text_without_response_format() -> None:
    text = content(chat(make_client(), chat_body()))
    assert text.endswith(".") and text[0].isupper()
    assert 8 <= len(text.split()) <= 16


def test_json_object_format_gives_a_json_object() -> None:
    body = chat_body() | {"response_format": {"type": "json_object"}}
    assert isinstance(json.loads(content(chat(make_client(), body))), dict)


# --- determinism ----------------------------------------------------------------------------


def test_same_request_and_seed_give_the_same_content() -> None:
    first, second = make_client(seed=7), make_client(seed=7)
    one = chat(first, chat_body(Brief))
    assert content(chat(first, chat_body(Brief))) == content(one)  # repeat on the same server
    two = chat(second, chat_body(Brief))
    assert two == one  # a fresh server replays ids and timestamps too


def test_a_different_seed_or_prompt_gives_different_content() -> None:
    base = content(chat(make_client(seed=1), chat_body(Brief)))
    assert content(chat(make_client(seed=2), chat_body(Brief))) != base
    assert content(chat(make_client(seed=1), chat_body(Brief, "other prompt"))) != base


# --- response shape and usage ---------------------------------------------------------------


def test_chat_completion_has_the_openai_shape_and_says_sandbox() -> None:
    completion = chat(make_client(), chat_body(Brief))
    assert completion["object"] == "chat.completion"
    assert completion["id"].startswith("chatcmpl-")
    assert completion["model"] == "sandbox-gpt-4o"
    assert completion["system_fingerprint"] == "inspire-sandbox"
    (choice,) = completion["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["logprobs"] is None
    assert choice["message"]["role"] == "assistant" and choice["message"]["refusal"] is None


def test_a_sandbox_model_name_is_echoed_unchanged() -> None:
    body = chat_body() | {"model": "sandbox-small"}
    assert chat(make_client(), body)["model"] == "sandbox-small"


def test_usage_counts_words_times_tokens_per_word() -> None:
    # "You are terse." + "Summarise the paper." is 6 words: ceil(6 * 1.3) = 8, 6 * 2.0 = 12.
    usage = chat(make_client(), chat_body(Brief))["usage"]
    assert usage["prompt_tokens"] == 8
    assert usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert chat(make_client(tokens_per_word=2.0), chat_body())["usage"]["prompt_tokens"] == 12
    # Rounded up: 6 words at 1.05 is 6.3, so 7; 10 words at 1.3 is 13 despite float error.
    assert chat(make_client(tokens_per_word=1.05), chat_body())["usage"]["prompt_tokens"] == 7
    ten_words = chat_body(prompt="one two three four five six seven")
    assert chat(make_client(), ten_words)["usage"]["prompt_tokens"] == 13


def test_text_parts_count_as_prompt_words() -> None:
    parts = [{"type": "text", "text": "one two three"}, {"type": "text", "text": "four"}]
    body = {"model": "m", "messages": [{"role": "user", "content": parts}]}
    assert chat(make_client(tokens_per_word=1.0), body)["usage"]["prompt_tokens"] == 4


def test_models_list_only_sandbox_models() -> None:
    listing = make_client().get("/v1/models").json()
    assert listing["object"] == "list"
    assert [m["id"] for m in listing["data"]] == ["sandbox-gpt", "sandbox-small"]
    assert {m["owned_by"] for m in listing["data"]} == {"inspire-sandbox"}
    assert all(m["object"] == "model" and isinstance(m["created"], int) for m in listing["data"])


# --- faults ---------------------------------------------------------------------------------


def test_invalid_json_fault_truncates_the_valid_content() -> None:
    clean = content(chat(make_client(seed=3), chat_body(Brief)))
    broken = content(
        chat(make_client(seed=3, fault="invalid_json", fault_rate=1.0), chat_body(Brief))
    )
    assert broken == clean[: len(clean) // 2]
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)


def test_invalid_json_fault_spoils_a_scalar_that_would_still_parse() -> None:
    schema = {"type": "integer", "minimum": 1000, "maximum": 9999}
    body = chat_body() | {
        "response_format": {"type": "json_schema", "json_schema": {"schema": schema}}
    }
    broken = content(chat(make_client(fault="invalid_json", fault_rate=1.0), body))
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)


def test_refusal_fault() -> None:
    completion = chat(make_client(fault="refusal", fault_rate=1.0), chat_body(Brief))
    (choice,) = completion["choices"]
    assert choice["message"]["content"] is None
    assert choice["message"]["refusal"] == REFUSAL == "I can't help with that. (sandbox refusal)"
    assert choice["finish_reason"] == "stop"


def test_drop_item_fault_removes_one_element_from_the_first_array() -> None:
    clean = json.loads(content(chat(make_client(seed=5), chat_body(Brief))))
    client = make_client(seed=5, fault="drop_item", fault_rate=1.0)
    dropped = json.loads(content(chat(client, chat_body(Brief))))
    assert dropped["references"] == clean["references"][:-1]
    assert {k: v for k, v in dropped.items() if k != "references"} == {
        k: v for k, v in clean.items() if k != "references"
    }


def test_timeout_fault_sleeps_before_answering() -> None:
    client = make_client(fault="timeout", fault_rate=1.0, timeout_s=0.2)
    started = time.monotonic()
    completion = chat(client, chat_body(Brief))
    assert time.monotonic() - started >= 0.2
    Brief.model_validate_json(content(completion))  # then it answers normally


def test_latency_is_added_to_every_completion() -> None:
    client = make_client(latency_s=0.1)
    started = time.monotonic()
    chat(client, chat_body())
    assert time.monotonic() - started >= 0.1


def test_the_answer_is_made_first_and_sent_the_latency_after_the_request_came(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The emulated model's latency is latency_s, this machine's time to answer included: the
    endpoint waits only what is left of it, and a schema it cannot answer waits as long."""
    now, waits = [100.0], []
    made = openai_api._completion

    def slow_completion(*args: Any) -> Any:
        now[0] += 0.3  # making the answer takes 0.3 s of the 1 s
        return made(*args)

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(openai_api, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(openai_api, "_completion", slow_completion)
    monkeypatch.setattr(openai_api, "asyncio", types.SimpleNamespace(sleep=sleep))
    client = make_client(latency_s=1.0)
    Brief.model_validate_json(content(chat(client, chat_body(Brief))))
    assert waits == [pytest.approx(0.7)]
    body = chat_body(Brief)
    body["response_format"]["json_schema"]["schema"] = {
        "type": "object",
        "properties": {"x": {"type": "frob"}},
    }
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 400 and waits[1:] == [pytest.approx(0.7)]


def test_faults_follow_the_seeded_request_count() -> None:
    client = make_client(seed=3, fault="refusal", fault_rate=0.5)
    expected = [random.Random(f"3:{n}").random() < 0.5 for n in range(12)]
    assert True in expected and False in expected  # the check below can tell them apart
    refused = [
        chat(client, chat_body(Brief))["choices"][0]["message"]["refusal"] is not None
        for _ in range(12)
    ]
    assert refused == expected


def test_config_refuses_unknown_faults_and_rates() -> None:
    with pytest.raises(ValueError, match="invalid_json, refusal, drop_item, timeout"):
        OpenAIConfig(fault="slow")
    with pytest.raises(ValueError, match="fault_rate"):
        OpenAIConfig(fault_rate=1.5)


# --- errors ---------------------------------------------------------------------------------


def error(message: str, param: str | None) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": None,
        }
    }


def test_malformed_chat_requests_get_openai_400s() -> None:
    client = make_client()
    response = client.post("/v1/chat/completions", json={"model": "m"})
    assert response.status_code == 400
    assert response.json() == error("'messages' must be a non-empty array.", "messages")
    response = client.post("/v1/chat/completions", content=b"{not json")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    bad_format = chat_body() | {"response_format": {"type": "json_schema"}}
    response = client.post("/v1/chat/completions", json=bad_format)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "response_format"


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("GET", "/v1/files/file-nope", "File"),
        ("GET", "/v1/files/file-nope/content", "File"),
        ("GET", "/v1/batches/batch_nope", "Batch"),
        ("POST", "/v1/batches/batch_nope/cancel", "Batch"),
    ],
)
def test_unknown_ids_get_openai_404s(method: str, path: str, kind: str) -> None:
    response = make_client().request(method, path)
    assert response.status_code == 404
    ident = path.split("/")[3]
    param = "file_id" if kind == "File" else "batch_id"
    assert response.json() == error(f"No such {kind} object: {ident}", param)


# --- files and batches ----------------------------------------------------------------------


def batch_line(custom_id: str, body: dict[str, Any]) -> str:
    line = {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}
    return json.dumps(line)


def batch_input() -> bytes:
    lines = [
        batch_line("a", chat_body(Brief, "first")),
        batch_line("b", chat_body(None, "second")),
        batch_line("bad", {"model": "gpt-4o"}),  # no messages
    ]
    return ("\n".join(lines) + "\n").encode()


def upload(client: TestClient, payload: bytes, purpose: str = "batch") -> dict[str, Any]:
    files = {"file": ("requests.jsonl", payload, "application/jsonl")}
    response = client.post("/v1/files", files=files, data={"purpose": purpose})
    assert response.status_code == 200, response.text
    uploaded: dict[str, Any] = response.json()
    return uploaded


def create_batch(client: TestClient, file_id: str, **extra: Any) -> dict[str, Any]:
    body = {
        "input_file_id": file_id,
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
    }
    response = client.post("/v1/batches", json=body | extra)
    assert response.status_code == 200, response.text
    batch: dict[str, Any] = response.json()
    return batch


def jsonl(client: TestClient, file_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/files/{file_id}/content")
    assert response.status_code == 200
    return [json.loads(line) for line in response.text.splitlines()]


def test_file_upload_and_retrieval() -> None:
    client, payload = make_client(), batch_input()
    uploaded = upload(client, payload)
    assert uploaded["id"].startswith("file-")
    assert (uploaded["object"], uploaded["bytes"]) == ("file", len(payload))
    assert (uploaded["filename"], uploaded["purpose"]) == ("requests.jsonl", "batch")
    assert client.get(f"/v1/files/{uploaded['id']}").json() == uploaded
    assert client.get(f"/v1/files/{uploaded['id']}/content").content == payload


def test_upload_refuses_other_purposes_and_missing_files() -> None:
    client = make_client()
    files = {"file": ("x.jsonl", b"{}", "application/jsonl")}
    response = client.post("/v1/files", files=files, data={"purpose": "fine-tune"})
    assert (response.status_code, response.json()["error"]["param"]) == (400, "purpose")
    response = client.post("/v1/files", data={"purpose": "batch"})
    assert response.status_code == 400


def test_batch_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    # The endpoint's clock is the test's: with the real one, a loaded machine could take the
    # 0.2 s between creating the batch and asking for it, which then says "completed".
    now = [100.0]
    monkeypatch.setattr(openai_api, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    client = make_client(seed=9, batch_delay_s=0.2)
    uploaded = upload(client, batch_input())
    batch = create_batch(client, uploaded["id"], metadata={"run": "t1"})
    assert batch["id"].startswith("batch_") and batch["object"] == "batch"
    assert batch["status"] == "validating"
    assert batch["metadata"] == {"run": "t1", "sandbox": "true"}
    assert batch["request_counts"] == {"total": 3, "completed": 0, "failed": 0}
    assert batch["input_file_id"] == uploaded["id"]
    assert batch["output_file_id"] is None and batch["error_file_id"] is None

    early = client.get(f"/v1/batches/{batch['id']}").json()
    assert early["status"] == "in_progress"
    assert early["output_file_id"] is None and early["completed_at"] is None

    now[0] += 0.19
    assert client.get(f"/v1/batches/{batch['id']}").json()["status"] == "in_progress"
    now[0] += 0.01
    done = client.get(f"/v1/batches/{batch['id']}").json()
    assert done["status"] == "completed"
    assert done["request_counts"] == {"total": 3, "completed": 2, "failed": 1}
    assert done["completed_at"] is not None

    outputs = jsonl(client, done["output_file_id"])
    assert [line["custom_id"] for line in outputs] == ["a", "b"]
    assert {line["response"]["status_code"] for line in outputs} == {200}
    assert all(line["error"] is None for line in outputs)
    first = outputs[0]["response"]["body"]
    assert (first["object"], first["system_fingerprint"]) == ("chat.completion", "inspire-sandbox")
    Brief.model_validate_json(content(first))
    # A batch answers exactly what the live endpoint answers for the same request.
    assert content(first) == content(chat(client, chat_body(Brief, "first")))

    (failed,) = jsonl(client, done["error_file_id"])
    assert failed["custom_id"] == "bad"
    assert failed["response"]["status_code"] == 400
    assert failed["response"]["body"]["error"]["param"] == "messages"


def test_batches_replay_byte_for_byte_with_the_same_seed() -> None:
    def run() -> tuple[str, bytes]:
        client = make_client(seed=2, batch_delay_s=0.0)
        batch = create_batch(client, upload(client, batch_input())["id"])
        done = client.get(f"/v1/batches/{batch['id']}").json()
        return batch["id"], client.get(f"/v1/files/{done['output_file_id']}/content").content

    assert run() == run()


def test_cancel_then_cancelled_and_a_completed_batch_cannot_be_cancelled() -> None:
    client = make_client(batch_delay_s=60.0)
    batch = create_batch(client, upload(client, batch_input())["id"])
    cancelling = client.post(f"/v1/batches/{batch['id']}/cancel").json()
    assert cancelling["status"] == "cancelling"
    cancelled = client.get(f"/v1/batches/{batch['id']}").json()
    assert cancelled["status"] == "cancelled" and cancelled["cancelled_at"] is not None
    assert cancelled["output_file_id"] is None

    quick = make_client(batch_delay_s=0.0)
    done = create_batch(quick, upload(quick, batch_input())["id"])
    response = quick.post(f"/v1/batches/{done['id']}/cancel")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Cannot cancel a batch with status 'completed'."


def test_a_malformed_input_line_fails_the_whole_batch() -> None:
    client = make_client()
    payload = (batch_line("a", chat_body()) + "\nnot json\n\nnull\n").encode()
    batch = create_batch(client, upload(client, payload)["id"])
    assert batch["status"] == "failed" and batch["failed_at"] is not None
    assert [problem["line"] for problem in batch["errors"]["data"]] == [2, 4]


def test_batch_creation_checks_its_parameters() -> None:
    client = make_client()
    file_id = upload(client, batch_input())["id"]
    body = {"input_file_id": file_id, "endpoint": "/v1/embeddings", "completion_window": "24h"}
    response = client.post("/v1/batches", json=body)
    assert (response.status_code, response.json()["error"]["param"]) == (400, "endpoint")
    body = {"input_file_id": "file-nope", "endpoint": "/v1/chat/completions"}
    response = client.post("/v1/batches", json=body | {"completion_window": "24h"})
    assert response.status_code == 404


# --- the OpenAI SDK against the sandbox -----------------------------------------------------


def test_the_openai_sdk_parses_every_object() -> None:
    sdk = openai.OpenAI(
        base_url="http://testserver/v1",
        api_key="sandbox",
        http_client=make_client(batch_delay_s=0.0),
        max_retries=0,
    )
    assert [m.id for m in sdk.models.list()] == ["sandbox-gpt", "sandbox-small"]
    parsed = sdk.chat.completions.parse(
        model="sandbox-gpt", messages=[{"role": "user", "content": "hi"}], response_format=Plain
    )
    assert isinstance(parsed.choices[0].message.parsed, Plain)
    uploaded = sdk.files.create(file=("in.jsonl", batch_input()), purpose="batch")
    batch = sdk.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    done = sdk.batches.retrieve(batch.id)
    assert done.status == "completed" and done.output_file_id is not None
    assert len(sdk.files.content(done.output_file_id).text.splitlines()) == 2
    with pytest.raises(openai.NotFoundError):
        sdk.batches.retrieve("batch_nope")


# --- wired to the world's truth -----------------------------------------------------------------


WORLD = W.generate(W.WorldConfig(seed=5, papers=80))
TARGET = next(r for r in reversed(WORLD.records) if len(r.references) >= 10)
NONE = TruthRates(**dict.fromkeys(TruthRates.names(), 0.0))


def brief_body(**extra: Any) -> dict[str, Any]:
    cited = [WORLD.by_key()[c.cites].title for c in TARGET.references]
    context = {
        "title": TARGET.title,
        "abstract": TARGET.abstract,
        "redactions": redactions(TARGET.title, TARGET.abstract, cited),
        "feedback": [],
    }
    text = load_prompts()["brief"].render(context)
    schema = {"name": "BriefDraft", "schema": to_strict_json_schema(BriefDraft), "strict": True}
    return {
        "model": "sandbox-gpt",
        "messages": [{"role": "user", "content": text}],
        "response_format": {"type": "json_schema", "json_schema": schema},
        **extra,
    }


def text_body(words: int, **extra: Any) -> dict[str, Any]:
    prompt = " ".join(f"w{i}" for i in range(words))
    return {"model": "sandbox-gpt", "messages": [{"role": "user", "content": prompt}], **extra}


def test_truthful_chat_over_http_with_limits_usage_and_truncation() -> None:
    config = server.SandboxConfig(openai=OpenAIConfig(rpm=4, truth=NONE))
    with server.running(WORLD, config) as base, httpx.Client(base_url=base) as client:
        first = client.post("/v1/chat/completions", json=brief_body())
        assert first.status_code == 200
        assert first.headers["x-ratelimit-limit-requests"] == "4"
        assert first.headers["x-ratelimit-remaining-requests"] == "3"
        assert re.fullmatch(r"\d+(ms|(\.\d+)?s|m\d+s)", first.headers["x-ratelimit-reset-requests"])
        answer = first.json()
        usage = answer["usage"]
        assert usage["prompt_tokens_details"]["cached_tokens"] == 0
        assert usage["completion_tokens_details"]["reasoning_tokens"] == 0
        brief = BriefDraft.model_validate_json(answer["choices"][0]["message"]["content"]).brief
        prompt = brief_body()["messages"][0]["content"]
        assert client.get("/_sandbox/llm/briefs").json() == [
            {
                "target": TARGET.key,
                "work": TARGET.work,
                "text": brief,
                "plants": [],
                "prompt": prompt,
            }
        ]

        assert client.post("/v1/chat/completions", json=text_body(1200)).status_code == 200
        cut = client.post("/v1/chat/completions", json=text_body(1200, max_tokens=3)).json()
        (choice,) = cut["choices"]
        assert choice["finish_reason"] == "length"
        assert len(re.findall(r"\w+", choice["message"]["content"])) == 2  # ceil(2 * 1.3) = 3
        assert cut["usage"]["completion_tokens"] == 3
        # The same 1,560-token prompt again: its prefix is cached, in steps of 128 from 1,024.
        assert cut["usage"]["prompt_tokens_details"]["cached_tokens"] == 1024 + 4 * 128

        assert client.post("/v1/chat/completions", json=text_body(5)).status_code == 200
        limited = client.post("/v1/chat/completions", json=text_body(5))
        assert limited.status_code == 429
        assert limited.headers["x-ratelimit-remaining-requests"] == "0"
        assert 1 <= int(limited.headers["retry-after"]) <= 60
        error = limited.json()["error"]
        assert (error["code"], error["type"]) == ("rate_limit_exceeded", "requests")
        assert client.get("/_sandbox/stats").json()["counts"]["openai chat 429"] == 1


def test_the_token_limit_counts_prompt_and_max_tokens() -> None:
    app = FastAPI()
    app.include_router(router(OpenAIConfig(tpm=60)), prefix="/v1")
    client = TestClient(app)
    ok = client.post("/v1/chat/completions", json=text_body(10, max_tokens=40))  # 13 + 40
    assert ok.status_code == 200 and ok.headers["x-ratelimit-remaining-tokens"] == "7"
    assert "x-ratelimit-limit-requests" not in ok.headers  # no request limit was set
    limited = client.post("/v1/chat/completions", json=text_body(10))
    assert limited.status_code == 429 and limited.json()["error"]["type"] == "tokens"
    bad = client.post("/v1/chat/completions", json=text_body(3, max_completion_tokens=0))
    assert (bad.status_code, bad.json()["error"]["param"]) == (400, "max_completion_tokens")


def test_reasoning_tokens_are_reported_inside_completion_tokens() -> None:
    app = FastAPI()
    app.include_router(router(OpenAIConfig(reasoning_ratio=1.0)), prefix="/v1")
    usage = TestClient(app).post("/v1/chat/completions", json=text_body(3)).json()["usage"]
    reasoning = usage["completion_tokens_details"]["reasoning_tokens"]
    assert reasoning > 0 and usage["completion_tokens"] == 2 * reasoning


def truthful_client(**overrides: Any) -> TestClient:
    app = FastAPI()
    config = OpenAIConfig(**{"truth": NONE, **overrides})
    app.include_router(router(config, Truth(WORLD, config.truth)), prefix="/v1")
    return TestClient(app)


def test_a_batch_answers_with_the_same_truthful_brief_as_chat() -> None:
    client = truthful_client(batch_delay_s=0.0)
    line = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": brief_body()}
    files = {"file": ("in.jsonl", json.dumps(line).encode(), "application/jsonl")}
    uploaded = client.post("/v1/files", files=files, data={"purpose": "batch"}).json()
    body = {"input_file_id": uploaded["id"], "endpoint": "/v1/chat/completions"}
    batch = client.post("/v1/batches", json={**body, "completion_window": "24h"}).json()
    done = client.get(f"/v1/batches/{batch['id']}").json()
    output = client.get(f"/v1/files/{done['output_file_id']}/content").content
    answered = json.loads(output)["response"]["body"]["choices"][0]["message"]["content"]
    chatted = client.post("/v1/chat/completions", json=brief_body()).json()
    assert answered == chatted["choices"][0]["message"]["content"]
    assert "Problem:" in json.loads(answered)["brief"]


def test_hostile_triggers_still_fault_a_truthful_answer() -> None:
    client = truthful_client(triggers=((TARGET.abstract, "refusal"),))
    message = client.post("/v1/chat/completions", json=brief_body()).json()["choices"][0]
    assert message["message"]["refusal"] == REFUSAL and message["message"]["content"] is None


def test_a_planted_refusal_or_invalid_json_reaches_the_client() -> None:
    refused = truthful_client(truth=TruthRates(refusal=1.0))
    message = refused.post("/v1/chat/completions", json=brief_body()).json()["choices"][0]
    assert message["message"]["refusal"] == REFUSAL
    broken = truthful_client(truth=TruthRates(refusal=0.0, invalid_json=1.0))
    content = broken.post("/v1/chat/completions", json=brief_body()).json()["choices"][0]
    with pytest.raises(json.JSONDecodeError):
        json.loads(content["message"]["content"])
