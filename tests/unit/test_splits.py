"""Split versions: an ID that hashes the config, the code and the content, so a version never
changes under its ID; a version holds exactly its own build's targets; "latest" is the version
written last; a label never changes."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import duckdb

from inspire_build import splits, warehouse
from inspire_build.config import Settings

KEY = "3c" * 32
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def settings(**update: object) -> Settings:
    return Settings(instance_key=KEY, **update)  # type: ignore[arg-type]


def accept(con: duckdb.DuckDBPyConnection, target: str, brief: str, tier: int = 2) -> None:
    """One accepted eval target with an accepted brief and one antecedent of ``tier``."""
    warehouse.upsert(
        con,
        "targets",
        [
            {
                "split": "eval",
                "paper_id": target,
                "title": f"Title of {target}",
                "first_public_date": dt.date(2025, 6, 1),
                "cutoff_date": dt.date(2025, 3, 1),
                "status": "accepted",
                "reason": "accepted",
                "updated_at": NOW,
            }
        ],
        ["split", "paper_id"],
    )
    warehouse.replace_where(
        con,
        "briefs",
        {"target_id": target},
        [
            {
                "brief_id": f"b-{target}-{brief}",
                "target_id": target,
                "attempt": 1,
                "text": brief,
                "word_count": len(brief.split()),
                "prompt_name": "brief",
                "prompt_hash": "h",
                "backend": "rules",
                "model": "rules-v1",
                "status": "accepted",
                "reason": "passed",
                "created_at": NOW,
            }
        ],
        ["brief_id"],
    )
    warehouse.upsert(
        con,
        "grades",
        [
            {
                "target_id": target,
                "paper_id": f"{target}-ref",
                "tier": tier,
                "role": "component",
                "rationale": "why",
                "backend": "rules",
                "model": "rules-v1",
                "prompt_hash": "h",
            }
        ],
        ["target_id", "paper_id"],
    )


def rows(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[object, ...]]:
    return con.execute(
        "SELECT i.target_id, i.brief, q.paper_id, q.tier FROM instances i JOIN qrels q "
        "USING (version_id, instance_id) WHERE version_id = ? ORDER BY 1",
        [version],
    ).fetchall()


def latest(con: duckdb.DuckDBPyConnection) -> str:
    return splits.latest_version(con, "eval")


def test_the_same_config_and_gold_give_the_same_version_which_becomes_latest_again(
    con: duckdb.DuckDBPyConnection,
) -> None:
    accept(con, "openalex:W1", "A brief about one problem.")
    first = splits.write_version(con, settings(), "eval")
    other = splits.write_version(con, settings(cutoff_jitter_days=7), "eval")
    assert other.version_id != first.version_id and latest(con) == other.version_id
    time.sleep(0.01)
    again = splits.write_version(con, settings(), "eval")
    assert again.version_id == first.version_id and again.notes == ()
    assert latest(con) == first.version_id  # a rewrite counts as the latest write
    created, written = con.execute(
        "SELECT created_at, written_at FROM split_versions WHERE version_id = ?",
        [first.version_id],
    ).fetchone() or (None, None)
    assert created == first.created_at and written > created


def test_new_gold_under_the_same_config_is_a_new_version_and_the_old_one_stays(
    con: duckdb.DuckDBPyConnection,
) -> None:
    accept(con, "openalex:W1", "A brief about one problem.", tier=2)
    old = splits.write_version(con, settings(), "eval").version_id
    before = rows(con, old)
    accept(con, "openalex:W1", "A brief about one problem.", tier=3)  # regraded
    new = splits.write_version(con, settings(), "eval").version_id
    assert new != old and rows(con, old) == before
    assert [r[3] for r in before] == [2] and [r[3] for r in rows(con, new)] == [3]


def test_a_version_holds_exactly_the_targets_of_its_own_selection(
    con: duckdb.DuckDBPyConnection,
) -> None:
    for n in range(1, 6):
        accept(con, f"openalex:W{n}", f"A brief about problem {n}.")
    full = splits.write_version(con, settings(), "eval")
    limited = splits.write_version(con, settings(), "eval", targets=["openalex:W2", "arxiv:x"])
    assert full.counts["instances"] == 5 and limited.counts["instances"] == 1
    assert [r[0] for r in rows(con, limited.version_id)] == ["openalex:W2"]
    assert limited.version_id != full.version_id


def test_a_label_never_changes_and_the_refusal_is_said(con: duckdb.DuckDBPyConnection) -> None:
    accept(con, "openalex:W1", "A brief about one problem.")
    first = splits.write_version(con, settings(), "eval", label="paper-run")
    again = splits.write_version(con, settings(), "eval", label="renamed")
    assert again.version_id == first.version_id and again.label == "paper-run"
    assert "labels never change" in again.notes[0] and "'renamed'" in again.notes[0]
    [(label,)] = con.execute("SELECT label FROM split_versions").fetchall()
    assert label == "paper-run"
    assert splits.write_version(con, settings(), "eval").label == "paper-run"


def test_the_version_hashes_the_code_and_the_llm_host(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "lineage.py").write_text("RULE = 1\n")
    before = splits.fingerprint(tmp_path)
    (tmp_path / "pkg" / "__pycache__" / "lineage.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "notes.txt").write_text("not code")
    assert splits.fingerprint(tmp_path) == before
    (tmp_path / "pkg" / "lineage.py").write_text("RULE = 2\n")
    assert splits.fingerprint(tmp_path) != before
    one = splits.config_hash(settings(llm_base_url="https://api.openai.com/v1"), "eval")
    two = splits.config_hash(settings(llm_base_url="http://127.0.0.1:8000/v1"), "eval")
    assert one != two
    assert splits.config_hash(settings(grade_readings=1), "eval") != splits.config_hash(
        settings(), "eval"
    )
    plain = splits.config_hash(settings(), "eval")
    options = (
        {"llm_temperature": 0.2},
        {"llm_seed": 3},
        {"llm_system_prompt": "Be terse."},
        {"llm_response_format": "json_object"},
    )
    for option in options:
        assert splits.config_hash(settings(**option), "eval") != plain, option


def test_a_version_keeps_its_grades_and_findings_when_a_target_is_regraded(
    con: duckdb.DuckDBPyConnection,
) -> None:
    accept(con, "openalex:W1", "A brief about one problem.", tier=2)
    brief_id = "b-openalex:W1-A brief about one problem."
    finding = {"brief_id": brief_id, "check": "lexical", "passed": True, "level": "none"}
    warehouse.upsert(con, "audit_findings", [{**finding, "detail": "clean"}], ["brief_id", "check"])
    old = splits.write_version(con, settings(), "eval").version_id
    kept = con.execute(
        "SELECT paper_id, tier, rationale FROM version_grades WHERE version_id = ?", [old]
    ).fetchall()
    assert kept == [("openalex:W1-ref", 2, "why")]
    accept(con, "openalex:W1", "A brief about one problem.", tier=3)  # regraded
    warehouse.upsert(con, "audit_findings", [{**finding, "detail": "new"}], ["brief_id", "check"])
    new = splits.write_version(con, settings(), "eval").version_id
    assert new != old
    assert (
        con.execute(
            "SELECT paper_id, tier, rationale FROM version_grades WHERE version_id = ?", [old]
        ).fetchall()
        == kept
    )
    details = con.execute(
        "SELECT version_id, detail FROM version_findings ORDER BY detail"
    ).fetchall()
    assert details == [(old, "clean"), (new, "new")]


def test_the_competitor_recovers_no_target_from_a_content_hashed_version(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """The version ID now hashes private content (target IDs, grades). Play the competitor on
    a version written that way: hash every candidate ID under every public string (the version
    ID among them) against its instance IDs, and rank the papers in each published cutoff's
    window by bm25 of the brief."""
    from inspire_build import boundary_store

    papers = [
        {
            "paper_id": f"openalex:W{n}",
            "title": f"Paper {n} on sharded {'graph' if n % 2 else 'token'} indexes",
            "abstract": f"We study sharded indexes for problem {n} in long documents.",
            "first_public_date": dt.date(2025, 6, 1),
            "date_precision": "day",
            "sources": ["openalex"],
            "updated_at": NOW,
        }
        for n in range(1, 13)
    ]
    warehouse.upsert(con, "papers", papers, ["paper_id"])
    for n in range(1, 7):
        accept(con, f"openalex:W{n}", f"A brief about sharded indexes for problem {n}.")
    version = splits.write_version(con, settings(), "eval").version_id
    report = boundary_store.attack_version(con, settings(), version)
    assert report.instances == 6 and report.hash.tried > 0
    assert report.hash.recovered == {}
    assert version in boundary_store.public_strings(con, version)  # the ID itself was tried
