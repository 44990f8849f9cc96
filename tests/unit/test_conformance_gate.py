"""The real recordings stay outside the repository. Without them the tests that replay them skip,
each with one line naming what is missing and the variable to set, except under CI=true, where
they fail (a CI machine must not pass by skipping them). `make record-fixtures` (tests/
conformance/record.py) asks the live APIs the same requests again: its plan, its file names and
layouts, its refusals, and a whole recording against the sandbox are tested here, offline."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from inspire_build import snapshot, warehouse
from inspire_build.config import Settings, get_settings
from inspire_build.errors import InputError, InspireError
from inspire_build.http import HttpClient
from inspire_build.local_server import free_port
from inspire_build.sandbox import server, world
from inspire_build.sources import CODECS, make_client
from tests.conformance import record as R
from tests.conftest import API_RECORDINGS, PROJECT_ROOT, RECORDINGS_VARIABLE, missing_recordings

# Every kind of test that replays recordings: a session fixture that imports them all
# (test_real_recordings), a parametrized one, and one outside tests/conformance/.
REPLAYING = [
    "tests/conformance/test_real_recordings.py",
    "tests/conformance/test_sandbox_shapes.py",
    "tests/integration/test_bulk_build.py::"
    "test_a_build_from_bulk_tables_asks_5_percent_and_agrees_on_every_status",
]


def replaying(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env[RECORDINGS_VARIABLE] = str(tmp_path / "nothing")
    if ci is not None:
        env["CI"] = ci
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
               "-p", "no:xdist", *REPLAYING]  # fmt: skip
    return subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)


def test_missing_recordings_skip_each_test_with_one_line_naming_them(tmp_path: Path) -> None:
    done = replaying(tmp_path, None)
    assert done.returncode == 0, done.stdout[-3000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " skipped" in summary and "passed" not in summary and "error" not in summary
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    reason = (
        f"real recordings missing: {tmp_path / 'nothing' / 'real'} (set {RECORDINGS_VARIABLE} "
        "to the folder that holds real/, or fill one with `make record-fixtures`)"
    )
    assert len(skipped) == int(summary.split()[0]) > 15  # one line a test, all alike
    assert all(line.endswith(": " + reason) for line in skipped)


def test_missing_recordings_fail_under_ci_naming_them(tmp_path: Path) -> None:
    done = replaying(tmp_path, "true")
    assert done.returncode == 1
    assert "passed" not in done.stdout.strip().splitlines()[-1]
    assert (
        f"real recordings missing: {tmp_path / 'nothing' / 'real'}; under CI=true the tests "
        "that replay them fail, not skip"
    ) in done.stdout


def test_a_missing_folder_is_named_when_the_rest_is_there(tmp_path: Path) -> None:
    real = tmp_path / "real"
    assert missing_recordings("arxiv", real=real) == [real]  # the whole folder, once
    for name in API_RECORDINGS:
        (real / name).mkdir(parents=True)
    assert missing_recordings(*API_RECORDINGS, real=real) == []
    assert missing_recordings("openalex", "s2-datasets", real=real) == [real / "s2-datasets"]


def names_outside(line: str) -> bool:
    """Whether a line names the folder CI lays beside the clone."""
    return "../shared" in line or 'parent / "shared"' in line


def test_no_makefile_or_package_line_names_a_path_outside_the_repository() -> None:
    """Only tests/ knows where CI lays the recordings (the manual has a test of its own)."""
    assert names_outside("\tpytest --fixtures ../shared/fixtures")  # planted
    assert names_outside('ROOT = HERE.parent / "shared" / "fixtures"')  # planted
    files = [PROJECT_ROOT / "Makefile", PROJECT_ROOT / "pyproject.toml"]
    for folder in ("inspire_build", "flows", "bench"):
        files += [p for p in (PROJECT_ROOT / folder).rglob("*") if p.suffix in (".py", ".sql")]
    found = [
        f"{path.relative_to(PROJECT_ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if names_outside(line)
    ]
    assert found == []


# --- the recorder's plan ------------------------------------------------------------------------


def test_the_plan_asks_what_the_recordings_hold() -> None:
    """The fixtures' README, counted by hand: 40 OpenAlex interactions (api_call_200 1,
    oa_snowball 6, the 401 1, pro_request_single_identifier 2, pro_snowball 5, 25 single works),
    7 S2 (references, two batches, two not-found, a bad field, an empty search), 18 arXiv."""
    plan = R.plan()
    asked = Counter(ask.source for recording in plan for ask in recording.asks)
    assert asked == {"openalex": 40, "s2": 7, "arxiv": 18}
    named = [f"{r.folder}/{r.name}" for r in plan if r.name]
    assert len(named) == len(set(named)) == 5 + 25 + 6
    singles = [r for r in plan if r.folder == "openalex/single_works"]
    assert len({r.asks[0].path for r in singles}) == 23  # three recordings are one book
    [unkeyed] = [ask for r in plan for ask in r.asks if not ask.keyed]
    assert (unkeyed.path, unkeyed.params) == ("/rate-limit", (("api_key", "<api-key>"),))
    [follows] = [ask for r in plan for ask in r.asks if ask.follows]
    assert dict(follows.params) == {"filter": "openalex:W3045921891|W3046863325", "per_page": "200"}
    [gpt1] = [r for r in plan if r.name == "references_gpt1_corpusid_49313245.yaml"]
    assert gpt1.layout == "vcrpy-old" and gpt1.asks[0].path == "/paper/CorpusID:49313245/references"
    arxiv = [r.asks[0] for r in plan if r.folder == "arxiv"]
    assert [dict(a.params)["id_list"] for a in arxiv[:2]] == ["0000.0000", "0808.05394,1707.08567"]


@pytest.mark.parametrize(
    ("url", "name"),
    [
        (
            "https://export.arxiv.org/api/query?search_query=testing&id_list=&sortBy=relevance"
            "&sortOrder=descending&start=0&max_results=10",
            "q_testing_s0_m10_bc5a6c384fe9.json",
        ),
        (
            "https://export.arxiv.org/api/query?search_query=&id_list=0808.05394%2C1707.08567"
            "&sortBy=relevance&sortOrder=descending&start=0&max_results=100",
            "id_0808.05394_1707.08567_s0_m100_42e5aa0ec3af.json",
        ),
        (
            "https://export.arxiv.org/api/query?search_query=&id_list=astro-ph%2F0601001"
            "&sortBy=relevance&sortOrder=descending&start=0&max_results=100",
            "id_astro-ph_0601001_s0_m100_3150dca9dc76.json",
        ),
    ],
)
def test_arxiv_files_are_named_as_ci_names_them(url: str, name: str) -> None:
    assert R.arxiv_file_name(url) == name  # the names of three files CI holds, by hand


# --- what the recorder writes -------------------------------------------------------------------

WHEN = dt.datetime(2026, 7, 23, 6, 10, 53, tzinfo=dt.UTC)


def answer(url: str, body: bytes, status: int = 200, request_body: bytes | None = None) -> R.Answer:
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip", "Date": "x"}
    return R.Answer(
        "POST" if request_body else "GET", url, request_body, status, headers, body, WHEN
    )


@pytest.mark.parametrize("layout", ["vcrpy-old", "vcrpy", "r-vcr"])
def test_each_cassette_layout_reads_back_as_recorded(tmp_path: Path, layout: R.Layout) -> None:
    url = "https://api.semanticscholar.org/graph/v1/paper/batch?fields=title,year"
    answers = [
        answer(url, '[{"title": "Über \\"quoted\\"\\n"}, null]'.encode(), 200, b'{"ids": ["a"]}'),
        answer("https://api.openalex.org/works?filter=x:1", b'{"error": "bad"}', 400),
    ]
    recording = R.Recording("semanticscholar", "x.yaml", layout, ())
    path = tmp_path / "x.yaml"
    path.write_text(R.render(recording, answers), encoding="utf-8")
    back = list(snapshot.read_cassette(path))
    assert [(i.method, i.url, i.status, i.body, i.request_body) for i in back] == [
        (a.method, a.url, a.status, a.body, a.request_body) for a in answers
    ]
    assert all("Content-Encoding" not in i.headers and i.headers["Date"] == "x" for i in back)
    data = yaml.safe_load(path.read_text())
    first = data["http_interactions" if layout == "r-vcr" else "interactions"][0]
    # where the conformance tests read a body: S2's old layout, OpenAlex's new and R layouts
    body = first["response"]["content"] if layout == "vcrpy-old" else first["response"]["body"]
    assert json.loads(body if layout == "vcrpy-old" else body["string"])[1] is None
    if layout == "r-vcr":
        assert first["recorded_at"] == "2026-07-23 06:10:53"


def test_an_arxiv_file_keeps_its_bytes_as_latin_1(tmp_path: Path) -> None:
    url = "https://export.arxiv.org/api/query?search_query=&id_list=1707.08567&start=0"
    body = "<feed><title>Schrödinger</title></feed>".encode()  # UTF-8 bytes, kept as they came
    recording = R.Recording("arxiv", None, "arxiv", ())
    assert R.file_name(recording, [answer(url, body)]).startswith("arxiv/id_1707.08567_s0_m10_")
    path = tmp_path / "a.json"
    path.write_text(R.render(recording, [answer(url, body)]), encoding="utf-8")
    assert json.loads(path.read_text())["body"].encode("latin-1") == body
    [back] = snapshot.read_cassette(path)
    assert (back.url, back.status, back.body) == (url, 200, body)


# --- refusals -----------------------------------------------------------------------------------


def keyed_settings(**values: object) -> Settings:
    keys = {"openalex_api_key": SecretStr("oa-secret-1"), "s2_api_key": SecretStr("s2-secret-2")}
    return Settings.model_validate({**keys, "contact_email": SecretStr("me@example.org"), **values})


def test_a_recording_needs_both_keys_the_live_apis_and_a_new_folder_outside(
    tmp_path: Path,
) -> None:
    assert R.problems(keyed_settings(), tmp_path, PROJECT_ROOT) == []
    refused = R.problems(Settings(), tmp_path, PROJECT_ROOT)
    assert [line.split()[0] for line in refused] == [
        "INSPIRE_OPENALEX_API_KEY",
        "INSPIRE_S2_API_KEY",
    ]
    sandboxed = R.problems(
        keyed_settings(s2_url="http://127.0.0.1:9/graph/v1"), tmp_path, PROJECT_ROOT
    )
    assert sandboxed == [
        "INSPIRE_S2_URL points at http://127.0.0.1:9/graph/v1, not the live API "
        "(https://api.semanticscholar.org/graph/v1): unset it"
    ]
    inside = R.problems(keyed_settings(), PROJECT_ROOT / "tests" / "recorded", PROJECT_ROOT)
    assert len(inside) == 1 and "inside the repository" in inside[0]
    (tmp_path / "real").mkdir()
    [existing] = R.problems(keyed_settings(), tmp_path, PROJECT_ROOT)
    assert "never rewritten in place" in existing


def test_without_keys_it_refuses_before_asking_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    get_settings.cache_clear()  # no INSPIRE_* variable is set in a test
    assert R.main(["--into", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "INSPIRE_OPENALEX_API_KEY is not set" in err and "INSPIRE_S2_API_KEY is not set" in err
    assert "nothing was asked or written" in err and list(tmp_path.iterdir()) == []


def test_unreachable_apis_end_it_at_once_with_nothing_written(tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    settings = keyed_settings(openalex_url=nowhere, http_backoff_s=30)  # a retry would be seen
    started = dt.datetime.now()
    with pytest.raises(InspireError) as refused:
        R.record(R.live_clients(settings), tmp_path, R.plan())
    assert (dt.datetime.now() - started).total_seconds() < 20  # the first request, not retried
    message = str(refused.value)
    assert message.startswith("openalex/api_call_200.yml: openalex: gave up on GET")
    assert "ConnectionError" in message and "oa-secret-1" not in message
    assert list(tmp_path.iterdir()) == []  # no real/, no real.partial/
    (tmp_path / "real").mkdir()
    with pytest.raises(InputError, match="never rewritten in place"):
        R.record(R.live_clients(settings), tmp_path, R.plan())


# --- a whole recording, against the sandbox -----------------------------------------------------


@pytest.fixture
def sandboxes() -> Iterator[Callable[..., Settings]]:
    """Settings pointing each source at a sandbox of its own (one server would serve them all
    under one base URL, and an import could not tell them apart), with keys."""
    generated = world.generate(world.WorldConfig(seed=2, papers=100))
    config = server.SandboxConfig(time_scale=1000)
    with (
        server.running(generated, config) as openalex,
        server.running(generated, config) as s2,
        server.running(generated, config) as arxiv,
    ):
        yield lambda: keyed_settings(
            openalex_url=openalex,
            s2_url=s2 + "/graph/v1",
            arxiv_url=arxiv + "/api/query",
            openalex_rps=100,
            s2_rps=1000,
            arxiv_interval_s=0.01,
        )


def test_a_recording_imports_as_the_recordings_do_and_holds_no_secret(
    tmp_path: Path, sandboxes: Callable[..., Settings]
) -> None:
    settings = sandboxes()
    keyed = make_client(settings, None, mode="live")
    bare = make_client(R.keyless(settings), None, mode="live")

    def clients(with_keys: bool) -> HttpClient:
        return keyed if with_keys else bare

    said: list[str] = []
    written = R.record(clients, tmp_path, R.plan(), said=said.append)
    assert len(written) == len(said) == len(R.plan()) == 5 + 25 + 6 + 18
    assert all(path.is_file() for path in written) and not (tmp_path / "real.partial").exists()
    con = warehouse.connect(":memory:")
    warehouse.migrate(con)
    report = snapshot.import_cassettes(
        snapshot.cassette_files([tmp_path / "real"]), con, CODECS, settings
    )
    assert report.rejected_files == [] and not report.skipped
    # The sandbox names no next cursor for works it does not hold: the page after is not asked.
    assert report.by_source == {"openalex": 39, "s2": 7, "arxiv": 18}
    text = "".join(path.read_text() for path in written)
    assert not any(secret in text for secret in ("oa-secret-1", "s2-secret-2", "me@example.org"))
    keyless = yaml.safe_load((tmp_path / "real/openalex/pro_rate_limit_status_401.yml").read_text())
    assert keyless["http_interactions"][0]["request"]["uri"].endswith(
        "/rate-limit?api_key=REDACTED"
    )
