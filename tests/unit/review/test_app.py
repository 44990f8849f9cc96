"""The review app over HTTP (Starlette's test client): untrusted text escaped, every
state-changing request bound to the session's token, bodies over 1 MB refused; each browser
session names its curator; a stale form answered 409; a brief that breaks the build's rules kept
as a draft, its rules on the page."""

from __future__ import annotations

import re

import duckdb
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from inspire_build.config import Settings
from inspire_build.review.app import COOKIE, MAX_BODY, NAME_COOKIE, create_app
from inspire_build.review.curation import Curation
from tests.unit.review.conftest import (
    GOOD_A,
    IA,
    IB,
    SCRIPT_ABSTRACT,
    SCRIPT_BRIEF,
    Reviewer,
    form_fields,
)

SETTINGS = Settings(llm_backend="rules", source_mode="replay")


@pytest.fixture
def app(con: duckdb.DuckDBPyConnection, planted: str) -> FastAPI:
    review = Curation(con, SETTINGS, planted)
    return create_app(review, allowed_hosts=("testserver",), default_curator="ada")


@pytest.fixture
def client(app: FastAPI) -> TestClient:
    """Ada's session, named."""
    return Reviewer(app, "ada").client


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
    form = {"reason": "off topic", "based_on": "0"}
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
    wrong = client.post(f"/i/{IA}/reject", data={"csrf": token, "reason": "", "based_on": "0"})
    assert wrong.status_code == 400 and "needs a reason" in wrong.text
    assert client.get("/i/" + "f" * 16).status_code == 404
    assert client.get("/", params={"state": "<b>x</b>"}).status_code == 400
    assert "<b>x</b>" not in client.get("/", params={"state": "<b>x</b>"}).text
    assert _reviews(con) == 0


def test_a_page_asked_for_under_another_name_is_refused(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    """DNS rebinding: a page whose own name now points at 127.0.0.1 sends its own Host."""
    local = TestClient(create_app(Curation(con, Settings(), planted)), base_url="http://127.0.0.1")
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
    Curation(con, settings, planted).record(
        IB, "reject", {"reason": "off topic", "based_on": "0"}, "ada"
    )
    made = apply.apply_reviews(con, settings, "eval")["version_id"]
    on_made = create_app(Curation(con, settings, made), allowed_hosts=("testserver",))
    reviewed = Reviewer(on_made).client.get("/")
    assert f'<code id="base-version">{planted}</code> (1 review)' in reviewed.text
    assert "1 of 1 shown" in reviewed.text  # B was rejected: not in the new version
    assert "0 / 1" in reviewed.text  # A has no decision; B's rejection is of no instance here


def _named(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute("SELECT review_id, instance_id, action, curator FROM reviews").fetchall()


def test_each_session_names_its_curator_first_and_decides_under_that_name(
    app: FastAPI, con: duckdb.DuckDBPyConnection
) -> None:
    ada, bo = Reviewer(app, None), Reviewer(app, None)
    first = ada.client.get(f"/i/{IA}", params={"state": "unreviewed"})
    assert first.status_code == 200 and 'id="name-form"' in first.text
    assert 'id="curator-name" value="ada"' in first.text  # the server's default, offered only
    fields = form_fields(first.text, 'id="name-form"')
    assert fields["next"] == f"/i/{IA}?state=unreviewed"
    assert ada.name("Ada", fields["next"]).headers["location"] == f"/i/{IA}?state=unreviewed"
    assert bo.name("Bo").status_code == 303
    assert 'curator <strong id="curator">Ada</strong>' in ada.client.get("/").text
    assert ada.post(IA, "reject", {"reason": "off topic"}).status_code == 303
    assert bo.post(IB, "accept", {}).status_code == 303
    assert bo.post(IA, "accept", {}).status_code == 303
    assert _named(con) == [(1, IA, "reject", "Ada"), (2, IB, "accept", "Bo"),
                           (3, IA, "accept", "Bo")]  # fmt: skip
    history = ada.client.get(f"/i/{IA}").text
    assert "<td>Bo</td><td>accept</td>" in history and "<td>Ada</td><td>reject</td>" in history


def test_a_session_without_a_valid_name_records_nothing(
    app: FastAPI, con: duckdb.DuckDBPyConnection
) -> None:
    nobody = Reviewer(app, None)
    page = nobody.client.get(f"/i/{IA}").text  # the name form: its token, no name
    token = form_fields(page, 'id="name-form"')["csrf"]
    refused = nobody.client.post(
        f"/i/{IA}/accept", data={"csrf": token, "based_on": "0"}, follow_redirects=False
    )
    assert refused.status_code == 403 and 'id="name-form"' in refused.text
    assert "who is reviewing?" in refused.text
    # a name cookie this process signed for another session, or forged, names nobody
    ada = Reviewer(app, "ada")
    nobody.client.cookies.set(NAME_COOKIE, ada.client.cookies[NAME_COOKIE])
    assert 'id="name-form"' in nobody.client.get("/").text
    nobody.client.cookies.set(NAME_COOKIE, "eve." + "0" * 64)
    assert 'id="name-form"' in nobody.client.get("/").text
    assert _named(con) == []


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("   ", "a curator needs a name"),
        ("x" * 81, "at most 80 characters"),
        ("ada\r\nSet-Cookie: admin=1", "control character"),
        ("ada\u202egnp.exe", "control character"),
    ],
)
def test_a_bad_name_is_refused_on_the_name_form(app: FastAPI, name: str, said: str) -> None:
    session = Reviewer(app, None)
    refused = session.name(name)
    assert refused.status_code == 400 and said in refused.text
    assert NAME_COOKIE not in refused.headers.get("set-cookie", "")
    assert "Set-Cookie: admin" not in str(refused.headers)


