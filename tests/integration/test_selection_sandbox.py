"""A limited build's targets are a seeded sample spread across the window, not its first months."""

from __future__ import annotations

from inspire_build import pipeline, warehouse
from inspire_build.sandbox import server, world
from inspire_build.selection import select_targets
from inspire_build.sources import make_client


def _selected_months(seed: int) -> tuple[list[str], set[str]]:
    generated = world.generate(world.WorldConfig(seed=2, papers=1500))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        settings = server.settings_for(
            base, splits={"eval": {"start": "2025-01-01", "end": "2026-12-31", "sample_seed": seed}}
        )
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        selection = select_targets(
            make_client(settings, con, mode="live"), con, settings, "eval", 12
        )
        every = {
            str(day)[:7]
            for (day,) in con.execute("SELECT first_public_date FROM targets").fetchall()
        }
        chosen = con.execute(
            "SELECT first_public_date FROM targets WHERE status = 'candidate' ORDER BY 1"
        ).fetchall()
        con.close()
    assert len(selection.selected) == 12 and len(every) > 12
    return [str(day)[:7] for (day,) in chosen], every


def test_targets_of_a_limited_build_are_spread_across_the_windows_months() -> None:
    months, every = _selected_months(seed=0)
    earliest = sorted(every)[:4]
    print(f"12 targets from {len(every)} months: {months}")
    assert len(set(months)) >= 8  # not bunched: 12 targets over at least 8 months
    assert sum(m not in earliest for m in months) >= 6  # most lie past the window's first months
    again, _ = _selected_months(seed=0)
    other, _ = _selected_months(seed=1)
    assert again == months and other != months  # seeded


def test_a_limited_build_after_a_full_one_holds_its_own_targets_each_paper_in_one_row() -> None:
    generated = world.generate(world.WorldConfig(seed=2, papers=600))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        settings = server.settings_for(
            base, splits={"eval": {"start": "2025-01-01", "end": "2026-12-31"}}
        )
        con = warehouse.connect(":memory:")
        warehouse.migrate(con)
        client = make_client(settings, con, mode="live")
        full = pipeline.build_split(con, client, settings, "eval", 10)
        limited = pipeline.build_split(con, client, settings, "eval", 3)
        rows, papers = con.execute(
            "SELECT count(*), count(DISTINCT title) FROM targets WHERE split = 'eval'"
        ).fetchone() or (0, 0)
        [(latest,)] = con.execute("SELECT version_id FROM eval_latest LIMIT 1").fetchall() or [
            (None,)
        ]
        con.close()
    print(f"full {full['counts']}, limited {limited['counts']}, {rows} rows for {papers} papers")
    assert full["counts"]["instances"] > 3 >= limited["counts"]["instances"] > 0
    assert rows == papers  # no paper under both its openalex: and its canonical ID
    assert latest == limited["version_id"]
