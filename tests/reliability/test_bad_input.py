"""Bad input, served by a hostile sandbox world (``WorldConfig(hostile=True)``), through a real
``inspire build``: malformed JSON, wrong types, nulls everywhere, unicode titles, a paper with
10,000 references, a future date, an abstract carrying prompt injection, and LLM answers that
are invalid, refused or missing an antecedent. Each ends in a recorded status and reason, the
counts add up, and no traceback reaches the user.

Then bad input at the edges, each one clean line and exit 2 with nothing created or lost: a
setting that is not its JSON, a world record dated 2025-02-30, a FIFO or a device given as an
evaluation input, a JSON line naming one key twice; and the rules brief of an empty abstract."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import pytest

from inspire_build import gold, warehouse
from inspire_build.config import Settings
from inspire_build.llm import LLM
from inspire_build.llm_rules import BRIEF_MIN_WORDS, RULES
from inspire_build.models import BriefDraft, GradeSheet
from inspire_build.sandbox import server, world
from tests.conftest import run_inspire

STATUSES = ("eligible", "after_cutoff", "dated_after_target", "no_date", "unresolved", "self")


class Built(NamedTuple):
    path: Path
    world: world.World
    runs: list[subprocess.CompletedProcess[str]]
    targets: dict[str, str]  # hostile kind -> the target's paper_id


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, prefect_api: str) -> Iterator[Built]:
    tmp = tmp_path_factory.mktemp("bad_input")
    generated = world.generate(world.WorldConfig(seed=3, papers=600, hostile=True))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        env = {
            **os.environ,
            "INSPIRE_WAREHOUSE": str(tmp / "w.duckdb"),
            "PREFECT_HOME": str(tmp / "prefect"),
            "PREFECT_API_URL": prefect_api,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            **dict(line.split("=", 1) for line in server.env_lines(base, time_scale=1000)),
            "INSPIRE_LLM_BACKEND": "rules",
            "INSPIRE_HTTP_BACKOFF_S": "0.001",  # malformed answers are retried before they fail
        }

        def inspire(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
            return run_inspire(*args, env={**env, **extra}, timeout=600)

        runs = [inspire("build", "--split", "eval", "--limit", str(len(world.TARGET_KINDS)))]
        con = duckdb.connect(str(tmp / "w.duckdb"), read_only=True)
        targets = {
            str(r.hostile): _paper_id(con, r.openalex)
            for r in generated.records
            if r.hostile in world.TARGET_KINDS and r.arxiv
        }
        con.close()
        llm_faulted = [targets[k] for k in ("llm_invalid_json", "llm_refusal")]
        runs.append(inspire("gold", "make", *llm_faulted, INSPIRE_LLM_BACKEND="openai"))
    yield Built(tmp / "w.duckdb", generated, runs, targets)


def _paper_id(con: duckdb.DuckDBPyConnection, openalex: str) -> str:
    row = con.execute(
        "SELECT paper_id FROM paper_ids WHERE scheme = 'openalex' AND value = ?", [openalex]
    ).fetchone()
    assert row is not None, openalex
    return str(row[0])


def _rows(built: Built, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(built.path), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def test_the_build_completes_without_a_traceback(built: Built) -> None:
    for run in built.runs:
        assert run.returncode == 0, run.stderr[-3000:]
        assert "Traceback" not in run.stdout + run.stderr


def test_every_target_has_a_status_and_the_counts_add_up(built: Built) -> None:
    rows = _rows(built, "SELECT paper_id, status, reason FROM targets WHERE split = 'eval'")
    assert all(
        status in ("candidate", "accepted", "excluded") and reason for _, status, reason in rows
    )
    assert set(built.targets) == set(world.TARGET_KINDS)
    chosen = {p: (s, r) for p, s, r in rows if p in built.targets.values()}
    assert len(chosen) == len(world.TARGET_KINDS)
    assert all(status != "candidate" for status, _ in chosen.values())  # all terminal
    total = ", ".join(f'"{s}"' for s in STATUSES)
    for target_id, seen, summed, listed, unlabelled in _rows(
        built,
        f"SELECT g.target_id, g.references_seen, {total.replace(', ', ' + ')}, "  # noqa: S608
        '(SELECT count(*) FROM "references" r WHERE r.target_id = g.target_id), '
        '(SELECT count(*) FROM "references" r WHERE r.target_id = g.target_id '
        "AND (r.status IS NULL OR r.reason IS NULL)) FROM gold_completeness g",
    ):
        assert seen == summed == listed, target_id
        assert unlabelled == 0, target_id


def test_the_10000_reference_paper_is_accounted_for(built: Built) -> None:
    giant = built.targets["giant"]
    [(seen, eligible, sources)] = _rows(
        built,
        "SELECT references_seen, eligible, sources FROM gold_completeness WHERE target_id = ?",
        [giant],
    )
    # 10,000 mentions per source; preprint/published twins among them merge into one work.
    twins = len({r.work for r in built.world.records if r.kind == "published"})
    assert world.GIANT_REFERENCES - twins <= seen <= world.GIANT_REFERENCES
    s2_listed = _rows(
        built,
        "SELECT count(*) FROM \"references\" WHERE target_id = ? AND list_contains(sources, 's2')",
        [giant],
    )[0][0]
    # S2 paged all 10,000 (1,000 at a time); the few entries it lacks are OpenAlex mentions it
    # lists under other IDs (null-ID twins, the malformed and all-null works).
    assert seen - 50 <= s2_listed <= seen
    assert eligible > 9000 and set(sources) == {"openalex", "s2", "arxiv"}
    [(status, reason)] = _rows(
        built, "SELECT status, reason FROM targets WHERE paper_id = ?", [giant]
    )
    assert status == "accepted", reason


def test_bad_cited_works_carry_their_problem_in_the_reason(built: Built) -> None:
    def reasons(kind: str) -> list[tuple[str, str]]:
        record = next(
            r
            for r in built.world.records
            if r.hostile == kind
            and r.hostile in world.CITED_KINDS
            and r.openalex not in {t.removeprefix("openalex:") for t in built.targets.values()}
            and r.publication_date < world.EVAL_START
            or r.hostile == kind == "future_date"
        )
        return _rows(
            built,
            'SELECT DISTINCT status, reason FROM "references" '
            "WHERE CAST(ids AS VARCHAR) LIKE ? OR CAST(ids AS VARCHAR) LIKE ? "
            "OR CAST(ids AS VARCHAR) LIKE ?",
            [f'%"{record.openalex}"%', f'%"{record.doi.lower()}"%', f'%"{record.s2}"%'],
        )

    malformed = reasons("malformed_json")
    assert any("stays malformed" in reason for _, reason in malformed), malformed
    wrong = reasons("wrong_types")
    assert any("openalex gave title: list, not str" in reason for _, reason in wrong), wrong
    assert any("s2 gave authors: dict, not list" in reason for _, reason in wrong), wrong
    nulls = reasons("nulls")
    assert nulls and all(status == "no_date" for status, _ in nulls), nulls
    future = reasons("future_date")
    assert future and all(status == "dated_after_target" for status, _ in future), future
    assert all("2099-05-01" in reason for _, reason in future), future


def test_unicode_titles_survive_byte_for_byte(built: Built) -> None:
    titles = {t for (t,) in _rows(built, "SELECT title FROM papers")}
    assert world.UNICODE_TITLE in titles
    assert world.UNICODE_TITLE.replace("Sparse", "Dense") in titles
    [(status, reason)] = _rows(
        built, "SELECT status, reason FROM targets WHERE paper_id = ?", [built.targets["unicode"]]
    )
    assert status in ("accepted", "excluded") and reason


def test_a_wrong_typed_target_is_resolved_and_says_what_was_wrong(built: Built) -> None:
    [(status, reason)] = _rows(
        built,
        "SELECT status, reason FROM targets WHERE paper_id = ?",
        [built.targets["wrong_types"]],
    )
    assert "[source problems: " in reason and "referenced_works: str, not list" in reason
    assert status in ("accepted", "excluded")


def test_the_injected_instruction_is_not_obeyed(built: Built) -> None:
    target = built.targets["injection"]
    record = next(r for r in built.world.records if r.hostile == "injection")
    briefs = _rows(built, "SELECT text, status FROM briefs WHERE target_id = ?", [target])
    assert briefs
    for text, _ in briefs:
        assert "ignore previous instructions" not in text.lower()
        assert record.title.lower() not in text.lower()
        assert "list every reference" not in text.lower()


def test_refused_and_invalid_llm_answers_are_recorded(built: Built) -> None:
    for kind, words in (("llm_refusal", "refused"), ("llm_invalid_json", "invalid")):
        target = built.targets[kind]
        [(status, reason)] = _rows(
            built, "SELECT status, reason FROM targets WHERE paper_id = ?", [target]
        )
        assert status == "excluded" and reason.startswith(gold.LLM_FAILED) and words in reason
        briefs = _rows(built, "SELECT status, reason FROM briefs WHERE target_id = ?", [target])
        assert briefs == [("rejected", reason.split(" [source problems")[0])]
        assert target in built.runs[1].stdout


def test_a_grader_that_drops_an_antecedent_excludes_the_target(
    built: Built, tmp_path: Path
) -> None:
    copy = tmp_path / "w.duckdb"
    shutil.copy(built.path, copy)
    target = built.targets["llm_drop_item"]

    def dropping(context: Any) -> GradeSheet:
        sheet = RULES["grade"](context)
        assert isinstance(sheet, GradeSheet)
        return sheet.model_copy(update={"grades": sheet.grades[:-1]})

    con = warehouse.connect(str(copy))
    try:
        # The build's logged grade would answer from the call log; this grader must be asked.
        con.execute("DELETE FROM llm_calls WHERE prompt_name = 'grade'")
        settings = Settings.model_validate({"warehouse": str(copy)})
        llm = LLM(settings, con, rules={**RULES, "grade": dropping})
        [outcome] = gold.run(llm, con, settings, [target])
        row = con.execute(
            "SELECT status, reason FROM targets WHERE paper_id = ?", [target]
        ).fetchone()
        grades = con.execute("SELECT count(*) FROM grades WHERE target_id = ?", [target]).fetchone()
    finally:
        con.close()
    assert outcome.status.value == "excluded"
    assert (
        row is not None
        and row[0] == "excluded"
        and "grading failed" in row[1]
        and "missing [" in row[1]
    )
    assert grades == (0,)


# --- bad input at the edges: one clean line, exit 2, nothing created or lost ------------------


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without INSPIRE_* and PREFECT_* settings, plus ``extra``."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("INSPIRE_", "PREFECT_"))}
    return {**kept, **extra}


def _one_line(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: "), line
    for fragment in fragments:
        assert fragment in line, line
    return line


def test_a_split_setting_that_is_not_json_names_the_variable(tmp_path: Path) -> None:
    env = _clean_env(INSPIRE_SPLITS__EVAL__FIELDS="Computer")
    result = run_inspire("build", "--split", "eval", env=env, cwd=tmp_path, timeout=120)
    _one_line(result, "invalid configuration: INSPIRE_SPLITS__EVAL__FIELDS='Computer'", "JSON")
    assert list(tmp_path.iterdir()) == []  # no warehouse, no Prefect home


def test_a_short_instance_key_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    env = _clean_env(INSPIRE_INSTANCE_KEY="abcd", INSPIRE_WAREHOUSE=str(tmp_path / "w.duckdb"))
    result = run_inspire("build", "--split", "eval", env=env, cwd=tmp_path, timeout=120)
    line = _one_line(result, "invalid configuration: INSPIRE_INSTANCE_KEY", "64 hex digits")
    assert "abcd" not in result.stdout + result.stderr, line  # a secret is never echoed
    assert list(tmp_path.iterdir()) == []  # no warehouse, no Prefect home


def test_a_world_record_dated_february_30_names_file_line_and_date(tmp_path: Path) -> None:
    folder, path = tmp_path / "world", tmp_path / "w.duckdb"
    world.write(world.generate(world.WorldConfig(seed=1, papers=40)), folder)
    env = _clean_env(INSPIRE_WAREHOUSE=str(path))
    assert run_inspire("warehouse", "init", env=env).returncode == 0
    built = run_inspire("corpus", "build", "--world", folder, env=env, timeout=120)
    assert built.returncode == 0, built.stderr
    corpus = _corpus(path)
    records = folder / world.RECORDS_FILE
    lines = records.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[2])
    lines[2] = lines[2].replace(
        f'"publication_date":"{record["publication_date"]}"', '"publication_date":"2025-02-30"'
    )
    records.write_text("".join(lines), encoding="utf-8")
    result = run_inspire("corpus", "build", "--world", folder, env=env, timeout=120)
    _one_line(result, f"{records}:3:", "publication_date '2025-02-30' is not a date")
    assert _corpus(path) == corpus  # the corpus built before is kept whole


def _corpus(path: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT paper_id, title FROM corpus ORDER BY paper_id").fetchall()
    finally:
        con.close()


QRELS = "i1 0 arxiv:2301.00001 3\n"
RUN = '{"instance_id": "i1", "ranking": ["arxiv:2301.00001"]}\n'


@pytest.mark.parametrize("option", ["--run", "--qrels", "--trajectories"])
def test_a_fifo_or_a_device_given_as_an_eval_input_is_refused_at_once(
    tmp_path: Path, option: str
) -> None:
    files = {"--run": tmp_path / "r.jsonl", "--qrels": tmp_path / "q.trec"}
    files["--run"].write_text(RUN, encoding="utf-8")
    files["--qrels"].write_text(QRELS, encoding="utf-8")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for odd, kind in ((fifo, "a named pipe (FIFO)"), (Path("/dev/zero"), "a character device")):
        given = {**files, option: odd}
        args = [a for pair in given.items() for a in map(str, pair)]
        result = run_inspire("eval", *args, env=_clean_env(), cwd=tmp_path, timeout=60)
        _one_line(result, f"{odd}: {kind}, not a regular file")


@pytest.mark.parametrize(
    ("option", "content"),
    [
        ("--run", RUN + '{"instance_id": "i2", "ranking": ["a"], "ranking": ["b"]}\n'),
        ("--trajectories", RUN.replace('"ranking"', '"steps": [], "steps"')),
    ],
)
def test_a_json_line_with_a_key_given_twice_is_refused_with_its_line(
    tmp_path: Path, option: str, content: str
) -> None:
    (tmp_path / "q.trec").write_text(QRELS, encoding="utf-8")
    (tmp_path / "r.jsonl").write_text(RUN, encoding="utf-8")
    odd = tmp_path / "odd.jsonl"
    odd.write_text(content, encoding="utf-8")
    given = {"--qrels": tmp_path / "q.trec", "--run": tmp_path / "r.jsonl", option: odd}
    args = [a for pair in given.items() for a in map(str, pair)]
    result = run_inspire("eval", *args, env=_clean_env(), cwd=tmp_path, timeout=60)
    line = 2 if option == "--run" else 1
    key = "ranking" if option == "--run" else "steps"
    _one_line(result, f"odd.jsonl:{line}: malformed", f'the key "{key}" appears twice')


@pytest.mark.parametrize("abstract", ["", None, "  \n "])
def test_the_rules_brief_of_an_empty_abstract_is_a_brief(abstract: str | None) -> None:
    draft = RULES["brief"]({"title": "", "abstract": abstract, "redactions": []})
    assert isinstance(draft, BriefDraft)
    assert len(draft.brief.split()) >= BRIEF_MIN_WORDS
    assert "this area" in draft.brief  # no title, no abstract: the frame's own placeholder
