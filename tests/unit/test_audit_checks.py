"""audit_checks.py: the four checks of a brief, the identity and mechanism calls asked at once."""

from __future__ import annotations

import datetime as dt
import json
import threading
import types
from typing import Any

import duckdb

from inspire_build import audit_checks, warehouse
from inspire_build.config import Settings
from inspire_build.llm import LLM
from inspire_build.models import AuditCheck
from inspire_build.tables import search
from tests.in_flight import InFlight

ANSWERS = {
    "IdentityGuess": {"title": "Some other paper"},
    "MechanismGuess": {"mechanism": "a cache of shards"},
    "MechanismOverlap": {"overlap": "none", "rationale": "unrelated"},
}


class SlowOpenAI:
    """Answers each schema with its fixed answer, counting calls in flight (:class:`InFlight`:
    the first wait for ``together``, then each takes ``delay``)."""

    def __init__(self, delay: float, together: int = 1) -> None:
        self.flight, self.lock = InFlight(together, stay=delay), threading.Lock()
        self.asked: list[str] = []
        raw = types.SimpleNamespace(parse=self.raw_parse)
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(with_raw_response=raw))

    @property
    def most(self) -> int:
        return self.flight.most

    def raw_parse(self, **request: Any) -> Any:
        model = request["response_format"]
        with self.flight.inside(), self.lock:
            self.asked.append(model.__name__)
        value = ANSWERS[model.__name__]
        message = types.SimpleNamespace(
            refusal=None, content=json.dumps(value), parsed=model.model_validate(value)
        )
        completion = types.SimpleNamespace(
            choices=[types.SimpleNamespace(message=message)],
            usage=types.SimpleNamespace(prompt_tokens=10, completion_tokens=5),
        )
        return types.SimpleNamespace(headers={}, parse=lambda: completion)


def _papers(con: duckdb.DuckDBPyConnection) -> None:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    rows = [
        {"paper_id": f"P{i}", "title": title, "abstract": abstract, "sources": ["openalex"],
         "updated_at": now}
        for i, (title, abstract) in enumerate(
            [("Sharded indexes", "An index in shards for long documents."),
             ("Graph caches", "A cache over graph neighbourhoods."),
             ("Token pruning", "Pruning tokens before the query.")]
        )
    ]  # fmt: skip
    warehouse.upsert(con, "papers", rows, ["paper_id"])
    search.build_search_index(con)


def _four(
    con: duckdb.DuckDBPyConnection, concurrency: int, together: int = 1
) -> tuple[list[Any], SlowOpenAI]:
    client = SlowOpenAI(delay=0.2, together=together)
    settings = Settings(llm_backend="openai", llm_model="m", llm_concurrency=concurrency)
    llm = LLM(settings, con, client=client)  # type: ignore[arg-type]
    reader = con.cursor()
    target = ("P0", "Sharded indexes", "An index in shards for long documents.")
    brief = "Long documents need an index that does not fit in memory; how to search them fast?"
    with llm.journal(reader):
        found = audit_checks.checks(llm, reader, settings, "b1", brief, target, ["sharded"])
    reader.close()
    return found, client


def test_identity_and_mechanism_are_asked_at_once_and_the_findings_keep_their_order(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _papers(con)
    alone, client = _four(con, concurrency=1)
    assert client.most == 1
    assert client.asked == ["IdentityGuess", "MechanismGuess", "MechanismOverlap"]
    found, client = _four(con, concurrency=4, together=2)
    assert client.most == 2  # the identity guess beside the mechanism guess
    assert sorted(client.asked) == sorted(["IdentityGuess", "MechanismGuess", "MechanismOverlap"])
    assert [f.check for f in found] == [
        AuditCheck.LEXICAL, AuditCheck.IDENTITY, AuditCheck.RETRIEVAL, AuditCheck.MECHANISM,
    ]  # fmt: skip
    assert found == alone
