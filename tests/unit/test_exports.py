"""The export and the boundary's warehouse side, on a hand-built version of two instances:
the instance key, `inspire export` all or nothing against planted leaks, `inspire key export`,
and the hash attack catching a planted unkeyed instance ID."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from inspire_build import boundary, boundary_store, exports, warehouse
from inspire_build.config import Settings
from inspire_build.errors import InputError
from tests.conftest import run_inspire

VERSION = "eval-0123456789ab"
KEY_HEX = "5e" * 32
TARGETS = {
    "arxiv:2503.01234": ("Sparse Cafe Retrieval with Gated Memories", "10.1145/3000001"),
    "arxiv:2504.04321": ("Learning to Route Queries across Shards", "10.1145/3000002"),
}
T3_TITLE = "Distilled Graph Indexes for Dense Passage Search"
BRIEF = "Search over large collections is slow; a solution must keep recall while cutting cost."


@dataclasses.dataclass(frozen=True)
class Built:
    path: Path
    ids: dict[str, str]  # target -> instance ID


def build(tmp_path: Path) -> Built:
    """A warehouse holding one version, its instances keyed as a build would key them."""
    path = tmp_path / "w.duckdb"
    con = warehouse.connect(path)
    warehouse.migrate(con)
    settings = Settings(warehouse=path, instance_key=KEY_HEX)  # type: ignore[arg-type]
    key = boundary_store.instance_key(con, settings)
    now = dt.datetime.now(dt.UTC)
    con.execute(
        "INSERT INTO split_versions (version_id, split, label, config_hash, code_version, "
        "prompt_hashes, models, counts, created_at, status, cutoff_jitter_days) "
        "VALUES (?, 'eval', NULL, ?, '0.1.0', '{}', '{}', '{}', ?, "
        "'complete', 30)",
        [VERSION, "ab" * 32, now],
    )
    papers = [(t, title, dt.date(2025, 6, 1)) for t, (title, _) in TARGETS.items()]
    papers += [("arxiv:2301.00001", T3_TITLE, dt.date(2023, 1, 5))]
    for paper_id, title, day in papers:
        con.execute(
            "INSERT INTO papers (paper_id, title, first_public_date, date_precision, sources, "
            "updated_at) VALUES (?, ?, ?, 'day', ['arxiv'], ?)",
            [paper_id, title, day, now],
        )
    ids = {}
    for target, (_, doi) in TARGETS.items():
        con.execute("INSERT INTO paper_ids VALUES ('arxiv', ?, ?, 'arxiv')", [target[6:], target])
        con.execute("INSERT INTO paper_ids VALUES ('doi', ?, ?, 'openalex')", [doi, target])
        ids[target] = boundary.instance_id(key, VERSION, target)
        con.execute(
            "INSERT INTO instances VALUES (?, ?, ?, 'b', ?, DATE '2025-02-20', 1)",
            [VERSION, ids[target], target, BRIEF],
        )
        con.execute(
            "INSERT INTO qrels VALUES (?, ?, 'arxiv:2301.00001', 3, 'method-foundation')",
            [VERSION, ids[target]],
        )
    con.close()
    return Built(path, ids)


def inspire(path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": "/usr/bin:/bin", "INSPIRE_WAREHOUSE": str(path), **env}
    return run_inspire(*args, env=environment, timeout=120)


def plant(path: Path, sql: str, params: list[object]) -> None:
    con = warehouse.connect(path)
    con.execute(sql, params)
    con.close()


def test_a_clean_export_holds_and_its_card_states_the_boundary(tmp_path: Path) -> None:
    built = build(tmp_path)
    out = tmp_path / "export"
    result = inspire(built.path, "export", "--split", "eval", "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = (out / "public" / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["instance_id"] for line in lines} == set(built.ids.values())
    card = (out / "dataset_card.md").read_text(encoding="utf-8")
    assert "## Information boundary" in card and "0 to 30 days" in card
    assert "Hash attack: 0 instance IDs recovered" in card
    assert "| brief words, mean | 14.0 |" in card  # both briefs have 14 words
    assert KEY_HEX not in card and not list(tmp_path.glob(".export.export-*"))
    every_byte = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert KEY_HEX.encode() not in every_byte and bytes.fromhex(KEY_HEX) not in every_byte


@pytest.mark.parametrize(
    "leak",
    [
        "It extends sparse café retrieval with gated memories.",  # the title, accented
        "See doi 10.1145/3000002 for the details.",  # a target's DOI
        "It builds on DISTILLED  graph-indexes for dense passage search.",  # a T3 title
        "Compare arXiv:2503.01234.",  # a target's arXiv ID
    ],
)
def test_a_planted_leak_fails_the_export_and_leaves_no_public_file(
    tmp_path: Path, leak: str
) -> None:
    built = build(tmp_path)
    target = next(iter(TARGETS))
    plant(
        built.path,
        "UPDATE instances SET brief = brief || ' ' || ? WHERE instance_id = ?",
        [leak, built.ids[target]],
    )
    out = tmp_path / "export"
    result = inspire(built.path, "export", "--split", "eval", "--out", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "names a target" in result.stderr
    assert not (out / "public").exists() and not (out / "dataset_card.md").exists()
    assert not list(tmp_path.glob(".export.export-*"))


def test_an_accented_title_is_caught_in_plain_text_too(tmp_path: Path) -> None:
    built = build(tmp_path)
    target = next(iter(TARGETS))
    plant(
        built.path,
        "UPDATE papers SET title = ? WHERE paper_id = ?",
        ["Spärse Café Retrieval with Gâted Memories", target],
    )
    plant(
        built.path,
        "UPDATE instances SET brief = ? WHERE instance_id = ?",
        ["We want sparse cafe retrieval with gated memories.", built.ids[target]],
    )
    con = warehouse.connect(built.path)
    with pytest.raises(exports.ExportLeak, match="sparse cafe retrieval"):
        exports.export(con, Settings(warehouse=built.path), "eval", None, tmp_path / "e")
    con.close()


def test_a_planted_unkeyed_instance_id_is_recovered_and_fails_the_audit(tmp_path: Path) -> None:
    built = build(tmp_path)
    target = next(iter(TARGETS))
    old = hashlib.sha256(f"inspire:{VERSION}:{target}".encode()).hexdigest()[:16]
    plant(
        built.path,
        "UPDATE instances SET instance_id = ? WHERE instance_id = ?",
        [old, built.ids[target]],
    )
    con = warehouse.connect(built.path)
    settings = Settings(warehouse=built.path, window_attack_max_top1=1.0)
    report = boundary_store.attack_version(con, settings, VERSION)
    assert list(report.hash.recovered) == [old] and not report.ok
    assert "hash attack: 1 instance ID(s) recovered" in "\n".join(report.lines())
    assert con.execute("SELECT hash_recovered FROM boundary_audits").fetchall() == [(1,)]
    con.close()
    result = inspire(built.path, "export", "--split", "eval", "--out", str(tmp_path / "e"))
    assert result.returncode == 1 and "hash attack recovers 1" in result.stderr


def test_the_window_attack_ranks_the_brief_among_the_window(tmp_path: Path) -> None:
    built = build(tmp_path)
    con = warehouse.connect(built.path)
    report = boundary_store.attack_version(con, Settings(warehouse=built.path), VERSION)
    # Both targets went public 2025-06-01; a cutoff of 2025-02-20 with 30 days of jitter
    # allows 2025-05-20 to 2025-06-19, so the window holds both and the brief matches neither.
    assert report.window_sizes == [2, 2] and report.window_ranks == [None, None]
    assert report.share(1) == 0.0 and report.ok
    con.execute(
        "UPDATE instances SET brief = ? WHERE instance_id = ?",
        ["Gated memories for sparse retrieval.", built.ids[next(iter(TARGETS))]],
    )
    report = boundary_store.attack_version(con, Settings(warehouse=built.path), VERSION)
    assert sorted(report.window_ranks, key=str) == [1, None] and report.share(1) == 0.5
    assert not report.ok and "window attack ranks 50.0%" in report.lines()[-1]
    con.close()


def test_the_key_is_made_once_exported_and_a_different_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "fresh.duckdb"
    con = warehouse.connect(path)
    warehouse.migrate(con)
    made = boundary_store.instance_key(con, Settings(warehouse=path))
    assert boundary_store.instance_key(con, Settings(warehouse=path)) == made
    same = Settings(warehouse=path, instance_key=made.hex())  # type: ignore[arg-type]
    assert boundary_store.instance_key(con, same) == made
    with pytest.raises(InputError, match="differs from this warehouse's instance key"):
        boundary_store.instance_key(con, Settings(warehouse=path, instance_key=KEY_HEX))  # type: ignore[arg-type]
    con.close()
    printed = inspire(path, "key", "export")
    assert printed.returncode == 0 and printed.stdout.strip() == made.hex()
    assert "secret" in printed.stderr
