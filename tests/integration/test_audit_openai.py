"""The blind mechanism audit with the openai backend, over real HTTP, against the sandbox's
truthful endpoint: the recorded first request carries the brief and never the abstract."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai

from inspire_build import audit_checks, warehouse
from inspire_build.config import Settings
from inspire_build.gold import make_llm
from inspire_build.llm_rules import sentences
from inspire_build.sandbox import server, world
from inspire_build.sandbox.llm_truth import TruthRates
from inspire_build.sandbox.openai_api import OpenAIConfig

WORLD = world.generate(world.WorldConfig(seed=3, papers=40))
TARGET = next(r for r in WORLD.records if r.method_name and len(r.mechanism) == 3)
CALM = TruthRates(**dict.fromkeys(TruthRates.names(), 0.0))  # no fault: two calls per audit


def test_the_first_call_sees_the_brief_alone_and_the_second_grades_the_guess() -> None:
    sent: list[dict[str, Any]] = []

    def capture(request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            sent.append(json.loads(request.content))

    config = server.SandboxConfig(openai=OpenAIConfig(truth=CALM))
    with server.running(WORLD, config) as base:
        settings = Settings(
            llm_backend="openai",
            llm_base_url=base + "/v1",
            llm_model="sandbox-gpt",
            llm_max_retries=0,
        )
        http_client = httpx.Client(event_hooks={"request": [capture]})
        client = openai.OpenAI(api_key="sk-test", base_url=base + "/v1", http_client=http_client)
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        llm = make_llm(settings, con, client=client)
        *first, last = TARGET.mechanism
        leaky = f"A solution would likely rely on {', '.join(first)} and {last}."
        leaked = audit_checks.mechanism(llm, "leaky", leaky, TARGET.abstract)
        clean = audit_checks.mechanism(
            llm, "clean", "Long documents are hard to search.", TARGET.abstract
        )
        con.close()

    prompts = [body["messages"][0]["content"] for body in sent]
    assert len(prompts) == 4  # a guess and a comparison per audit
    guess, compare = prompts[0], prompts[1]
    assert guess.startswith("You are auditing a research brief for leakage of its solution")
    assert leaky in guess
    assert all(sentence not in guess for sentence in sentences(TARGET.abstract))
    assert TARGET.method_name not in guess and TARGET.acronym not in guess
    assert sent[0]["response_format"]["json_schema"]["name"] == "MechanismGuess"
    assert TARGET.abstract in compare and leaky not in compare  # the guess, not the brief
    assert not leaked.passed and leaked.level.value == "full"
    assert ", ".join(TARGET.mechanism) in leaked.detail  # the guess is recorded
    assert clean.passed and clean.level.value == "none"
