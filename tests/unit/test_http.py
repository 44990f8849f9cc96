"""http.py against a real local HTTP server: retries, Retry-After, budgets, store, rate limits.

Replay answers a page of one size from stored pages of another: OpenAlex cursor pages of 2
joined into pages of 4, and every case where joining would be wrong refused (None), never cut."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable, Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import duckdb
import pytest

from inspire_build import http
from inspire_build.config import Settings
from inspire_build.http import Described, HttpClient, ResponseStore
from inspire_build.pacing import Pacer
from inspire_build.sources import CODECS, openalex, semanticscholar
from tests.in_flight import InFlight
from tests.localserver import LocalServer, Reply, Seen


def settings_for(server: LocalServer, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "openalex_url": server.url,
        "s2_url": server.url + "/graph/v1",
        "arxiv_url": server.url + "/api/query",
        "openalex_rps": 100,
        "s2_rps": 100,
        "arxiv_interval_s": 0,
        "http_timeout_s": 2,
        "http_backoff_s": 0.01,
        "http_max_retries": 3,
    }
    values.update(overrides)
    return Settings.model_validate(values)


class Sleeps:
    """A sleep that records instead of waiting, so backoff is observable and fast."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def scripted(*replies: Reply) -> LocalServer:
    queue = list(replies)
    lock = threading.Lock()

    def handler(_: Seen) -> Reply:
        with lock:
            return queue.pop(0) if len(queue) > 1 else queue[0]

    return LocalServer(handler)


def client_for(
    server: LocalServer,
    con: duckdb.DuckDBPyConnection | None = None,
    sleeps: Sleeps | None = None,
    **overrides: object,
) -> HttpClient:
    return HttpClient(
        settings_for(server, **overrides),
        CODECS,
        ResponseStore(con) if con is not None else None,
        mode="live" if con is None else "auto",
        sleep=sleeps or Sleeps(),
    )


@pytest.mark.parametrize(
    ("source", "path", "status"),
    [
        ("openalex", "/works/W1", 429),
        ("openalex", "/works/W1", 403),
        ("s2", "/paper/CorpusId:1", 503),
    ],
)
def test_transient_statuses_are_retried(source: str, path: str, status: int) -> None:
    server = scripted(Reply(status), Reply(status), Reply(200, b'{"id": "W1"}'))
    with server.running():
        response = client_for(server).get(source, path)
    assert response.status == 200
    assert len(server.seen) == 3


def test_retry_after_is_honoured() -> None:
    server = scripted(Reply(429, headers={"Retry-After": "7"}), Reply(200, b"{}"))
    sleeps = Sleeps()
    with server.running():
        client_for(server, sleeps=sleeps).get("s2", "/paper/CorpusId:1")
    assert max(sleeps.calls) >= 7


def test_retry_after_as_http_date() -> None:
    now = dt.datetime(2026, 12, 2, 12, 0, 0, tzinfo=dt.UTC)
    assert http.parse_retry_after("Wed, 02 Dec 2026 12:00:30 GMT", now=now) == 30
    assert http.parse_retry_after("12") == 12
    assert http.parse_retry_after("soon") is None


def test_a_spent_budget_raises_a_typed_error_with_the_redacted_url() -> None:
    server = scripted(Reply(503, b"busy"))
    with server.running():
        client = client_for(server, openalex_api_key="sk-oa-123", contact_email="me@example.org")
        with pytest.raises(http.RetriesExhausted) as raised:
            client.get("openalex", "/works", [("filter", "cites:W1")])
    message = str(raised.value)
    assert "after 4 attempts" in message and "status 503" in message
    assert "/works?filter=cites:W1" in message
    assert "sk-oa-123" not in message and "me@example.org" not in message
    assert len(server.seen) == 4
    assert ("api_key", "sk-oa-123") in server.seen[0].query  # the key did go to the server


def test_a_daily_quota_fails_at_once() -> None:
    server = scripted(Reply(429, headers={"Retry-After": "86400"}))
    with server.running(), pytest.raises(http.RetriesExhausted, match="asks to wait 86400 s"):
        client_for(server).get("openalex", "/works/W1")
    assert len(server.seen) == 1


