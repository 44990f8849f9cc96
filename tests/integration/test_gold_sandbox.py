"""The rules backend end to end on a sandbox world with 200 targets: briefs that do not leak,
graded antecedents, and a rerun that makes no LLM call."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import NamedTuple

import duckdb
import pytest

from inspire_build import audit_checks, gold, warehouse
from inspire_build.briefs import coined_names, mentions, title_ngrams
from inspire_build.config import Settings
from inspire_build.lineage_rows import write
from inspire_build.resolve import ALL_SOURCES, resolve_lineage
from inspire_build.sandbox import server, world
from inspire_build.selection import select_targets
from inspire_build.sources import make_client

TARGETS = 200


class Built(NamedTuple):
    con: duckdb.DuckDBPyConnection
    settings: Settings
    targets: list[str]
    outcomes: list[gold.Verdict]
    calls: int


@pytest.fixture(scope="module")
def built() -> Iterator[Built]:
    generated = world.generate(world.WorldConfig(seed=5, papers=2000))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        settings = server.settings_for(base)
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        client = make_client(settings, con, mode="live")
        chosen = select_targets(client, con, settings, "eval", limit=TARGETS).selected
        results = resolve_lineage(chosen, client)
        write(con, results, "eval", ALL_SOURCES)
    targets = list(dict.fromkeys(r.work.paper_id for r in results))
    llm = gold.make_llm(settings, con)
    outcomes = gold.run(llm, con, settings, targets)
    yield Built(con, settings, targets, outcomes, llm.calls_made)
    con.close()


def test_briefs_do_not_contain_title_4grams_or_coined_names(built: Built) -> None:
    rows = built.con.execute(
        "SELECT p.title, p.abstract, b.text FROM briefs b JOIN papers p ON p.paper_id = b.target_id"
    ).fetchall()
    assert len(rows) >= TARGETS * 0.95
    clean = 0
    for title, abstract, text in rows:
        grams = [g for g in title_ngrams(title) if mentions(text, g)]
        # whole words: an acronym such as TRIS is no leak inside "trisolven"
        names = [n for n in coined_names(title, abstract or "") if mentions(text, n)]
        clean += not grams and not names
    print(f"{clean} of {len(rows)} briefs contain no title 4-gram and no coined name")
    assert clean / len(rows) >= 0.99


def test_every_brief_has_a_verdict_and_four_findings(built: Built) -> None:
    briefs = built.con.execute("SELECT brief_id, status, reason FROM briefs").fetchall()
    assert all(status in ("accepted", "rejected") and reason for _, status, reason in briefs)
    per_brief = built.con.execute(
        "SELECT count(*) FROM audit_findings GROUP BY brief_id HAVING count(*) <> 4"
    ).fetchall()
    assert per_brief == []
    verdicts = Counter(o.status.value for o in built.outcomes)
    print(verdicts)
    assert verdicts["accepted"] >= 0.9 * len(built.targets)


def test_grading_decides_tier_zero_and_keeps_t3_the_rarest(built: Built) -> None:
    tiers = dict(built.con.execute("SELECT tier, count(*) FROM grades GROUP BY 1").fetchall())
    print(tiers)
    assert set(tiers) == {0, 1, 2, 3}
    assert tiers[3] < tiers[2] and tiers[3] < tiers[1]
    roles = {r for (r,) in built.con.execute("SELECT DISTINCT role FROM grades").fetchall()}
    assert {"method-foundation", "component", "background", None} <= roles
    assert built.con.execute(
        "SELECT count(*) FROM grades WHERE (tier = 0) <> (role IS NULL) OR rationale = ''"
    ).fetchone() == (0,)
    # gold_completeness counts each graded target's tier-0 references.
    mismatched = built.con.execute(
        "SELECT count(*) FROM gold_completeness c JOIN (SELECT target_id, "
        "count(*) FILTER (WHERE tier = 0) AS zero FROM grades GROUP BY 1) g USING (target_id) "
        "WHERE c.not_antecedents IS DISTINCT FROM g.zero"
    ).fetchone()
    assert mismatched == (0,)


def test_an_identical_rerun_makes_no_llm_call(built: Built) -> None:
    before = built.con.execute("SELECT count(*) FROM llm_calls").fetchone()
    assert before is not None and before[0] == built.calls > 0
    again = gold.make_llm(built.settings, built.con)
    gold.run(again, built.con, built.settings, built.targets[:25])
    assert again.calls_made == 0
    assert built.con.execute("SELECT count(*) FROM llm_calls").fetchone() == before


def test_the_retrieval_audit_flags_a_brief_that_copies_the_abstract(built: Built) -> None:
    target = built.targets[0]
    row = built.con.execute("SELECT abstract FROM papers WHERE paper_id = ?", [target]).fetchone()
    assert row is not None and row[0]
    finding = audit_checks.retrieval(
        built.con, "copy", row[0], target, built.settings.audit_retrieval_k
    )
    assert not finding.passed and finding.detail.startswith("target ranks 1 ")
