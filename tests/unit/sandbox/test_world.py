"""sandbox/world.py: determinism, the defects it promises, and its ground truth."""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections import Counter
from pathlib import Path

import pytest

from inspire_build import ids
from inspire_build.sandbox import world as W


@pytest.fixture(scope="module")
def world() -> W.World:
    return W.generate(W.WorldConfig(seed=7, papers=1500, giant_papers=1))


def test_one_seed_gives_byte_identical_files(tmp_path: Path) -> None:
    config = W.WorldConfig(seed=3, papers=300)
    first = W.write(W.generate(config), tmp_path / "a")
    second = W.write(W.generate(config), tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    other = W.write(W.generate(W.WorldConfig(seed=4, papers=300)), tmp_path / "c")
    assert first[1].read_bytes() != other[1].read_bytes()


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    generated = W.generate(W.WorldConfig(seed=1, papers=120))
    W.write(generated, tmp_path)
    assert W.load(tmp_path) == generated


def test_identifiers_are_well_formed_and_unique(world: W.World) -> None:
    records = world.records
    assert len(records) == 1500
    for field in ("key", "openalex", "s2", "corpus_id", "doi"):
        assert len({getattr(r, field) for r in records}) == len(records), field
    for record in records:
        if record.arxiv:
            arxiv_id, _ = ids.split_arxiv_version(record.arxiv)  # valid for its month
            v1 = dt.date.fromisoformat(record.arxiv_versions[0][1])
            assert arxiv_id[:4] == v1.strftime("%y%m")
        assert ids.parse_any_id(record.doi).scheme in (ids.Scheme.DOI, ids.Scheme.ARXIV)
        assert len(record.s2) == 40 and record.openalex.startswith("W")
        assert dt.date(2012, 1, 1) <= dt.date.fromisoformat(record.publication_date)


def test_every_promised_defect_occurs(world: W.World) -> None:
    records = world.records
    by_key = world.by_key()
    citations = [c for r in records for c in r.references]
    kinds = Counter(r.kind for r in records)
    assert kinds["preprint"] == kinds["published"] > 50  # twins come in pairs
    assert sum(c.null_ids for c in citations) > 100
    assert sum(r.openalex_references_empty for r in records) > 10
    assert sum(r.s2_publication_date is None and r.s2_year is None for r in records) > 5
    assert sum(r.s2_publication_date is None and r.s2_year is not None for r in records) > 20
    assert sum(r.s2_title != r.title for r in records) > 50
    future = sum(
        1
        for r in records
        for c in r.references
        if by_key[c.cites].publication_date > r.publication_date
    )
    assert future > 5
    assert max(len(r.references) for r in records) > 1000
    typical = sorted(len(r.references) for r in records if len(r.references) < 1000)
    assert 20 <= typical[len(typical) // 2] <= 80


def test_both_splits_have_computer_science_targets(world: W.World) -> None:
    cs = [r for r in world.records if r.field == "Computer Science" and r.arxiv]
    train = [r for r in cs if "2023-01-01" <= r.publication_date <= "2024-12-31"]
    evaluation = [r for r in cs if "2025-01-01" <= r.publication_date <= "2026-12-31"]
    assert len(train) > 150 and len(evaluation) > 150


def test_ground_truth_collapses_twins_and_takes_the_earliest_date(world: W.World) -> None:
    truth = {t["key"]: t for t in W.ground_truth(world)}
    by_key = world.by_key()
    twins = [r for r in world.records if r.kind == "published"]
    for published in twins[:50]:
        preprint = by_key[published.key.removesuffix("b")]
        assert truth[published.key]["first_public_date"] == preprint.arxiv_versions[0][1]
        assert truth[published.key]["work"] == truth[preprint.key]["work"] == preprint.work
    citing = next(r for r in world.records if len(r.references) > 30)
    expected = sorted({by_key[c.cites].work for c in citing.references})
    assert truth[citing.key]["references"] == expected
    assert truth[citing.key]["n_reference_entries"] == len(citing.references)


def test_world_file_says_it_is_a_sandbox(tmp_path: Path) -> None:
    W.write(W.generate(W.WorldConfig(seed=0, papers=50)), tmp_path)
    meta = json.loads((tmp_path / W.WORLD_FILE).read_text())
    assert meta["marker"] == "inspire-sandbox" and meta["counts"]["records"] == 50


def test_truth_has_the_shape_of_the_papers_table_5() -> None:
    """About 40 references; median antecedents 10 (eval) and 7 (train); T3 rarest, T2 ~35%."""
    world = W.generate(W.WorldConfig(seed=3, papers=2000))
    truths = {str(t["key"]): t for t in W.ground_truth(world)}
    for window, first, last, median_wanted in (
        ("eval", "2025-01-01", "9999", 10),
        ("train", "2023-01-01", "2025-01-01", 7),
    ):
        rows = [
            truths[r.key]
            for r in world.records
            if first <= r.publication_date < last and r.arxiv and r.references
        ]
        assert len(rows) > 200, window
        references = statistics.median(len(t["references"]) for t in rows)  # type: ignore[arg-type]
        assert 34 <= references <= 46, (window, references)
        antecedents = statistics.median(int(t["antecedents"]) for t in rows)  # type: ignore[call-overload]
        assert abs(antecedents - median_wanted) <= 1, (window, antecedents)
        tiers = Counter(t for row in rows for t in row["tiers"].values() if t)  # type: ignore[attr-defined]
        total = sum(tiers.values())
        assert 0.05 <= tiers[3] / total <= 0.10, (window, tiers)
        assert 0.30 <= tiers[2] / total <= 0.40, (window, tiers)
        assert 0.52 <= tiers[1] / total <= 0.63, (window, tiers)


def test_abstracts_speak_in_the_truths_words() -> None:
    world = W.generate(W.WorldConfig(seed=3, papers=400))
    problems = set()
    for record in world.records:
        assert record.abstract.startswith(record.problem)
        assert f"{record.method_name} ({record.acronym})" in record.abstract
        assert all(m in record.abstract for m in record.mechanism)
        assert all(n in record.abstract for n in record.result_numbers)
        assert not any(ch.isdigit() for ch in record.problem)
        problems.add((record.work, record.problem))
    assert len({p for _, p in problems}) == len(problems)  # no two works share a problem
    # T3 antecedents lend their central mechanism: the target's first mechanism word is theirs.
    by_key = world.by_key()
    lent = [(r, by_key[c.cites]) for r in world.records for c in r.references if c.tier == 3]
    assert lent and sum(t.mechanism[0] in r.mechanism for r, t in lent) / len(lent) > 0.5


def test_window_density_adds_works_in_the_split_windows_only() -> None:
    # Years 2012-2026 weigh 1.2^0 .. 1.2^14; the windows' years 2023-2026 are 1.2^11 .. 1.2^14.
    every = sum(1.2**k for k in range(15))
    windows = sum(1.2**k for k in range(11, 15))
    assert W.records_wanted(1000, 1.0) == 1000
    assert W.records_wanted(1000, 3.0) == round(1000 * (every + 2 * windows) / every)
    plain = W.generate(W.WorldConfig(seed=5, papers=600))
    dense = W.generate(W.WorldConfig(seed=5, papers=600, window_density=3.0))

    def split(world: W.World) -> tuple[int, int]:
        early = sum(1 for r in world.records if str(r.publication_date) < "2023")
        return early, len(world.records) - early

    (early, late), (dense_early, dense_late) = split(plain), split(dense)
    assert len(dense.records) > len(plain.records)
    assert dense_late > 2.5 * late  # three times the rate (some publication dates trail v1)
    assert abs(dense_early - early) < 0.1 * early  # the earlier years keep theirs
    assert len(dense.topics) == len(plain.topics)