def test_final_errors_are_typed_and_carry_the_server_message() -> None:
    server = scripted(Reply(404, b'{"error": "Paper with id CorpusId:1 not found"}'))
    expected = "Paper with id CorpusId:1 not found"
    with server.running(), pytest.raises(http.NotFound, match=expected):
        client_for(server).get("s2", "/paper/CorpusId:1")
    assert len(server.seen) == 1  # a 404 is an answer, not a transient failure


# Every client error except 429: a malformed request, a wrong key, a missing record.
FINAL_4XX = [int(s) for s in HTTPStatus if 400 <= s < 500 and s != HTTPStatus.TOO_MANY_REQUESTS]
OPENALEX_PER_SECOND_403 = b'{"error": "Too many requests", "message": "Per-second rate limit hit"}'
PATHS = {"openalex": "/works", "s2": "/paper/CorpusId:1", "arxiv": ""}


@pytest.mark.parametrize("source", ["openalex", "s2", "arxiv"])
def test_a_4xx_is_never_retried_except_429_and_openalexs_per_second_403(source: str) -> None:
    def handler(seen: Seen) -> Reply:
        status = int(dict(seen.query)["status"])
        if status == 403 and dict(seen.query).get("rate") == "1":
            return Reply(403, OPENALEX_PER_SECOND_403)
        # A 403 that is not about the rate: OpenAlex's too is final.
        return Reply(status, b'{"error": "Forbidden", "message": "this key may not do that"}')

    server = LocalServer(handler)
    with server.running():
        client = client_for(server, http_max_retries=3)
        for status in FINAL_4XX:
            before = len(server.seen)
            with pytest.raises(http.ApiError) as raised:
                client.get(source, PATHS[source], [("status", str(status))])
            assert raised.value.status == status
            assert len(server.seen) - before == 1, f"{source} {status} was retried"
        retried = [429, 403] if source == "openalex" else [429]
        for status in retried:
            before = len(server.seen)
            with pytest.raises(http.RetriesExhausted, match=f"status {status}"):
                client.get(source, PATHS[source], [("status", str(status)), ("rate", "1")])
            assert len(server.seen) - before == 4  # the first try and 3 retries
    assert client.stats[source].retries == 3 * len(retried)


def test_timeouts_and_dropped_connections_are_retried() -> None:
    # 1 s, not 0.3: the timeout holds for the answers that must come in time too, and a loaded
    # machine may take 0.3 s to send one (a retry more). The first answer is 5 s late.
    server = scripted(Reply(200, b"{}", delay_s=5.0), Reply(drop=True), Reply(200, b'{"ok": 1}'))
    with server.running():
        response = client_for(server, http_timeout_s=1.0).get("openalex", "/works/W1")
    assert response.json() == {"ok": 1}
    assert len(server.seen) == 3


def test_truncated_json_is_retried_and_never_stored(con: duckdb.DuckDBPyConnection) -> None:
    server = scripted(Reply(200, b'{"id": "W1", "title": "Tr'), Reply(200, b'{"id": "W1"}'))
    with server.running():
        response = client_for(server, con).get("openalex", "/works/W1")
    assert response.json() == {"id": "W1"}
    bodies = con.execute("SELECT body FROM raw_http").fetchall()
    assert bodies == [(b'{"id": "W1"}',)]


def test_the_store_records_and_then_answers(con: duckdb.DuckDBPyConnection) -> None:
    server = scripted(Reply(200, b'{"id": "https://openalex.org/W1"}'))
    with server.running():
        live = client_for(server, con)
        first = live.get("openalex", "/works/W1", [("select", "id,title")])
        second = live.get("openalex", "/works/w1", [("select", "title")])  # same resource
    assert not first.from_store and second.from_store
    assert len(server.seen) == 1
    replay = HttpClient(settings_for(server), CODECS, ResponseStore(con), mode="replay")
    assert replay.get("openalex", "/works/https://openalex.org/W1", [("select", "id")]).from_store
    with pytest.raises(http.ReplayMiss, match="works/W2"):
        replay.get("openalex", "/works/W2")
    with pytest.raises(http.ReplayMiss):  # the record lacks a requested field
        replay.get("openalex", "/works/W1", [("select", "id,abstract_inverted_index")])


