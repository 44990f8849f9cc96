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
import yaml

from inspire_build import audit_checks, boundary, boundary_store, exports, warehouse
from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.tables import versions, windows
from inspire_build.text import content_words
from tests.conftest import new_warehouse, run_inspire

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
    con = new_warehouse(path)
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
    result = inspire(built.path, "export", "--force", "--split", "eval", "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = (out / "public" / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["instance_id"] for line in lines} == set(built.ids.values())
    card = (out / "dataset_card.md").read_text(encoding="utf-8")
    assert "## Information boundary" in card and "0 to 30 days" in card
    assert "Hash attack: 0 instance IDs recovered" in card
    assert "| brief words, mean | 14.0 |" in card  # both briefs have 14 words
    # one brief for both targets: neither states a problem the other does not
    assert "| briefs stating a problem no other brief restates | 0.0% (0 of 2) |" in card
    assert "passed four audits" in card and "search identity check did not run" in card
    assert KEY_HEX not in card and not list(tmp_path.glob(".export.export-*"))
    every_byte = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert KEY_HEX.encode() not in every_byte and bytes.fromhex(KEY_HEX) not in every_byte


WINDOWED = '{"retrieval_scope": "window"}'


def test_the_card_counts_the_briefs_the_search_check_judged(tmp_path: Path) -> None:
    built = build(tmp_path)
    con = warehouse.connect(built.path)
    assert versions.card_figures(con, "eval", VERSION).searched == 0
    con.execute(  # a later rerun's finding on brief b: not this version's, which stays as is
        'INSERT INTO audit_findings (brief_id, "check", passed, level, detail) '
        "VALUES ('b', 'search', true, 'none', 'ranks 40')"
    )
    assert versions.card_figures(con, "eval", VERSION).searched == 0
    for instance in built.ids.values():  # what the version recorded of its own briefs
        con.execute(
            "INSERT INTO version_findings VALUES (?, ?, 'search', true, 'none', 'ranks 40')",
            [VERSION, instance],
        )
    figures = versions.card_figures(con, "eval", VERSION)
    assert figures.searched == 2 and figures.briefs == [BRIEF, BRIEF]  # both hold brief b
    exports.export(con, Settings(warehouse=built.path), "eval", None, tmp_path / "e", force=True)
    card = (tmp_path / "e" / "dataset_card.md").read_text(encoding="utf-8")
    assert "passed five audits" in card and "identity by search (the brief" in card
    assert "retrieval (bm25 over the warehouse's papers)" in card
    # a window-scoped build's version says so, and its card too
    con.execute("UPDATE split_versions SET models = json_merge_patch(models, ?)", [WINDOWED])
    exports.export(con, Settings(warehouse=built.path), "eval", None, tmp_path / "w", force=True)
    windowed = (tmp_path / "w" / "dataset_card.md").read_text(encoding="utf-8")
    assert "retrieval (bm25 over the papers its published cutoff's window holds)" in windowed
    # The competitor reads the card's new lines (both scopes) for a target: no needle, no ID
    # of either kind.
    for shown in (card, windowed):
        normal = boundary.normal_text(shown)
        assert boundary.found_in(exports.leak_needles(con, VERSION), normal) == []
        for target, (_, doi) in TARGETS.items():
            assert target[6:] not in shown and doi not in shown and built.ids[target] not in shown


def test_the_public_folder_is_a_hub_dataset_that_names_no_target(tmp_path: Path) -> None:
    """public/README.md carries the hub's metadata, its data file the public Parquet; it names
    no target, no T3 antecedent and no private file (tests/integration/test_hub_release.py
    loads a sandbox build's folder with ``datasets``)."""
    built = build(tmp_path)
    con = warehouse.connect(built.path)
    settings = Settings(warehouse=built.path)
    hashes = exports.export(con, settings, "eval", None, tmp_path / "e", force=True)
    public = tmp_path / "e" / "public"
    assert sorted(p.name for p in public.iterdir()) == [
        "README.md",
        "instances.jsonl",
        "instances.parquet",
    ]
    assert "public/README.md" in hashes
    text = (public / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---\n", 2)[1])
    [config] = meta["configs"]
    assert config["data_files"] == [{"split": "eval", "path": "instances.parquet"}]
    assert meta["size_categories"] == ["n<1K"] and meta["license"]
    assert "2 instances, split `eval`" in text and VERSION in text
    # The competitor reads the card for a target: every needle the leak scan knows, raw too.
    normal = boundary.normal_text(text)
    assert boundary.found_in(exports.leak_needles(con, VERSION), normal) == []
    for target, (title, doi) in TARGETS.items():
        assert target not in text and target[6:] not in text and doi not in text
        assert boundary.normal_text(title) not in normal
    assert boundary.normal_text(T3_TITLE) not in normal
    assert not any(word in text for word in ("qrels", "antecedents.", "targets.", "private"))
    # and the export's scan reads it: a title planted in it fails the export's check
    (public / "README.md").write_text(text + TARGETS["arxiv:2503.01234"][0], encoding="utf-8")
    with pytest.raises(exports.ExportLeak, match="sparse cafe retrieval"):
        exports.leak_scan(con, VERSION, public)
    con.close()


@pytest.mark.parametrize(
    "leak",
    [
        "It extends sparse café retrieval with gated memories.",  # the title, accented
        "See doi 10.1145/3000002 for the details.",  # a target's DOI
        "It builds on DISTILLED  graph-indexes for dense passage search.",  # a T3 title
        "Compare arXiv:2503.01234.",  # a target's arXiv ID
        "It builds on arxiv:2301.00001, as a curator's rewrite may say.",  # the gold's ID
        "It builds on 10.5555/t3.1 (doi).",  # the gold's DOI, known to the search corpus alone
    ],
)
def test_a_planted_leak_fails_the_export_and_leaves_no_public_file(
    tmp_path: Path, leak: str
) -> None:
    built = build(tmp_path)
    target = next(iter(TARGETS))
    plant(
        built.path, "INSERT INTO corpus_ids VALUES ('doi', '10.5555/t3.1', 'arxiv:2301.00001')", []
    )
    plant(
        built.path,
        "UPDATE instances SET brief = brief || ' ' || ? WHERE instance_id = ?",
        [leak, built.ids[target]],
    )
    out = tmp_path / "export"
    result = inspire(built.path, "export", "--force", "--split", "eval", "--out", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "names a target or its gold" in result.stderr
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
        exports.export(
            con, Settings(warehouse=built.path), "eval", None, tmp_path / "e", force=True
        )
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
    result = inspire(
        built.path, "export", "--force", "--split", "eval", "--out", str(tmp_path / "e")
    )
    assert result.returncode == 1 and "hash attack recovers 1" in result.stderr


def candidates(path: Path, rows: list[tuple[str, dt.date]]) -> None:
    """The split's candidates (``targets`` rows): what the card's criteria would select."""
    now = dt.datetime.now(dt.UTC)
    for paper_id, day in rows:
        plant(
            path,
            "INSERT INTO targets (split, paper_id, title, abstract, first_public_date, status, "
            "updated_at) VALUES ('eval', ?, ?, 'An unrelated abstract.', ?, 'excluded', ?)",
            [paper_id, TARGETS.get(paper_id, (f"Unrelated work {paper_id}",))[0], day, now],
        )


def test_the_attackers_rank_the_brief_among_the_window(tmp_path: Path) -> None:
    built = build(tmp_path)
    candidates(built.path, [(t, dt.date(2025, 6, 1)) for t in TARGETS])
    con = warehouse.connect(built.path)
    loose = Settings(warehouse=built.path, window_attack_max_top1=0.5, min_anonymity=2)
    report = boundary_store.attack_version(con, loose, VERSION)
    # Both targets went public 2025-06-01; a cutoff of 2025-02-20 with 30 days of jitter
    # allows 2025-05-20 to 2025-06-22, so each window holds both, and the brief matches neither.
    assert report.window_sizes == [2, 2] and report.anonymity == [2, 2]
    bm25, uniform, search = report.attackers
    assert (bm25.top1, bm25.chance1, uniform.top1, uniform.top10, search.n) == (0, 0.5, 0.5, 1, 0)
    assert report.ok and report.lines()[0] == f"boundary of {VERSION}: passed"
    for target in TARGETS:  # each brief now names its own target's words
        con.execute(
            "UPDATE instances SET brief = ? WHERE instance_id = ?",
            [TARGETS[target][0], built.ids[target]],
        )
    report = boundary_store.attack_version(con, loose, VERSION)
    assert report.attackers[0].top1 == 1.0 and not report.ok
    assert report.lines()[0] == (
        f"boundary of {VERSION}: FAILED: bm25 of the brief over the window ranks 100.0% of "
        "targets first (limit 50%, chance 50.0%)"
    )
    row = con.execute("SELECT verdict, window_top1, anonymity_min FROM boundary_audits").fetchall()
    assert row == [("failed", 1.0, 2)]
    con.close()


def test_a_window_with_a_single_selectable_paper_fails_the_boundary(tmp_path: Path) -> None:
    built = build(tmp_path)
    first, second = TARGETS
    plant(
        built.path,
        "UPDATE instances SET cutoff_date = DATE '2025-05-20' WHERE target_id = ?",
        [second],
    )
    plant(
        built.path,
        "UPDATE papers SET first_public_date = DATE '2025-09-01' WHERE paper_id = ?",
        [second],
    )
    crowd = [(f"openalex:W{n}", dt.date(2025, 6, 3)) for n in range(30)]
    candidates(built.path, [(first, dt.date(2025, 6, 1)), (second, dt.date(2025, 9, 1)), *crowd])
    con = warehouse.connect(built.path)
    report = boundary_store.attack_version(con, Settings(warehouse=built.path), VERSION)
    con.close()
    assert sorted(report.anonymity) == [1, 31]
    assert "1 of 2 window(s) hold fewer than 20 selectable papers (smallest 1)" in report.lines()[0]
    assert report.judgement.verdict is boundary.Verdict.FAILED


def test_export_publishes_only_a_version_whose_latest_audit_passed(tmp_path: Path) -> None:
    built = build(tmp_path)
    out = tmp_path / "e"
    refused = inspire(built.path, "export", "--split", "eval", "--out", str(out))
    assert refused.returncode == 1 and "it has not been audited" in refused.stderr
    assert not out.exists()
    con = warehouse.connect(built.path)
    windows.record_verdict(con, VERSION, "eval", "failed", "2 instance(s) fail a leakage check")
    con.close()
    refused = inspire(built.path, "export", "--split", "eval", "--out", str(out))
    assert "its latest audit failed (2 instance(s) fail a leakage check)" in refused.stderr
    assert refused.returncode == 1 and not out.exists()
    forced = inspire(built.path, "export", "--force", "--split", "eval", "--out", str(out))
    assert forced.returncode == 0, forced.stderr
    card = (out / "dataset_card.md").read_text(encoding="utf-8")
    assert "**Exported without a passing audit: its latest audit failed (2 instance(s) fail" in card
    con = warehouse.connect(built.path)
    windows.record_verdict(con, VERSION, "eval", "passed", None)
    con.close()
    passed = inspire(built.path, "export", "--split", "eval", "--out", str(tmp_path / "p"))
    assert passed.returncode == 0, passed.stderr
    assert "without a passing audit" not in (tmp_path / "p" / "dataset_card.md").read_text()


def test_the_key_is_made_once_exported_and_a_different_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "fresh.duckdb"
    con = new_warehouse(path)
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


def test_a_window_is_cut_by_the_split_and_a_thin_one_is_named(tmp_path: Path) -> None:
    built = build(tmp_path)
    first, second = TARGETS
    candidates(built.path, [(first, dt.date(2025, 6, 1)), (second, dt.date(2025, 6, 1))])
    plant(
        built.path, "UPDATE targets SET cutoff_date = DATE '2025-02-20' WHERE paper_id = ?", [first]
    )
    settings = Settings(warehouse=built.path, min_anonymity=3)
    # the published cutoff allows 2025-05-20 to 2025-06-22; a split starting 2025-06-01 cuts it
    late = Settings(splits={"eval": {"start": "2025-06-01", "end": "2026-12-31"}})  # type: ignore[arg-type]
    cutoff = dt.date(2025, 2, 20)
    assert boundary_store.window_of(settings, "eval", cutoff, 30) == (
        dt.date(2025, 5, 20),
        dt.date(2025, 6, 22),
    )
    assert boundary_store.window_of(late, "eval", cutoff, 30)[0] == dt.date(2025, 6, 1)
    con = warehouse.connect(built.path)
    assert boundary_store.thin_window(con, settings, first) == (
        "its published cutoff's window holds 2 selectable paper(s), fewer than 3: too few to "
        "hide it among"
    )
    assert boundary_store.thin_window(con, settings, second) is None  # no cutoff yet
    con.close()
    candidates(built.path, [("openalex:W1", dt.date(2025, 6, 22))])  # the window's last day
    con = warehouse.connect(built.path)
    assert boundary_store.thin_window(con, settings, first) is None
    con.close()


def test_the_retrieval_check_scoped_to_the_window_plays_the_bm25_attacker(tmp_path: Path) -> None:
    built = build(tmp_path)
    first, second = TARGETS
    crowd = [(f"openalex:W{n}", dt.date(2025, 6, 3)) for n in range(30)]
    candidates(built.path, [(first, dt.date(2025, 6, 1)), (second, dt.date(2025, 6, 1)), *crowd])
    plant(
        built.path, "UPDATE targets SET cutoff_date = DATE '2025-02-20' WHERE paper_id = ?", [first]
    )
    settings = Settings(warehouse=built.path, audit_retrieval_scope="window")
    con = warehouse.connect(built.path)
    found = audit_checks.retrieval_in_window(con, settings, "b1", TARGETS[first][0], first)
    # 32 candidates in the window: the top 10, but at most 2% of 32 (and at least 1), fails
    assert not found.passed
    assert (
        found.detail
        == "target ranks 1 among the 32 candidates its cutoff's window holds (the top 1 fails)"
    )
    found = audit_checks.retrieval_in_window(con, settings, "b2", BRIEF, first)
    assert found.passed and found.detail.startswith("target not ranked among the 32 candidates")
    con.close()


def test_the_window_check_and_its_feedback_depend_on_the_window_not_the_warehouse(
    tmp_path: Path,
) -> None:
    """A later build renames candidates (openalex: to arxiv:) and adds papers elsewhere: the
    target's rank (a tie goes to the attacker, whatever the IDs) and the rarity of the terms a
    redraft is told of stay as they were, so a rebuild gives the same version."""
    built = build(tmp_path)
    first, _ = TARGETS
    title = TARGETS[first][0]
    twins = [(f"openalex:W{n}", dt.date(2025, 6, 3)) for n in range(3)]  # same text: ties
    candidates(built.path, [(first, dt.date(2025, 6, 1)), *twins])
    plant(built.path, "UPDATE targets SET title = ?, cutoff_date = DATE '2025-02-20' "
          "WHERE paper_id LIKE 'openalex:W%' OR paper_id = ?", [title, first])  # fmt: skip
    settings = Settings(warehouse=built.path, audit_retrieval_scope="window")
    words = content_words(title)[:2]

    def seen() -> tuple[object, ...]:
        con = warehouse.connect(built.path)
        try:
            rank, held = boundary_store.window_rank(con, settings, first, title)
            return rank, held, boundary_store.window_counts(con, settings, first, words)
        finally:
            con.close()

    before = seen()
    assert before[:2] == (1, 4)  # tied with three: none scores above it
    assert before[2] == dict.fromkeys(words, 4)
    plant(built.path, "UPDATE targets SET paper_id = 'arxiv:0001.0000' || right(paper_id, 1) "
          "WHERE paper_id LIKE 'openalex:W%'", [])  # fmt: skip
    plant(built.path, "INSERT INTO papers (paper_id, title, first_public_date, sources, "
          "updated_at) VALUES ('arxiv:0002.00001', ?, DATE '2020-01-01', ['arxiv'], now())",
          [title])  # fmt: skip
    assert seen() == before
