"""The information boundary, attacked as a competitor holding the public export would.

- Instance IDs are keyed: the same config built into a fresh warehouse with its own key gives
  other IDs (and with the suite's shared key, the same bytes: test_faults and test_kills
  compare every build's export with the reference byte for byte).
- No string of the public export, as a hash input beside any target ID, gives an instance ID.
- `inspire audit` prints the hash and window attacks, and fails on a planted unkeyed ID.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
from pathlib import Path

import duckdb

from inspire_build import boundary, boundary_store, warehouse
from inspire_build.config import Settings
from tests import competitor

from .conftest import Suite

EVAL = Settings().split("eval")
WINDOW = (EVAL.start, EVAL.end)  # the card states the split's window


def public_instances(export: Path) -> dict[str, str]:
    """instance ID -> brief, as the public file gives them."""
    lines = (export / "public" / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["instance_id"]: r["brief"] for r in map(json.loads, lines)}


def public_strings(export: Path) -> set[str]:
    """Every value, word and token of the public side: the JSON values, the card's lines."""
    texts = [
        str(v)
        for line in (export / "public" / "instances.jsonl").read_text().splitlines()
        for v in json.loads(line).values()
    ]
    texts += (export / "dataset_card.md").read_text(encoding="utf-8").splitlines()
    found = set(texts)
    for text in texts:
        found.update(text.split())
        found.update(re.findall(r"[\w.:/-]+", text))
    return found


def instance_ids(warehouse_path: Path) -> dict[str, str]:
    """target -> instance ID, in the newest eval version (the private side)."""
    con = duckdb.connect(str(warehouse_path), read_only=True)
    rows = con.execute("SELECT target_id, instance_id FROM eval_latest").fetchall()
    con.close()
    return {str(t): str(i) for t, i in rows}


def target_ids(warehouse_path: Path) -> set[str]:
    con = duckdb.connect(str(warehouse_path), read_only=True)
    rows = con.execute(
        "SELECT i.target_id, p.scheme, p.value FROM eval_latest i "
        "LEFT JOIN paper_ids p ON p.paper_id = i.target_id"
    ).fetchall()
    con.close()
    found = {str(t) for t, _, _ in rows}
    found.update(str(v) for _, _, v in rows if v)
    found.update(f"{s}:{v}" for _, s, v in rows if v)
    return found


def test_a_fresh_warehouse_with_its_own_key_gives_other_instance_ids(
    suite: Suite, sandbox: str, reference_export: list[str]
) -> None:
    env = suite.env("own-key", sandbox)
    env.pop("INSPIRE_INSTANCE_KEY")
    suite.build(env, "build-own-key")
    suite.export(env, "own-key")
    reference = instance_ids(suite.root / "reference.duckdb")
    own = instance_ids(suite.root / "own-key.duckdb")
    # Other keys draw other cutoff offsets, so a target may differ in its antecedents, or fall
    # out; the targets both versions hold must have other IDs, and no ID may be shared.
    shared = set(reference) & set(own)
    assert len(shared) >= len(reference) // 2
    assert all(reference[t] != own[t] for t in shared)
    assert set(reference.values()).isdisjoint(own.values())
    assert set(own.values()) == set(public_instances(suite.root / "exports" / "own-key"))
    card = (suite.root / "exports" / "own-key" / "dataset_card.md").read_text()
    theirs = (suite.root / "exports" / "reference" / "dataset_card.md").read_text()
    # A version ID hashes the content: other cutoffs make another version, never the same ID.
    assert card.splitlines()[0].startswith("# Dataset card: eval (eval-")
    assert card.splitlines()[0] != theirs.splitlines()[0]


def test_no_public_string_hashes_a_target_id_to_an_instance_id(
    suite: Suite, reference_export: list[str]
) -> None:
    export = suite.root / "exports" / "reference"
    ids = list(public_instances(export))
    version = (export / "dataset_card.md").read_text().splitlines()[0].split("(")[1].rstrip(")")
    publics, targets = public_strings(export), target_ids(suite.root / "reference.duckdb")
    attack = boundary.hash_attack(ids, targets, publics, version)
    assert attack.tried > 100_000 and attack.recovered == {}
    # the same attack on the old, unkeyed IDs of the same targets recovers every one
    con = duckdb.connect(str(suite.root / "reference.duckdb"), read_only=True)
    rows = con.execute("SELECT target_id FROM eval_latest").fetchall()
    con.close()
    old = [hashlib.sha256(f"inspire:{version}:{t}".encode()).hexdigest()[:16] for (t,) in rows]
    assert set(boundary.hash_attack(old, targets, publics, version).recovered) == set(old)