def test_the_sandboxs_answers_are_stored_as_the_sandboxs(con: duckdb.DuckDBPyConnection) -> None:
    """A query for origin = 'live' (the real API's data) must not find the emulator's."""
    emulated = Reply(200, b'{"id": "W1"}', {"X-Inspire-Sandbox": "1"})
    for reply, path in ((emulated, "/works/W1"), (Reply(200, b'{"id": "W2"}'), "/works/W2")):
        server = scripted(reply)
        with server.running():
            client_for(server, con).get("openalex", path)
    rows = con.execute("SELECT url LIKE '%W1%', origin FROM raw_http ORDER BY 1 DESC").fetchall()
    assert rows == [(True, "sandbox"), (False, "live")]
    assert http.origin_of("import:a.jsonl", {"x-inspire-sandbox": "1"}) == "import:a.jsonl"


@pytest.mark.parametrize(
    ("source", "path", "body", "complete"),
    [
        (
            "openalex",
            "/works",
            b'{"meta": {"count": 1, "page": 1}, "results": [{"id": "W1"}]}',
            True,
        ),
        (
            "openalex",
            "/works",
            b'{"meta": {"count": 9, "page": 1}, "results": [{"id": "W1"}]}',
            False,
        ),
        ("s2", "/paper/CorpusId:1/references", b'{"offset": 0, "data": []}', True),
        ("s2", "/paper/CorpusId:1/references", b'{"offset": 0, "next": 1, "data": []}', False),
    ],
)
def test_a_fresh_json_answer_is_parsed_once_for_the_check_the_store_and_the_caller(
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    path: str,
    body: bytes,
    complete: bool,
) -> None:
    server = scripted(Reply(200, body))
    parsed: list[bytes] = []
    loads = json.loads

    def counted(text: str | bytes, **kwargs: Any) -> Any:
        parsed.append(text if isinstance(text, bytes) else text.encode())
        return loads(text, **kwargs)

    with server.running():
        client = client_for(server, con)
        monkeypatch.setattr(json, "loads", counted)
        response = client.get(source, path)
        document = response.json()
        monkeypatch.setattr(json, "loads", loads)
    assert parsed.count(body) == 1 and document == loads(body)
    stored = con.execute("SELECT complete FROM raw_http").fetchall()
    assert stored == [(complete,)]  # judged on the same parsed body


def test_serves_is_the_documented_matching_rule() -> None:
    wanted = Described("works page=first", ("id", "title"), 100)
    assert http.serves(wanted, 200, None, 25, True)  # full records, complete page
    assert http.serves(wanted, 200, ["id", "title", "doi"], 100, False)  # same page size
    assert not http.serves(wanted, 200, ["id"], 100, True)  # lacks "title"
    assert not http.serves(wanted, 200, None, 25, False)  # a partial page of another size
    assert http.serves(wanted, 404, None, 25, False)  # an error answers any page size
    assert not http.serves(Described("works/W1", None, None), 200, ["id"], None, None)


def test_a_long_url_is_cut_in_messages_and_kept_whole_in_the_store() -> None:
    batch = "https://api.openalex.org/works?filter=ids.openalex:" + "|".join(
        f"W{n}" for n in range(100)
    )
    shown = http.said(batch)
    assert shown.startswith(batch[:200]) and shown.endswith(f"... ({len(batch):,} characters)")
    assert http.said("https://api.openalex.org/works/W1") == "https://api.openalex.org/works/W1"


def test_redact_url_removes_credentials() -> None:
    url = "https://u:p@api.openalex.org/works?filter=doi:10.1/x&api_key=K&mailto=a%40b.org"
    assert http.redact_url(url) == (
        "https://api.openalex.org/works?filter=doi:10.1/x&api_key=REDACTED&mailto=REDACTED"
    )
    headers = {"x-api-key": "K", "Authorization": "Bearer K", "Accept": "*/*"}
    assert http.redact_headers(headers) == {"Accept": "*/*"}


# --- rate limits --------------------------------------------------------------------------------


def _max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(sum(1 for t in times[i:] if t - start < window) for i, start in enumerate(times))


