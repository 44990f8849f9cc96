"""The review app over HTTP (Starlette's test client): untrusted text escaped, every
state-changing request bound to the session's token, bodies over 1 MB refused."""

from __future__ import annotations

import re

import duckdb
import pytest
from fastapi.testclient import TestClient

from inspire_build.config import Settings
from inspire_build.review.app import COOKIE, MAX_BODY, create_app
from inspire_build.review.curation import Curation
from tests.unit.review.conftest import IA, IB, SCRIPT_ABSTRACT, SCRIPT_BRIEF


@pytest.fixture
def client(con: duckdb.DuckDBPyConnection, planted: str) -> TestClient:
    review = Curation(con, Settings(llm_backend="rules", source_mode="replay"), planted, "ada")
    return TestClient(create_app(review, allowed_hosts=("testserver",)))


def _token(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found is not None
    return found.group(1)


def _reviews(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT count(*) FROM reviews").fetchone()
    return int(row[0]) if row else 0


def test_pages_render_untrusted_text_as_text(client: TestClient) -> None:
    page = client.get(f"/i/{IA}")
    assert page.status_code == 200
    assert SCRIPT_BRIEF not in page.text and SCRIPT_ABSTRACT not in page.text
    assert "&lt;script&gt;alert(&#39;brief&#39;)&lt;/script&gt;" in page.text
    assert "&lt;script&gt;alert(&#39;abstract&#39;)&lt;/script&gt;" in page.text
    policy = page.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy)
    assert nonce is not None and page.text.count("<script") == 1  # the page's own, nonced
    assert f'<script nonce="{nonce.group(1)}">' in page.text
    assert "httponly" in page.headers["set-cookie"].lower()
    assert "samesite=strict" in page.headers["set-cookie"].lower()
    listing = client.get("/", params={"finding": "mechanism:partial"})
    assert listing.status_code == 200
    assert f"/i/{IB}" in listing.text and f"/i/{IA}" not in listing.text
    assert "1 of 2 shown" in listing.text


def test_a_post_without_the_session_token_is_refused(
    client: TestClient, con: duckdb.DuckDBPyConnection
) -> None:
    token = _token(client.get(f"/i/{IA}").text)
    form = {"reason": "off topic"}
    assert client.post(f"/i/{IA}/reject", data=form).status_code == 403
    assert client.post(f"/i/{IA}/reject", data={**form, "csrf": "0" * 64}).status_code == 403
    stranger = TestClient(client.app)  # another session: its cookie, not this token
    assert stranger.post(f"/i/{IA}/reject", data={**form, "csrf": token}).status_code == 403
    assert _reviews(con) == 0
    done = client.post(f"/i/{IA}/reject", data={**form, "csrf": token}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/i/{IA}?done=1"
    assert _reviews(con) == 1
    shown = client.get(done.headers["location"]).text
    assert "Recorded review #1" in shown
    assert "rejected (was unreviewed): off topic" in shown  # the page's history
    assert COOKIE in client.cookies


def test_bad_requests_are_answered_and_record_nothing(
    client: TestClient, con: duckdb.DuckDBPyConnection
) -> None:
    token = _token(client.get(f"/i/{IB}").text)
    big = client.post(f"/i/{IA}/brief", data={"csrf": token, "text": "x" * (MAX_BODY + 1)})
    assert big.status_code == 413
    wrong = client.post(f"/i/{IA}/reject", data={"csrf": token, "reason": ""})
    assert wrong.status_code == 400 and "needs a reason" in wrong.text
    assert client.get("/i/" + "f" * 16).status_code == 404
    assert client.get("/", params={"state": "<b>x</b>"}).status_code == 400
    assert "<b>x</b>" not in client.get("/", params={"state": "<b>x</b>"}).text
    assert _reviews(con) == 0


def test_a_page_asked_for_under_another_name_is_refused(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    """DNS rebinding: a page whose own name now points at 127.0.0.1 sends its own Host."""
    local = TestClient(
        create_app(Curation(con, Settings(), planted, "ada")), base_url="http://127.0.0.1"
    )
    assert local.get("/").status_code == 200
    assert local.get("/", headers={"host": "evil.example"}).status_code == 400
    assert local.get("/", headers={"host": "localhost:8770"}).status_code == 200


def test_the_version_page_shows_the_boundary_and_what_a_reviewed_version_applied(
    con: duckdb.DuckDBPyConnection, planted: str, client: TestClient
) -> None:
    import datetime as dt

    from inspire_build import warehouse
    from inspire_build.review import apply

    assert "Boundary: not attacked yet" in client.get("/").text
    warehouse.upsert(con, "boundary_audits", [{
        "version_id": planted, "jitter_days": 30, "instances": 2, "exact_cutoffs": 0,
        "hash_tried": 12345, "hash_recovered": 0, "window_median": 4.0, "window_p10": 2.0,
        "window_top1": 0.5, "window_top10": 1.0, "audited_at": dt.datetime.now(dt.UTC),
    }], ["version_id"])  # fmt: skip
    shown = client.get("/").text
    assert "hash attack recovered 0 of 12,345 hashes" in shown
    assert "ranks the target first for 50.0%" in shown
    settings = Settings(llm_backend="rules", instance_key="00" * 32)
    Curation(con, settings, planted, "ada").record(IB, "reject", {"reason": "off topic"})
    made = apply.apply_reviews(con, settings, "eval")["version_id"]
    reviewed = TestClient(
        create_app(Curation(con, settings, made, "ada"), allowed_hosts=("testserver",))
    ).get("/")
    assert f'<code id="base-version">{planted}</code> (1 review)' in reviewed.text
    assert "1 of 1 shown" in reviewed.text  # B was rejected: not in the new version
    assert "0 / 1" in reviewed.text  # A has no decision; B's rejection is of no instance here
