"""The search identity check against the sandbox's OpenAlex: a brief that is its target's
abstract ranks the target first among the works its published cutoff allows, and fails; a
brief about nothing in particular passes; a build records the check for every brief, one
search each, and stores its responses like every other request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import duckdb
import pytest

from inspire_build import audit_checks, boundary, gold, warehouse
from inspire_build.config import Settings
from inspire_build.http import HttpClient
from inspire_build.lineage_rows import write
from inspire_build.models import AuditCheck
from inspire_build.resolve import ALL_SOURCES, resolve_lineage
from inspire_build.sandbox import server, world
from inspire_build.selection import select_targets
from inspire_build.sources import make_client

TARGETS = 12
# A brief about nothing the world's papers speak of: no word in common with any of them.
CLEAN = "Orchards: ladders, pickers, pears, growers, cider presses, frost."


class Resolved(NamedTuple):
    con: duckdb.DuckDBPyConnection
    settings: Settings
    client: HttpClient
    targets: list[str]


@pytest.fixture(scope="module")
def resolved() -> Iterator[Resolved]:
    generated = world.generate(world.WorldConfig(seed=11, papers=600))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        settings = server.settings_for(base)
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        client = make_client(settings, con, mode="live")
        chosen = select_targets(client, con, settings, "eval", limit=TARGETS).selected
        results = resolve_lineage(chosen, client)
        write(con, results, "eval", ALL_SOURCES)
        targets = list(dict.fromkeys(r.work.paper_id for r in results if r.cutoff))
        yield Resolved(con, settings, client, targets)
        con.close()


def test_a_brief_that_is_its_targets_abstract_fails_and_a_clean_one_passes(
    resolved: Resolved,
) -> None:
    con, settings = resolved.con, resolved.settings
    failed, planted = 0, 0
    for target_id in resolved.targets:
        inputs = gold.load_inputs(con, target_id)
        if not inputs.abstract:
            continue
        searching = audit_checks.search_for(
            resolved.client, con, target_id, settings.cutoff_jitter_days
        )
        cutoff = con.execute(
            "SELECT cutoff_date FROM targets WHERE paper_id = ?", [target_id]
        ).fetchone()
        assert cutoff is not None
        assert searching.window == boundary.consistent_dates(cutoff[0], 30)
        leaked = audit_checks.search(
            searching,
            con,
            "b",
            inputs.abstract,
            target_id,
            settings.audit_search_k,
            settings.audit_search_share,
        )
        assert leaked.check is AuditCheck.SEARCH
        # bm25 over the sandbox's template abstracts may put a near twin first
        assert leaked.detail.startswith(("target ranks 1 ", "target ranks 2 ")), leaked.detail
        clean = audit_checks.search(
            searching, con, "c", CLEAN, target_id, 10, settings.audit_search_share
        )
        assert clean.passed, clean.detail
        planted += 1
        failed += not leaked.passed
    assert planted >= 5 and failed >= 0.8 * planted


def test_the_build_runs_the_search_check_on_every_brief_once_and_stores_its_answers(
    resolved: Resolved,
) -> None:
    con, settings = resolved.con, resolved.settings
    before = resolved.client.stats["openalex"].network
    searches = "SELECT count(*) FROM raw_http WHERE resource_key LIKE '%search.semantic=%'"
    stored_before = con.execute(searches).fetchone()
    outcomes = gold.run(
        gold.make_llm(settings, con), con, settings, resolved.targets, client=resolved.client
    )
    briefs = con.execute("SELECT count(*) FROM briefs WHERE text <> ''").fetchone()
    searched = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE detail LIKE 'target % among %') "
        "FROM audit_findings WHERE \"check\" = 'search'"
    ).fetchone()
    assert outcomes and briefs is not None and searched is not None
    assert searched[0] == searched[1] == briefs[0] > 0
    assert resolved.client.stats["openalex"].network - before == briefs[0]
    stored = con.execute(searches).fetchone()
    distinct = con.execute("SELECT count(DISTINCT (target_id, text)) FROM briefs").fetchone()
    assert stored is not None and stored_before is not None and distinct is not None
    assert stored[0] - stored_before[0] == distinct[0]  # a redraft that repeats itself: one row