def test_requests_per_second_never_exceed_each_hosts_rate() -> None:
    server = LocalServer(lambda seen: Reply(200, b"{}"))
    rates = {"openalex": 20.0, "s2": 5.0}
    with server.running():
        client = HttpClient(
            settings_for(server, openalex_rps=rates["openalex"], s2_rps=rates["s2"]),
            CODECS,
            None,
            mode="live",
        )
        jobs = [("openalex", f"/works/W{i}") for i in range(30)]
        jobs += [("s2", f"/paper/CorpusId:{i}") for i in range(8)]
        threads = [threading.Thread(target=client.get, args=job) for job in jobs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for source, rate in rates.items():
        prefix = "/graph/v1" if source == "s2" else "/works"
        times = [s.at for s in server.seen if s.path.startswith(prefix)]
        # The client spaces sends exactly 1/rate apart, but arrival times at the server jitter
        # (threads, connection setup, a loaded machine), so the window is shortened by half an
        # interval: 21 arrivals at 20/s within 0.975 s would still fail.
        window = 1.0 - 0.5 / rate
        assert _max_in_window(times, window) <= rate, source
    assert len(server.seen) == 38


class Held:
    """A handler that counts the most requests held at once (:class:`InFlight`: the first wait
    for ``together``, then each is held 50 ms)."""

    def __init__(self, answer: Callable[[Seen], bytes], together: int = 1) -> None:
        self.answer, self.flight = answer, InFlight(together, stay=0.05)

    @property
    def peak(self) -> int:
        return self.flight.most

    def __call__(self, seen: Seen) -> Reply:
        with self.flight.inside():
            return Reply(200, self.answer(seen))


def _at_once(
    client: HttpClient, source: str, path: str, params: list[list[tuple[str, str]]]
) -> None:
    """One thread per request, all started, then all joined."""
    threads = [threading.Thread(target=client.get, args=(source, path, p)) for p in params]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_arxiv_sends_one_request_at_a_time() -> None:
    handler = Held(lambda _: b"<feed xmlns='http://www.w3.org/2005/Atom'/>")
    server = LocalServer(handler)
    with server.running():
        client = HttpClient(settings_for(server, arxiv_interval_s=0), CODECS, None, mode="live")
        _at_once(client, "arxiv", "", [[("id_list", f"2301.0000{i}")] for i in range(5)])
    assert handler.peak == 1 and len(server.seen) == 5


def test_departures_keep_a_margin_a_tenth_of_the_interval_at_most_10_ms() -> None:
    assert http.send_margin(0.05) == pytest.approx(0.005)  # S2 at 20/s: 5 ms
    assert http.send_margin(1.0) == http.send_margin(3.0) == pytest.approx(0.01)  # S2, arXiv
    assert http.send_margin(0.0) == 0.0  # no limit, no margin
    now, waits = [0.0], []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    limiter = Pacer(1.0, clock=lambda: now[0], sleep=sleep, margin_s=0.01)
    limiter.acquire()
    limiter.sent()  # leaves at 0
    limiter.acquire()  # its slot at 1.0
    limiter.sent()  # but it leaves 10 ms after that
    assert now[0] == pytest.approx(1.01) and waits == [pytest.approx(1.0), pytest.approx(0.01)]
    source = http.Limits().rate("s2", 1.0, sleep)  # the one pacer, the LLM endpoint's too
    assert isinstance(source, Pacer) and source.margin_s == pytest.approx(0.01)


# --- secrets ------------------------------------------------------------------------------------

SECRETS = {
    "openalex_api_key": "oa-key-SECRET-1111",
    "s2_api_key": "s2-key-SECRET-2222",
    "contact_email": "secret.person@example.org",
}


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(f"INSPIRE_{name.upper()}", value)
    yield


def test_secrets_appear_nowhere(
    secret_env: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from inspire_build import snapshot, warehouse

    def handler(seen: Seen) -> Reply:
        # A hostile server echoes the request, key and all, and fails once per resource.
        echo = json.dumps({"id": "W1", "echo": seen.raw_target, "headers": seen.headers})
        if seen.path.endswith("/W2"):
            return Reply(400, json.dumps({"error": "bad", "message": seen.raw_target}).encode())
        return Reply(200, echo.encode())

    server = LocalServer(handler)
    caplog.set_level("DEBUG")
    errors: list[str] = []
    path = tmp_path / "w.duckdb"
    with server.running(), warehouse.open_warehouse(path) as con:
        settings = Settings(
            openalex_url=server.url,
            s2_url=server.url,
            http_max_retries=1,
            openalex_rps=100,
            s2_rps=100,
        )
        client = HttpClient(settings, CODECS, ResponseStore(con), mode="live")
        client.get("openalex", "/works/W1")
        client.get("s2", "/paper/CorpusId:1")
        try:
            client.get("openalex", "/works/W2")
        except http.ApiError as error:
            errors.append(str(error))
        snapshot.export_parquet(con, tmp_path / "raw.parquet")
        stored = con.execute("SELECT * FROM raw_http").fetchall()
    assert any("api_key" in s.raw_target for s in server.seen)  # it was sent...
    haystacks = {
        "store": repr(stored),
        "logs": caplog.text,
        "errors": " ".join(errors),
        "export": repr(
            duckdb.execute(
                "SELECT * FROM read_parquet(?)", [str(tmp_path / "raw.parquet")]
            ).fetchall()
        ),
    }
    assert errors and "bad" in errors[0]
    for where, text in haystacks.items():
        for secret in SECRETS.values():
            assert secret not in text, f"{secret} leaked into the {where}"


# --- replay joins stored pages of one size into pages of another --------------------------------


PATH = "/works"
FILTER = ("filter", "publication_year:2025")
WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def store_page(
    con: duckdb.DuckDBPyConnection,
    cursor: str,
    ids: list[int],
    following: str | None,
    count: int = 5,
    *,
    per_page: int = 2,
) -> None:
    meta = {"count": count, "page": None, "per_page": per_page, "next_cursor": following}
    body = {"meta": meta, "results": [{"id": f"https://openalex.org/W{i}"} for i in ids]}
    save(con, [FILTER, ("per_page", str(per_page)), ("cursor", cursor)], body)


def save(con: duckdb.DuckDBPyConnection, params: list[tuple[str, str]], body: object) -> None:
    """One stored 200 answer of OpenAlex's /works for ``params``."""
    row = http.store_row(
        openalex.CODEC,
        openalex.CODEC.describe("GET", PATH, params, None),
        method="GET",
        url=f"https://api.openalex.org/works?{params[-1][0]}={params[-1][1]}",
        request_body=None,
        status=200,
        headers={},
        body=json.dumps(body).encode(),
        origin="test",
        fetched_at=WHEN,
    )
    http.ResponseStore(con).save([row])


def ask(con: duckdb.DuckDBPyConnection, cursor: str, per_page: int = 4) -> Any:
    params = [FILTER, ("per_page", str(per_page)), ("cursor", cursor)]
    described = openalex.CODEC.describe("GET", PATH, params, None)
    found = http.ResponseStore(con).lookup("openalex", described, openalex.PAGING)
    return None if found is None else found.json()


def five_in_pages_of_two(con: duckdb.DuckDBPyConnection) -> None:
    store_page(con, "*", [1, 2], "c2")
    store_page(con, "c2", [3, 4], "c4")
    store_page(con, "c4", [5], None)


def ids(page: Any) -> list[str]:
    return [r["id"].rsplit("W", 1)[1] for r in page["results"]]


def test_cursor_pages_of_two_answer_pages_of_four(con: duckdb.DuckDBPyConnection) -> None:
    five_in_pages_of_two(con)
    first = ask(con, "*")
    assert ids(first) == ["1", "2", "3", "4"] and first["meta"]["next_cursor"] == "c4"
    last = ask(con, "c4")
    assert ids(last) == ["5"] and last["meta"]["next_cursor"] is None
    assert first["meta"]["count"] == 5


def test_a_missing_page_or_an_overshoot_is_no_answer(con: duckdb.DuckDBPyConnection) -> None:
    store_page(con, "*", [1, 2], "c2")
    assert ask(con, "*") is None  # page c2 was never stored
    store_page(con, "c2", [3, 4], "c4")
    assert ask(con, "*", per_page=3) is None  # 4 items gathered; page 3 would start inside c2


def test_page_numbered_pages_never_end_a_list_early(con: duckdb.DuckDBPyConnection) -> None:
    body = {"meta": {"count": 5, "page": 1, "per_page": 2}, "results": [{"id": "W1"}, {"id": "W2"}]}
    save(con, [FILTER, ("per_page", "2"), ("page", "1")], body)
    assert ask(con, "*") is None  # 2 of 5 results and no cursor: not the whole list


def test_s2_pages_join_with_offset_and_next_by_hand() -> None:
    first = json.dumps({"offset": 20, "next": 40, "data": [1, 2]}).encode()
    assert semanticscholar.PAGING.split(first) == ([1, 2], "offset=40")
    joined = json.loads(semanticscholar.PAGING.join(first, [1, 2, 3], "offset=60"))
    assert joined == {"offset": 20, "data": [1, 2, 3], "next": 60}
    assert "next" not in json.loads(semanticscholar.PAGING.join(first, [1], None))


def _work_id(seen: Seen) -> bytes:
    return json.dumps({"id": seen.path.rsplit("/", 1)[-1]}).encode()


def test_at_once_asks_up_to_concurrency_at_a_time_and_answers_in_order() -> None:
    handler = Held(_work_id, together=3)
    server = LocalServer(handler)
    with server.running():
        # a timeout past the handler's 10 s hold: no retry while it waits for a third request
        client = client_for(server, concurrency=3, http_timeout_s=20)
        works = [f"W{i}" for i in range(9)]
        answers = client.at_once(lambda w: client.get("openalex", f"/works/{w}").json(), works)
    assert [a["id"] for a in answers] == works  # the items' order, whatever the arrival order
    assert handler.peak == 3


def test_at_once_raises_the_first_error_and_drops_the_items_not_started() -> None:
    server = scripted(Reply(200, b"{}"))
    with server.running():
        client = client_for(server, concurrency=2)
        asked: list[int] = []

        def ask(item: int) -> int:
            asked.append(item)
            if item == 1:
                raise ValueError("item 1 is bad")
            threading.Event().wait(0.05)
            return item

        with pytest.raises(ValueError, match="item 1"):
            client.at_once(ask, list(range(20)))
    assert len(asked) < 20  # the error stopped what had not started


def test_at_once_with_a_concurrency_of_1_asks_in_this_thread() -> None:
    server = scripted(Reply(200, b"{}"))
    with server.running():
        client = client_for(server, concurrency=1)
        names = client.at_once(lambda _: threading.current_thread().name, [1, 2])
    assert names == [threading.current_thread().name] * 2


def test_health_ok_is_a_200_and_anything_else_false() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802  (the stdlib's name)
            self.send_response(200 if self.path == "/health" else 503)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        assert http.health_ok(f"{base}/health")
        assert not http.health_ok(f"{base}/other")
    finally:
        server.shutdown()
        server.server_close()
    assert not http.health_ok(f"{base}/health", timeout_s=0.5)  # nobody listens now


def test_lineage_and_llm_steps_at_once_share_the_pool_without_discarding(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Lineage asks up to ``concurrency`` + 1 at a time (:meth:`at_once`), S2's reference lists
    one more beside them, and each of the ``llm_concurrency`` x LLM_TARGETS_PER_SLOT targets
    whose LLM steps are in progress one more (the search check): one host's pool holds all of
    them, so no connection is thrown away ("Connection pool is full", once per request in the
    demo)."""
    together = threading.Barrier(8, timeout=10)  # each answer waits until all eight are asked

    def handler(_: Seen) -> Reply:
        together.wait()
        return Reply(200, b'{"results": [], "meta": {"count": 0}}')

    server = LocalServer(handler)
    with server.running(), caplog.at_level("WARNING", logger="urllib3.connectionpool"):
        client = client_for(server, concurrency=2, llm_concurrency=1)  # 2 + 2 + 1 x 4
        _at_once(client, "openalex", "/works", [[("search", f"q{i}")] for i in range(8)])
    assert len(server.seen) == 8 and not together.broken  # eight connections at once
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]


def test_a_response_saved_again_replaces_the_stored_one(con: duckdb.DuckDBPyConnection) -> None:
    """A refresh saves a response whose key the store holds: it replaces it, one row per key
    (a new key is inserted without the conflict check, a stored one still goes through it)."""
    params = [FILTER, ("per_page", "2"), ("cursor", "*")]
    save(con, params, {"meta": {"count": 1}, "results": [{"id": "https://openalex.org/W1"}]})
    save(con, params, {"meta": {"count": 1}, "results": [{"id": "https://openalex.org/W2"}]})
    rows = con.execute("SELECT body FROM raw_http").fetchall()
    assert len(rows) == 1 and b"W2" in rows[0][0]
