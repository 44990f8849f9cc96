"""Decisions make versions: a reviewed version written from a planted version's own records,
and the audit failing what a curator marked leaking."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from inspire_build import boundary, boundary_store, exports, splits
from inspire_build.config import Settings
from inspire_build.errors import InspireError
from inspire_build.gold import AuditReport
from inspire_build.review import apply
from inspire_build.review.curation import Curation
from tests.unit.review.conftest import IA, IB, VERSION

# Replay: these tests reach no source, so a search the store cannot answer is "not run".
SETTINGS = Settings(llm_backend="rules", instance_key="00" * 32, source_mode="replay")


def _table(con: duckdb.DuckDBPyConnection, query: str, version: str) -> list[tuple[object, ...]]:
    return con.execute(query, [version]).fetchall()


def test_nothing_to_apply_is_an_error(con: duckdb.DuckDBPyConnection, planted: str) -> None:
    with pytest.raises(InspireError, match="nothing to apply"):
        apply.apply_reviews(con, SETTINGS, "eval")


def test_a_reviewed_version_applies_the_decisions_and_leaves_the_old_one(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    review = Curation(con, SETTINGS, planted, "ada")
    review.record(IA, "grade", {"paper_id": "p3", "tier": "2", "role": "baseline"})
    review.record(IA, "grade", {"paper_id": "p1", "tier": "3", "role": "problem"})
    review.record(IB, "reject", {"reason": "not computer science"})
    old_qrels = _table(con, "SELECT * FROM qrels WHERE version_id = ? ORDER BY ALL", VERSION)
    row = apply.apply_reviews(con, SETTINGS, "eval", label="reviewed")
    made = row["version_id"]
    assert made.startswith("eval-") and made != VERSION
    assert splits.latest_version(con, "eval") == made
    assert row["counts"] == {"targets_accepted": 2, "instances": 1, "graded_antecedents": 3}
    assert row["reviews"]["base_version"] == VERSION and row["reviews"]["review_ids"] == [1, 2, 3]
    assert row["reviews"]["figures"]["rejected"] == 1
    assert row["reviews"]["figures"]["tier_changes"] == 2
    [(iid, target, brief_id)] = _table(
        con, "SELECT instance_id, target_id, brief_id FROM instances WHERE version_id = ?", made
    )
    assert target == "tA" and iid != IA and brief_id == "bA"
    assert _table(
        con, "SELECT paper_id, tier, role FROM qrels WHERE version_id = ? ORDER BY 1", made
    ) == [("p1", 3, "problem"), ("p2", 2, "component"), ("p3", 2, "baseline")]
    assert len(_table(con, "SELECT * FROM version_findings WHERE version_id = ?", made)) == 4
    assert _table(con, "SELECT * FROM qrels WHERE version_id = ? ORDER BY ALL", VERSION) == (
        old_qrels
    )  # the old version is unchanged
    stored = json.loads(
        str(_table(con, "SELECT reviews FROM split_versions WHERE version_id = ?", made)[0][0])
    )
    assert stored == row["reviews"]


def test_applying_again_gives_the_same_version_and_new_decisions_a_new_one(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    review = Curation(con, SETTINGS, planted, "ada")
    review.record(IB, "reject", {"reason": "off topic"})
    first = apply.apply_reviews(con, SETTINGS, "eval")["version_id"]
    assert apply.base_of(con, first) == VERSION
    assert apply.apply_reviews(con, SETTINGS, "eval")["version_id"] == first  # from the base
    # reviewed on the reviewed version: the rejection taken back brings B back
    again = Curation(con, SETTINGS, first, "bo")
    [iid] = [r.instance_id for r in again.rows()]
    again.record(iid, "accept", {})
    review.record(IB, "accept", {"reason": "on reflection, fine"})
    second = apply.apply_reviews(con, SETTINGS, "eval")
    assert second["version_id"] not in (first, VERSION)
    assert second["counts"]["instances"] == 2
    assert second["reviews"]["figures"]["accepted"] == 2
    assert _table(con, "SELECT count(*) FROM split_versions WHERE version_id = ?", VERSION) == [
        (1,)
    ]


def test_an_edited_brief_replaces_the_brief_and_its_findings(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    review = Curation(con, SETTINGS, planted, "ada")
    text = "How should requests be routed when cluster loads shift and latency must stay low?"
    review.record(IA, "brief", {"text": text})
    made = apply.apply_reviews(con, SETTINGS, "eval")["version_id"]
    rows = _table(
        con,
        "SELECT target_id, brief, brief_id FROM instances WHERE version_id = ? ORDER BY 1",
        made,
    )
    assert rows[0][:2] == ("tA", text) and str(rows[0][2]).startswith("review-")
    assert rows[1][1].startswith("Ranking documents")


def test_the_audit_fails_what_a_curator_marked_leaking_while_that_brief_stands(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    review = Curation(con, SETTINGS, planted, "ada")
    review.record(IB, "leak", {"leaking": "true", "note": "names the method"})
    assert apply.leak_failures(con, VERSION) == [
        (IB, "curator: marked leaking by ada: names the method")
    ]
    passed = AuditReport(VERSION, 2, {}, 0, [])
    failed = apply.with_leak_marks(passed, apply.leak_failures(con, VERSION))
    assert not failed.ok and failed.failures == {"curator": 1}
    assert f"  FAILED {IB}: curator: marked leaking by ada: names the method" in failed.lines()
    assert failed.lines()[-1] == "audit FAILED for 1 instance(s)"
    lexical = AuditReport(VERSION, 2, {"lexical": 1}, 0, [(IB, "lexical: contains: x")])
    both = apply.with_leak_marks(lexical, apply.leak_failures(con, VERSION))
    assert both.failed == [
        (IB, "lexical: contains: x; curator: marked leaking by ada: names the method")
    ]
    assert apply.with_leak_marks(passed, []) is passed
    # a rewritten brief is a new text: the mark no longer holds on the reviewed version
    review.record(IB, "brief", {"text": "Ordering documents well when their topics drift is open."})
    made = apply.apply_reviews(con, SETTINGS, "eval")["version_id"]
    assert apply.leak_failures(con, made) == []


KEYED = Settings(llm_backend="rules", instance_key="5a" * 32, source_mode="replay")  # a real key


def test_a_competitor_with_a_reviewed_versions_export_recovers_nothing(
    con: duckdb.DuckDBPyConnection, planted: str, tmp_path: Path
) -> None:
    """The public side of a version --apply-reviews made, attacked as the pipeline's own are:
    its instance IDs hash from no public string, not even the base version's public IDs beside
    its own; its card's review section names no target; and a curator's brief that names its
    target's title is refused at export, whatever the reviews say."""
    review = Curation(con, KEYED, planted, "ada")
    review.record(IA, "grade", {"paper_id": "p3", "tier": "2", "role": "baseline"})
    review.record(IB, "leak", {"leaking": "true", "note": "names the method"})
    made = apply.apply_reviews(con, KEYED, "eval")["version_id"]
    exports.export(
        con, KEYED, "eval", made, tmp_path / "export", force=True
    )  # the hash attack and leak scan
    base_ids = [
        r[0] for r in _table(con, "SELECT instance_id FROM instances WHERE version_id = ?", VERSION)
    ]
    attack = boundary_store.attack_version(con, KEYED, made, extra_publics=base_ids)
    assert attack.hash.tried > 0 and attack.hash.recovered == {}
    made_ids = {
        r[0] for r in _table(con, "SELECT instance_id FROM instances WHERE version_id = ?", made)
    }
    assert made_ids.isdisjoint(base_ids)  # the two versions' IDs do not link their instances
    card = (tmp_path / "export" / "dataset_card.md").read_text(encoding="utf-8")
    section = card[card.index("## Curator review") : card.index("## Information boundary")]
    needles = exports.leak_needles(con, made)
    assert needles and boundary.found_in(needles, boundary.normal_text(section)) == []
    assert "names the method" not in card and "ada" not in section  # no note, no curator

    [(title,)] = con.execute("SELECT title FROM targets WHERE paper_id = 'tA'").fetchall()
    review.record(IA, "brief", {"text": f"How could {title} be made to scale further?"})
    leaky = apply.apply_reviews(con, KEYED, "eval")["version_id"]
    with pytest.raises(exports.ExportLeak, match="names a target"):
        exports.export(con, KEYED, "eval", leaky, tmp_path / "leaky", force=True)
    assert not (tmp_path / "leaky").exists()