def test_the_audit_prints_the_attacks_and_fails_on_an_unkeyed_id(
    suite: Suite, sandbox: str, reference_export: list[str]
) -> None:
    copy = suite.root / "audit-copy.duckdb"
    shutil.copy(suite.root / "reference.duckdb", copy)
    env = {**suite.env("audit-copy", sandbox), "INSPIRE_WAREHOUSE": str(copy)}
    lenient = {**env, "INSPIRE_WINDOW_ATTACK_MAX_TOP1": "1.0", "INSPIRE_MIN_ANONYMITY": "1"}
    clean = suite.run(lenient, "audit", "eval", log="audit-clean")
    report = clean.stdout + clean.stderr
    assert clean.returncode == 0, report[-3000:]
    assert "hash attack: 0 instance ID(s) recovered" in report
    assert re.search(r"audit of eval-\w+: passed", report) and ": passed" in report
    assert re.search(r"bm25 of the brief over the window: \d+\.\d%, \d+\.\d%; chance", report)

    con = duckdb.connect(str(copy))
    version, iid, target = con.execute(
        "SELECT version_id, instance_id, target_id FROM eval_latest ORDER BY instance_id LIMIT 1"
    ).fetchone()  # type: ignore[misc]
    old = hashlib.sha256(f"inspire:{version}:{target}".encode()).hexdigest()[:16]
    con.execute("UPDATE qrels SET instance_id = ? WHERE instance_id = ?", [old, iid])
    con.execute("UPDATE instances SET instance_id = ? WHERE instance_id = ?", [old, iid])
    con.close()
    planted = suite.run(lenient, "audit", "eval", log="audit-planted")
    report = planted.stdout + planted.stderr
    assert planted.returncode == 1, report[-3000:]
    assert "hash attack: 1 instance ID(s) recovered" in report
    assert f"RECOVERED {old}" in report
    assert re.search(r"audit of eval-\w+: FAILED: the hash attack recovered 1 instance", report)


def test_a_competitor_with_the_public_files_narrows_by_cutoff_and_searches_with_the_brief(
    suite: Suite, reference_export: list[str], tmp_path: Path
) -> None:
    """The third attack, played from the public files alone: each published cutoff narrows the
    candidates to the papers first public on a consistent day (the jitter is on the card), and
    the brief is searched with bm25 among them. The narrowing always keeps the true target (a
    competitor loses nothing by it), it never leaves the target alone, and the figures are the
    ones `inspire audit` computes from the warehouse."""
    export = suite.root / "exports" / "reference"
    lines = (export / "public" / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    public = [json.loads(line) for line in lines]
    card = (export / "dataset_card.md").read_text(encoding="utf-8")
    jitter = int(re.search(r"0 to (\d+) days", card).group(1))  # type: ignore[union-attr]
    copy = tmp_path / "competitor.duckdb"  # the search index is built into the file
    shutil.copy(suite.root / "reference.duckdb", copy)
    con = warehouse.connect(copy)
    truth = dict(
        con.execute(
            "SELECT i.instance_id, i.target_id FROM eval_latest i"  # the private side, to score
        ).fetchall()
    )
    first_public = dict(con.execute("SELECT paper_id, first_public_date FROM papers").fetchall())
    sizes, ranks = competitor.replay(con, public, truth, first_public, jitter, WINDOW)
    inputs = [
        (r["brief"], dt.date.fromisoformat(r["cutoff"]), truth[r["instance_id"]]) for r in public
    ]
    audited = boundary_store._windows(con, Settings(), "eval", inputs, jitter)
    con.close()
    top1 = sum(rank == 1 for rank in ranks) / len(ranks)
    print(
        f"window sizes min {min(sizes)}, median {sorted(sizes)[len(sizes) // 2]}; top-1 {top1:.1%}"
    )
    assert min(sizes) > 1
    assert (sizes, ranks) == (audited.sizes, audited.ranks)
