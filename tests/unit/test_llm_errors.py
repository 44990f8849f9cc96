"""LLM errors: a refused key, permission or model stops the build at once, and no message, row or
log line ever holds the key, even when the endpoint's error body echoes it."""

from __future__ import annotations

import json
from collections.abc import Callable

import duckdb
import httpx
import openai
import pytest

from inspire_build import gold
from inspire_build.config import Settings
from inspire_build.llm import LLM, LLMConfigError, LLMError
from inspire_build.models import BriefDraft
from tests.unit.test_grading import SIGNALS, _target

KEY = "sk-live-0123456789abcdefSECRET"
CONTEXT = {"title": "A title", "abstract": "Long documents.", "redactions": [], "feedback": []}


def echoing(status: int) -> Callable[[httpx.Request], httpx.Response]:
    """An endpoint that answers every call with ``status`` and a body quoting the key sent."""

    def answer(request: httpx.Request) -> httpx.Response:
        sent = request.headers.get("authorization", "")
        body = {"error": {"message": f"Incorrect API key provided: {sent}", "code": status}}
        return httpx.Response(status, json=body)

    return answer


def llm_against(con: duckdb.DuckDBPyConnection, status: int) -> LLM:
    settings = Settings(  # type: ignore[call-arg]
        llm_backend="openai", llm_api_key=KEY, llm_model="m", llm_max_retries=0
    )
    client = openai.OpenAI(
        api_key=KEY,
        base_url="http://llm.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(echoing(status))),
    )
    return LLM(settings, con, client=client)


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refused_configuration_is_fatal_and_redacted(
    con: duckdb.DuckDBPyConnection, status: int
) -> None:
    with pytest.raises(LLMConfigError) as raised:
        llm_against(con, status).complete("brief", CONTEXT, BriefDraft)
    message = str(raised.value)
    assert f"HTTP {status}" in message and "INSPIRE_LLM_API_KEY" in message
    assert KEY not in message and "REDACTED" in message
    assert not isinstance(raised.value, LLMError)  # no per-target handler can swallow it


def test_a_server_error_fails_one_call_and_its_message_is_redacted(
    con: duckdb.DuckDBPyConnection,
) -> None:
    with pytest.raises(LLMError) as raised:
        llm_against(con, 500).complete("brief", CONTEXT, BriefDraft)
    assert "the LLM call failed" in str(raised.value) and KEY not in str(raised.value)


def test_a_build_stops_at_a_refused_key_and_stores_no_key(con: duckdb.DuckDBPyConnection) -> None:
    _target(con, "openalex:W1", SIGNALS)
    _target(con, "openalex:W2", SIGNALS)
    llm = llm_against(con, 401)
    with pytest.raises(LLMConfigError):
        gold.run(llm, con, llm.settings, ["openalex:W1", "openalex:W2"])
    everything = json.dumps(
        [
            con.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 (our table names)
            for table in ("briefs", "targets", "audit_findings", "grades", "llm_calls")
        ],
        default=str,
    )
    assert KEY not in everything
    assert con.execute("SELECT count(*) FROM briefs").fetchone() == (0,)  # nothing half-done
