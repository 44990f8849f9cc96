"""The sandbox's OpenAI API wired to the world's truth: truthful answers in chat and in batches,
the brief log, rate limits with OpenAI's headers, usage details and max_tokens truncation."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from openai.lib._pydantic import to_strict_json_schema

from inspire_build.briefs import redactions
from inspire_build.models import BriefDraft
from inspire_build.sandbox import server
from inspire_build.sandbox import world as W
from inspire_build.sandbox.llm_truth import Truth, TruthRates
from inspire_build.sandbox.openai_api import REFUSAL, OpenAIConfig, router
from inspire_build.templates import load_prompts

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
        assert client.get("/_sandbox/llm/briefs").json() == [
            {"target": TARGET.key, "work": TARGET.work, "text": brief, "plants": []}
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
