"""The local backend scores with the statistics of the works public before the cutoff only: a
score says nothing of the works after it (issue 36, item 2)."""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Sequence

import duckdb
import pytest

from inspire_build import warehouse
from inspire_build.cutoff import SourceDate
from inspire_build.env import corpus
from inspire_build.env.backends import LocalBackend
from inspire_build.ids import PaperId, Scheme
from inspire_build.models import Source
from inspire_build.sandbox import corpus as world_corpus
from inspire_build.sandbox import world
from inspire_build.tables import corpus as corpus_table

CUTOFF = dt.date(2024, 6, 1)


def whole_corpus_bm25(
    con: duckdb.DuckDBPyConnection, query: str, k: int, before: dt.date
) -> list[tuple[str, float]]:
    """The replaced implementation: DuckDB's match_bm25, whose N, avgdl and df count every work
    of the corpus, later ones too; the results are filtered to the works before ``before``."""
    rows = con.execute(
        "SELECT paper_id, score FROM (SELECT paper_id, "
        "fts_main_corpus.match_bm25(paper_id, ?) AS score FROM corpus WHERE public_by < ?) "
        "WHERE score IS NOT NULL ORDER BY round(score, 9) DESC, paper_id LIMIT ?",
        [query, before, k],
    ).fetchall()
    return [(str(p), float(s)) for p, s in rows]


def _work(name: str, title: str, day: dt.date | None) -> corpus.CorpusWork:
    date = SourceDate(Source.OPENALEX, day) if day else None
    ids = (PaperId(Scheme.OPENALEX, name),)
    return corpus.CorpusWork(f"openalex:{name}", ids, title, None, None, (), date, 1)


def _warehouse(works: Sequence[corpus.CorpusWork]) -> duckdb.DuckDBPyConnection:
    con = warehouse.connect(":memory:")
    warehouse.migrate(con)
    rows, id_rows = corpus.rows(works, "test", dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    corpus_table.replace_corpus(con, rows, id_rows)
    return con


def _scores(con: duckdb.DuckDBPyConnection, query: str) -> list[tuple[str, float]]:
    return [(w.paper_id, w.score) for w in LocalBackend(con).search(query, 1000, CUTOFF)]


def _ranked(con: duckdb.DuckDBPyConnection, query: str) -> tuple[list[str], object]:
    """The works' names in rank order, and their scores to within 1e-11 (summed as decimals)."""
    found = _scores(con, query)
    names = [p.removeprefix("openalex:") for p, _ in found]
    return names, pytest.approx([s for _, s in found], abs=1e-11)


# Visible at the cutoff: W1 "quark gluon" (2 terms), W2 "quarks quark lepton" (3), W3 "lepton
# boson" (2). N = 3, avgdl = 7/3. W4 is undated (never shown) and W5 is after the cutoff.
VISIBLE = [
    _work("W1", "Quark gluon", dt.date(2020, 1, 1)),
    _work("W2", "Quarks quark lepton", dt.date(2021, 1, 1)),
    _work("W3", "Lepton boson", dt.date(2022, 1, 1)),
]
HIDDEN = [
    _work("W4", "Quark quark quark", None),
    _work("W5", "Quark muon quark leptons", dt.date(2025, 1, 1)),
]


@pytest.mark.parametrize("works", [VISIBLE, VISIBLE + HIDDEN], ids=["past", "past-and-later"])
def test_scores_are_bm25_computed_by_hand_over_the_past_only(
    works: list[corpus.CorpusWork],
) -> None:
    # df(quark) = df(lepton) = 2 of N = 3: idf = log10((3 - 2 + 0.5) / (2 + 0.5) + 1).
    idf = math.log10(1.6)
    # tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgdl)), k1 = 1.2, b = 0.75, avgdl = 7/3:
    one_in_two = 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 * 3 / 7))  # = 30.8 / 29
    two_in_three = 4.4 / (2 + 1.2 * (0.25 + 0.75 * 3 * 3 / 7))  # = 14 / 11
    one_in_three = 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 * 3 / 7))  # = 77 / 86
    assert [one_in_two, two_in_three, one_in_three] == pytest.approx([30.8 / 29, 14 / 11, 77 / 86])
    con = _warehouse(works)
    assert _ranked(con, "quarks") == (["W2", "W1"], [idf * 14 / 11, idf * 30.8 / 29])
    # "and" is a stopword; a repeated word counts once, as in DuckDB's match_bm25. W1 and W3
    # tie, and come in paper_id order.
    assert _ranked(con, "quarks and leptons, lepton") == (
        ["W2", "W1", "W3"],
        [idf * (14 / 11 + 77 / 86), idf * 30.8 / 29, idf * 30.8 / 29],
    )
    assert _scores(con, "the of and") == []


def test_later_and_undated_works_change_no_score_where_whole_corpus_bm25_did() -> None:
    past, both = _warehouse(VISIBLE), _warehouse(VISIBLE + HIDDEN)
    for query in ("quark", "quarks and leptons", "lepton boson gluon"):
        assert _scores(past, query) == _scores(both, query)  # exactly, bit for bit
    # The replaced scoring leaked: W4 and W5 raise N and df(quark), so its scores move.
    assert whole_corpus_bm25(past, "quark", 10, CUTOFF) != whole_corpus_bm25(
        both, "quark", 10, CUTOFF
    )


@pytest.fixture(scope="module")
def sandbox_works() -> list[corpus.CorpusWork]:
    generated = world.generate(world.WorldConfig(seed=3, papers=400))
    return corpus.merge(world_corpus.from_world(generated.records), {}, {})


def test_a_worlds_scores_are_the_same_with_or_without_the_works_after_the_cutoff(
    sandbox_works: list[corpus.CorpusWork],
) -> None:
    dated = sorted(w.first_public.last_day for w in sandbox_works if w.first_public)
    cutoff = dated[len(dated) // 2]
    past = [w for w in sandbox_works if w.first_public and w.first_public.last_day < cutoff]
    later = [w for w in sandbox_works if w not in past]
    assert len(past) > 100 and len(later) > 100
    only_past, whole = _warehouse(past), _warehouse(sandbox_works)
    # Queries from later works' abstracts: the later works share their terms.
    queries = [" ".join((w.abstract or w.title or "").split()[:30]) for w in later[:15]]
    compared = 0
    for query in queries:
        expected = LocalBackend(only_past).search(query, 1000, cutoff)
        got = LocalBackend(whole).search(query, 1000, cutoff)
        assert [(w.paper_id, w.score) for w in got] == [(w.paper_id, w.score) for w in expected]
        compared += len(expected)
        leaked = whole_corpus_bm25(whole, query, 1000, cutoff)
        assert leaked != whole_corpus_bm25(only_past, query, 1000, cutoff)  # the old leak
    assert compared > 100


def test_with_nothing_after_the_cutoff_the_ranking_is_duckdbs_match_bm25(
    sandbox_works: list[corpus.CorpusWork],
) -> None:
    con = _warehouse(sandbox_works)
    after_all = dt.date(2100, 1, 1)
    rng = random.Random(5)
    for work in rng.sample(sandbox_works, 20):
        query = " ".join((work.abstract or work.title or "").split()[:40])
        ours = [(w.paper_id, w.score) for w in LocalBackend(con).search(query, 50, after_all)]
        reference = whole_corpus_bm25(con, query, 50, after_all)
        assert [p for p, _ in ours] == [p for p, _ in reference]
        assert [s for _, s in ours] == pytest.approx([s for _, s in reference], abs=1e-9)