def test_a_name_is_escaped_on_the_page_and_encoded_in_its_cookie(
    app: FastAPI, con: duckdb.DuckDBPyConnection
) -> None:
    name = '<b onmouseover="x">Zoë; Path=/</b>'
    session = Reviewer(app, name)
    cookie = session.client.cookies[NAME_COOKIE]
    assert re.fullmatch(r"[A-Za-z0-9%._~-]+\.[0-9a-f]{64}", cookie)  # no ; , " or space
    page = session.client.get(f"/i/{IA}").text
    assert name not in page and "&lt;b onmouseover=&#34;x&#34;&gt;Zoë; Path=/&lt;/b&gt;" in page
    assert session.post(IA, "accept", {}).status_code == 303
    assert _named(con) == [(1, IA, "accept", name)]
    assert name not in session.client.get(f"/i/{IA}").text  # in the history too, escaped
    elsewhere = session.name("ada", "https://evil.example/")
    assert elsewhere.headers["location"] == "/"  # next never leaves this server
    assert session.name("ada", "//evil.example/x").headers["location"] == "/"


def test_a_form_made_before_another_decision_gets_409_and_the_newer_one(
    app: FastAPI, con: duckdb.DuckDBPyConnection
) -> None:
    """Ada and Bo open A's page at once; Bo saves a brief first, then Ada saves hers."""
    ada, bo = Reviewer(app, "ada"), Reviewer(app, "bo")
    ada_page, bo_page = ada.client.get(f"/i/{IA}").text, bo.client.get(f"/i/{IA}").text
    assert bo.post(IA, "brief", {"text": GOOD_A}, page=bo_page).status_code == 303
    mine = GOOD_A.replace("Requests that arrive", "Jobs that arrive")
    stale = ada.post(IA, "brief", {"text": mine}, page=ada_page)
    assert stale.status_code == 409
    assert "Not recorded." in stale.text and "review #1 by bo stands now" in stale.text
    assert 'id="conflict-review">review #1 by bo' in stale.text
    assert f'aria-label="brief text">{mine}</textarea>' in stale.text  # her text kept
    assert GOOD_A in stale.text  # and Bo's standing brief shown
    assert [r[3] for r in _named(con)] == ["bo"]
    # the 409 page is fresh: sent again from it, her brief replaces Bo's, knowingly
    again = ada.post(IA, "brief", {"text": mine}, page=stale.text)
    assert again.status_code == 303 and [r[3] for r in _named(con)] == ["bo", "ada"]
    based = con.execute("SELECT based_on FROM reviews ORDER BY review_id").fetchall()
    assert based == [(None,), (1,)]


def test_a_one_word_brief_is_kept_as_a_draft_and_its_rule_shown(
    client: TestClient, con: duckdb.DuckDBPyConnection
) -> None:
    ada = Reviewer(client.app)
    saved = ada.post(IA, "brief", {"text": "Routing."})
    assert saved.status_code == 303
    page = ada.client.get(saved.headers["location"]).text
    assert "Kept review #1 as a draft: it breaks length: 1 words, outside 120-250." in page
    assert '<span id="draft-rules">length: 1 words, outside 120-250</span>' in page
    assert "refuses while it stands" in page and 'id="discard-form"' in page
    assert "kept a draft of the brief (25 -&gt; 1 words; breaks length" in page  # the history
    assert con.execute("SELECT draft FROM reviews").fetchall() == [(True,)]
    assert "draft brief" in ada.client.get("/").text


def test_an_accept_that_changes_nothing_is_refused_over_http(
    client: TestClient, con: duckdb.DuckDBPyConnection
) -> None:
    ada = Reviewer(client.app)
    assert ada.post(IA, "accept", {}).status_code == 303
    again = ada.post(IA, "accept", {"reason": "still fine"})
    assert again.status_code == 400
    assert "already accepted (review #1 by ada): nothing changes" in again.text
    assert len(_named(con)) == 1
