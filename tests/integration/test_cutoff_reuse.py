"""One published cutoff per target (SPEC §9), against a sandbox: a build at jitter 30, then a
larger rebuild at jitter 0. The second version publishes the first one's cutoffs for every
target both hold (so intersecting them reveals nothing), judges references against them, says
why the jitter did not apply, and draws exact cutoffs only for the targets new to it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import duckdb
from pydantic import SecretStr

from inspire_build import pipeline
from inspire_build.cutoff import cutoff_date
from inspire_build.sandbox import server, world
from inspire_build.sources import make_client
from tests.conftest import new_warehouse

KEY = SecretStr("5a" * 32)


def _build(con: duckdb.DuckDBPyConnection, base: str, path: Path, jitter: int, limit: int) -> Any:
    settings = server.settings_for(
        base, warehouse=path, instance_key=KEY, llm_backend="rules", cutoff_jitter_days=jitter
    )
    return pipeline.build_split(con, make_client(settings, con), settings, "eval", limit)


def _cutoffs(con: duckdb.DuckDBPyConnection, version: str) -> dict[str, tuple[dt.date, dt.date]]:
    """target -> (its published cutoff in ``version``, its exact cutoff)."""
    rows = con.execute(
        "SELECT i.target_id, i.cutoff_date, t.first_public_date FROM instances i "
        "JOIN targets t ON t.paper_id = i.target_id AND t.split = 'eval' WHERE i.version_id = ?",
        [version],
    ).fetchall()
    return {str(t): (c, cutoff_date(day)) for t, c, day in rows}


def test_a_rebuild_at_jitter_0_publishes_the_cutoffs_of_the_build_at_jitter_30(
    tmp_path: Path,
) -> None:
    generated = world.generate(world.WorldConfig(seed=13, papers=1000))
    path = tmp_path / "w.duckdb"
    con = new_warehouse(path)
    # 8 then 12 targets: 8 instances, then 11 of which 3 new (16 and 24 cost twice the CPU). A
    # rebuild that reused no published cutoff fails here as it did at 16 and 24.
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        first = _build(con, base, path, jitter=30, limit=8)
        second = _build(con, base, path, jitter=0, limit=12)
    before, after = _cutoffs(con, first["version_id"]), _cutoffs(con, second["version_id"])
    late = con.execute(
        'SELECT count(*) FROM "references" r JOIN instances i USING (target_id) '
        "WHERE i.version_id = ? AND r.status = 'eligible' AND r.paper_id IN "
        "(SELECT paper_id FROM papers WHERE first_public_date >= i.cutoff_date)",
        [second["version_id"]],
    ).fetchone()
    stated = con.execute(
        "SELECT cutoff_jitter_days, cutoff_jitter_setting, cutoffs_kept FROM split_versions "
        "WHERE version_id = ?",
        [second["version_id"]],
    ).fetchone()
    con.close()
    both = sorted(before.keys() & after.keys())
    assert second["version_id"] != first["version_id"] and len(both) == len(before) >= 4
    # the first build's jitter moved most cutoffs: a rebuild at 0 would have shown them exact
    assert sum(cut != exact for cut, exact in before.values()) >= len(before) // 2
    assert {t: after[t] for t in both} == {t: before[t] for t in both}
    assert late == (0,)  # references were judged against the kept cutoffs
    new = after.keys() - before.keys()
    assert new and all(cut == exact for cut, exact in (after[t] for t in new))
    assert stated == (30, 0, len(both))
    [note] = second["notes"]
    assert f"of {len(after)} cutoffs were first published by an earlier version" in note
    assert "INSPIRE_CUTOFF_JITTER_DAYS=0 did not apply" in note
