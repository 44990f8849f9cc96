"""Leakage: every public export the suite wrote passes the leak scan, and a leak planted in a
real export is caught."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest

from inspire_build import exports, splits
from inspire_build.lineage import normalise_title

from .conftest import Suite


def test_every_export_passes_and_a_planted_leak_is_caught(
    suite: Suite, reference_export: list[str]
) -> None:
    con = duckdb.connect(str(suite.root / "reference.duckdb"), read_only=True)
    version = splits.latest_version(con, "eval")
    for export in suite.exports:
        exports.leak_scan(con, version, export / "public")  # every build's export is clean

    planted = suite.root / "planted" / "public"
    shutil.copytree(suite.root / "exports" / "reference" / "public", planted)
    target, title = con.execute(
        "SELECT i.instance_id, p.title FROM instances i JOIN papers p ON p.paper_id = i.target_id "
        "WHERE i.version_id = ? ORDER BY i.instance_id LIMIT 1",
        [version],
    ).fetchone()  # type: ignore[misc]
    lines = (planted / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    leak = " ".join(normalise_title(title).split()[: exports.LEAK_NGRAM])  # stop words kept
    for record in records:
        if record["instance_id"] == target:
            record["brief"] += f" It builds on {leak}."
    (planted / "instances.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    with pytest.raises(exports.ExportLeak, match="names a target"):
        exports.leak_scan(con, version, planted)
    con.close()
