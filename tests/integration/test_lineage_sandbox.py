"""The lineage step against a 2,000-paper sandbox world with the default defect rates, scored
against the world's ground truth; then the warehouse it writes and the CLI that drives it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import duckdb
import pytest

from inspire_build import warehouse
from inspire_build.classify import TargetLineage
from inspire_build.config import Settings
from inspire_build.lineage_rows import write
from inspire_build.resolve import ALL_SOURCES, lower_bound, resolve_lineage
from inspire_build.sandbox import server, world
from inspire_build.sandbox.truth import score
from inspire_build.selection import select_targets
from inspire_build.sources import make_client
from tests.conftest import run_inspire

TARGETS = 30


@pytest.fixture(scope="module")
def generated() -> world.World:
    return world.generate(world.WorldConfig(seed=21, papers=2000))


@pytest.fixture(scope="module")
def base(generated: world.World) -> Iterator[str]:
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as url:
        yield url


def settings_for(base: str) -> Settings:
    return server.settings_for(base)


class Resolved(NamedTuple):
    con: duckdb.DuckDBPyConnection
    results: list[TargetLineage]
    calls: dict[str, int]
    chosen: list[str]


@pytest.fixture(scope="module")
def resolved(base: str) -> Iterator[Resolved]:
    settings = settings_for(base)
    con = warehouse.connect(":memory:")
    warehouse.migrate(con)
    client = make_client(settings, con, mode="live")
    chosen = select_targets(client, con, settings, "eval", limit=TARGETS).selected
    before = {name: s.network for name, s in client.stats.items()}
    results = resolve_lineage(chosen, client)
    calls = {name: s.network - before[name] for name, s in client.stats.items()}
    write(con, results, "eval", ALL_SOURCES)
    yield Resolved(con, results, calls, chosen)
    con.close()


def test_accuracy_against_ground_truth(generated: world.World, resolved: Resolved) -> None:
    _, results, _, _ = resolved
    scores = score(generated, results)
    print(scores)
    assert scores.targets == TARGETS and scores.mentions > 1500
    assert scores.pair_precision >= 0.99
    assert scores.pair_recall >= 0.97
    assert scores.date_exact >= 0.99
    assert scores.status_sums_ok
    # every target is stored under its work's ID, even one that joined another work mid-run
    assert all(r.work.paper_id and r.work.paper_id != "None" for r in results)


def test_calls_stay_within_1_1x_of_the_lower_bound_and_a_rerun_makes_none(
    base: str, resolved: Resolved
) -> None:
    con, results, calls, chosen = resolved
    bound = sum(lower_bound(results).values())
    print(f"calls {calls}, lower bound {bound}")
    assert sum(calls.values()) <= 1.1 * bound
    rerun = make_client(settings_for(base), con, mode="auto")
    resolve_lineage(chosen, rerun)
    assert sum(s.network for s in rerun.stats.values()) == 0


def test_the_warehouse_accounts_for_every_reference(resolved: Resolved) -> None:
    con, results, _, _ = resolved
    rows = con.execute(
        "SELECT g.target_id, g.references_seen, g.eligible + g.after_cutoff + "
        "g.dated_after_target + g.no_date + g.unresolved + g.self, "
        '(SELECT count(*) FROM "references" r WHERE r.target_id = g.target_id) '
        "FROM gold_completeness g"
    ).fetchall()
    assert len(rows) == TARGETS
    assert all(seen == statuses == stored for _, seen, statuses, stored in rows)
    # every referenced work is a paper, and each of its IDs is in the crosswalk
    orphans = con.execute(
        'SELECT count(*) FROM "references" r LEFT JOIN papers p USING (paper_id) '
        "WHERE r.paper_id IS NOT NULL AND p.paper_id IS NULL"
    ).fetchone()
    assert orphans == (0,)
    missing = con.execute(
        "SELECT count(*) FROM papers p WHERE NOT EXISTS "
        "(SELECT 1 FROM paper_ids i WHERE i.paper_id = p.paper_id)"
    ).fetchone()
    assert missing == (0,)
    statuses = dict(con.execute("SELECT status, count(*) FROM targets GROUP BY 1").fetchall())
    assert sum(statuses.values()) >= TARGETS
    assert set(statuses) <= {"candidate", "excluded"}
    reasons = con.execute("SELECT count(*) FROM targets WHERE reason IS NULL").fetchone()
    assert reasons == (0,)


def test_a_rerun_replaces_exactly_its_own_rows(base: str, resolved: Resolved) -> None:
    con, results, _, chosen = resolved
    before = con.execute('SELECT count(*), sum(hash(status, reason)) FROM "references"').fetchone()
    again = resolve_lineage(chosen[:3], make_client(settings_for(base), con, mode="auto"))
    write(con, again, "eval", ALL_SOURCES)
    after = con.execute('SELECT count(*), sum(hash(status, reason)) FROM "references"').fetchone()
    assert before == after


def test_cli_select_resolve_and_stats(base: str, tmp_path: Path) -> None:
    import os

    env = {
        **os.environ,
        **{
            k: str(v)
            for k, v in {
                "INSPIRE_OPENALEX_URL": base,
                "INSPIRE_S2_URL": base + "/graph/v1",
                "INSPIRE_ARXIV_URL": base + "/api/query",
                "INSPIRE_S2_RPS": 1000,
                "INSPIRE_ARXIV_INTERVAL_S": 0.001,
                "INSPIRE_WAREHOUSE": tmp_path / "w.duckdb",
            }.items()
        },
    }

    def inspire(*args: str) -> subprocess.CompletedProcess[str]:
        return run_inspire(*args, env=env)

    assert inspire("warehouse", "init").returncode == 0  # only init and build make one
    selected = inspire("targets", "select", "--split", "train", "--limit", "3")
    assert selected.returncode == 0, selected.stderr
    chosen = [line for line in selected.stdout.splitlines() if line.startswith("openalex:")]
    assert len(chosen) == 3 and "excluded" in selected.stdout
    resolved_run = inspire("lineage", "resolve", *chosen, "--split", "train")
    assert resolved_run.returncode == 0, resolved_run.stderr
    assert resolved_run.stdout.count("references (") == 3
    stats = inspire("stats", "lineage", "--json")
    lines = [json.loads(line) for line in stats.stdout.splitlines()]
    assert len(lines) == 3
    for line in lines:
        statuses = (
            "eligible",
            "after_cutoff",
            "dated_after_target",
            "no_date",
            "unresolved",
            "self",
        )
        assert sum(line[s] for s in statuses) == line["references_seen"]
    made = inspire("gold", "make", *chosen)
    assert made.returncode == 0, made.stderr
    assert made.stdout.count(": accepted: ") + made.stdout.count(": excluded: ") == 3
    llm_stats = [json.loads(x) for x in inspire("stats", "llm", "--json").stdout.splitlines()]
    assert {r["step"] for r in llm_stats} >= {"brief", "audit_identity", "audit_mechanism"}
    assert all(r["backend"] == "rules" and r["calls"] > 0 for r in llm_stats)
    remade = inspire("gold", "make", *chosen)
    assert "0 LLM call(s) made" in remade.stdout
    shown = inspire("lineage", "show", chosen[0], "--json")
    assert shown.returncode == 0, shown.stderr
    records = [json.loads(x) for x in shown.stdout.splitlines()]  # JSON lines only
    assert shown.stderr.startswith("# ")  # the heading goes to standard error
    assert records and all(
        {"status", "reason", "first_public_date", "date_source", "title", "ids"} <= set(r)
        for r in records
    )
