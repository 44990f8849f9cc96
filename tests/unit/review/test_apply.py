"""Decisions make versions: a reviewed version written from a planted version's own records,
refused while a curator's brief breaks the build's rules, and the audit failing what a curator
marked leaking."""

from __future__ import annotations

import datetime as dt
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
from inspire_build.tables import reviews as reviews_table
from tests.unit.review.conftest import GOOD_A, GOOD_B, IA, IB, VERSION, decide

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
    review = Curation(con, SETTINGS, planted)
    decide(review, IA, "grade", {"paper_id": "p3", "tier": "2", "role": "baseline"})
    decide(review, IA, "grade", {"paper_id": "p1", "tier": "3", "role": "problem"})
    decide(review, IB, "reject", {"reason": "not computer science"})
    old_qrels = _table(con, "SELECT * FROM qrels WHERE version_id = ? ORDER BY ALL", VERSION)
    row = apply.apply_reviews(con, SETTINGS, "eval", label="reviewed")
    made = row["version_id"]
    assert made.startswith("eval-") and made != VERSION
    assert splits.latest_version(con, "eval") == made
    # the build accepted 2; one is dropped by its curator: the counts add up to 1 instance
    assert row["counts"] == {
        "targets_accepted": 2, "instances": 1, "graded_antecedents": 3, "dropped_by_curators": 1
    }  # fmt: skip
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
    review = Curation(con, SETTINGS, planted)
    decide(review, IB, "reject", {"reason": "off topic"})
    first = apply.apply_reviews(con, SETTINGS, "eval")["version_id"]
    assert apply.base_of(con, first) == VERSION
    assert apply.apply_reviews(con, SETTINGS, "eval")["version_id"] == first  # from the base
    # reviewed on the reviewed version: the rejection taken back brings B back
    again = Curation(con, SETTINGS, first)
    [iid] = [r.instance_id for r in again.rows()]
    decide(again, iid, "accept", {}, curator="bo")
    decide(review, IB, "accept", {"reason": "on reflection, fine"})
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
    review = Curation(con, SETTINGS, planted)
    text = GOOD_A
    decide(review, IA, "brief", {"text": text})
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
    review = Curation(con, SETTINGS, planted)
    decide(review, IB, "leak", {"leaking": "true", "note": "names the method"})
    assert apply.leak_failures(con, VERSION) == [
        (IB, "curator: marked leaking by ada: names the method")
    ]
    passed = AuditReport(VERSION, 2, {}, 0, [])
    failed = apply.with_leak_marks(passed, apply.leak_failures(con, VERSION))
    assert not failed.ok and failed.failures == {"curator": 1}
    assert f"  FAILED {IB}: curator: marked leaking by ada: names the method" in failed.lines()
    assert failed.lines()[-1] == "leakage audit FAILED for 1 instance(s)"
    lexical = AuditReport(VERSION, 2, {"lexical": 1}, 0, [(IB, "lexical: contains: x")])
    both = apply.with_leak_marks(lexical, apply.leak_failures(con, VERSION))
    assert both.failed == [
        (IB, "lexical: contains: x; curator: marked leaking by ada: names the method")
    ]
    assert apply.with_leak_marks(passed, []) is passed
    # a rewritten brief is a new text: the mark no longer holds on the reviewed version
    decide(review, IB, "brief", {"text": GOOD_B})
    made = apply.apply_reviews(con, SETTINGS, "eval")["version_id"]
    assert apply.leak_failures(con, made) == []


KEYED = Settings(llm_backend="rules", instance_key="5a" * 32, source_mode="replay")  # a real key


def test_a_competitor_with_a_reviewed_versions_export_recovers_nothing(
    con: duckdb.DuckDBPyConnection, planted: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The public side of a version --apply-reviews made, attacked as the pipeline's own are:
    its instance IDs hash from no public string, not even the base version's public IDs beside
    its own; its card's review section names no target; and a curator's brief that names its
    target's title is refused at export, whatever the reviews say."""
    review = Curation(con, KEYED, planted)
    decide(review, IA, "grade", {"paper_id": "p3", "tier": "2", "role": "baseline"})
    decide(review, IB, "leak", {"leaking": "true", "note": "names the method"})
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

    # A brief that names its target's title breaks the lexical rule, so the page keeps it as a
    # draft; a row written before drafts existed (migration 0024) is refused by the rules too.
    # Were both bypassed, the export's own leak scan still refuses it.
    [(title,)] = con.execute("SELECT title FROM targets WHERE paper_id = 'tA'").fetchall()
    leak = f"How could {title} be made to scale further? {GOOD_A}"
    decide(review, IA, "brief", {"text": leak})
    with pytest.raises(InspireError, match=rf"instance {IA} of {VERSION} \(review #3 by ada, a d"):
        apply.apply_reviews(con, KEYED, "eval")
    _old_row(con, leak)
    with pytest.raises(InspireError, match=r"\(review #4 by ada\): lexical: contains: Graph"):
        apply.apply_reviews(con, KEYED, "eval")
    monkeypatch.setattr(apply, "refused_briefs", lambda *_: [])
    leaky = apply.apply_reviews(con, KEYED, "eval")["version_id"]
    with pytest.raises(exports.ExportLeak, match="names a target"):
        exports.export(con, KEYED, "eval", leaky, tmp_path / "leaky", force=True)
    assert not (tmp_path / "leaky").exists()


def _old_row(con: duckdb.DuckDBPyConnection, text: str) -> None:
    """A brief review of A as a row written before migration 0024: no draft, no based_on."""
    reviews_table.add(
        con,
        {
            "split": "eval", "version_id": VERSION, "instance_id": IA, "target_id": "tA",
            "paper_id": None, "action": "brief", "curator": "ada",
            "created_at": dt.datetime.now(dt.UTC), "before": {"text": "x"},
            "after": {"text": text, "findings": []},
        },
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "broken"),
    [
        ("Routing.", "length: 1 words, outside 120-250"),
        (f"{GOOD_A} It reaches 92.3%.", "lexical: contains: 92.3%"),
    ],
)
def test_apply_reviews_refuses_a_draft_brief_naming_its_instance(
    con: duckdb.DuckDBPyConnection, planted: str, text: str, broken: str
) -> None:
    review = Curation(con, SETTINGS, planted)
    decide(review, IA, "brief", {"text": text})
    with pytest.raises(InspireError) as refused:
        apply.apply_reviews(con, SETTINGS, "eval")
    said = str(refused.value)
    assert said.startswith("refused: 1 curator brief(s) break the build's rules")
    assert f"instance {IA} of {VERSION} (review #1 by ada, a draft): {broken}. Save" in said
    assert "or discard the draft, then apply again" in said
    assert con.execute("SELECT count(*) FROM split_versions").fetchone() == (1,)  # none written
    # a draft on a rejected instance goes into no version: nothing to refuse
    decide(review, IA, "reject", {"reason": "off topic"})
    assert apply.apply_reviews(con, SETTINGS, "eval")["counts"]["instances"] == 1


def test_a_discarded_draft_lets_the_reviews_apply(
    con: duckdb.DuckDBPyConnection, planted: str
) -> None:
    review = Curation(con, SETTINGS, planted)
    decide(review, IA, "brief", {"text": "Routing."})
    page = review.page(IA)
    decide(review, IA, "brief", {"text": str(page["instance"]["brief"])})  # the discard form
    made = apply.apply_reviews(con, SETTINGS, "eval")
    assert made["reviews"]["figures"]["briefs_edited"] == 0
    assert made["reviews"]["review_ids"] == [2]
