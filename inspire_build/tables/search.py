"""Full-text search over ``papers`` (title and abstract): DuckDB's FTS extension, loaded from the
pinned wheel, the bm25 index over papers and its queries, and how many papers hold a word."""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from pathlib import Path

import duckdb


def load_fts(con: duckdb.DuckDBPyConnection) -> None:
    """Load DuckDB's FTS extension from the pinned wheel, so no download is ever needed."""
    import duckdb_extension_fts

    folder = Path(duckdb_extension_fts.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    con.load_extension(str(folder / "fts.duckdb_extension"))


# What ``papers`` held when this connection last indexed it: (rows, newest updated_at). Every
# write to papers sets updated_at, so an equal signature means the index is still current.
_indexed: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[object, ...]] = (
    weakref.WeakKeyDictionary()
)


def build_search_index(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)build the bm25 index over ``papers`` title and abstract, unless papers is unchanged
    since this connection built it (the index does not update itself, a rebuild reads every
    paper, and the LLM steps ask for it once per chunk of targets)."""
    load_fts(con)
    signature = con.execute("SELECT count(*), max(updated_at) FROM papers").fetchone()
    if signature is not None and _indexed.get(con) == signature:
        return
    con.execute("PRAGMA create_fts_index('papers', 'paper_id', 'title', 'abstract', overwrite=1)")
    if signature is not None:
        _indexed[con] = signature


# bm25 scores differ in their last bits from one call to the next, so results are ordered by
# the score rounded to 9 places, then by ID: near-ties then come back in one order every time.


def search(con: duckdb.DuckDBPyConnection, query: str, k: int) -> list[tuple[str, float]]:
    """The top ``k`` papers for ``query`` by bm25. Call :func:`build_search_index` first."""
    load_fts(con)
    rows = con.execute(
        "SELECT paper_id, score FROM (SELECT paper_id, fts_main_papers.match_bm25(paper_id, ?) "
        "AS score FROM papers) WHERE score IS NOT NULL "
        "ORDER BY round(score, 9) DESC, paper_id LIMIT ?",
        [query, k],
    ).fetchall()
    return [(str(paper_id), float(score)) for paper_id, score in rows]


def document_counts(con: duckdb.DuckDBPyConnection, words: Sequence[str]) -> dict[str, int]:
    """Word -> how many papers' title or abstract hold it as a whole word (case folded). Words
    are content words (letters, digits, hyphens), so they are safe inside the pattern.

    One scan folds each paper's text once and counts every word's pattern, each a bound
    constant: a pattern made per row (``'\\b' || w || '\\b'`` in a join) is compiled again for
    every paper and word, which made a call take seconds on a few thousand papers."""
    kept = list(dict.fromkeys(w for w in words if re.fullmatch(r"[\w-]+", w)))
    if not kept:
        return {}
    counted = ", ".join(["count(*) FILTER (WHERE regexp_matches(text, ?))"] * len(kept))
    row = con.execute(
        f"SELECT {counted} FROM (SELECT lower(coalesce(title, '') || ' ' || "  # noqa: S608 (only ?s)
        "coalesce(abstract, '')) AS text FROM papers)",
        [rf"\b{w}\b" for w in kept],
    ).fetchone()
    return dict(zip(kept, map(int, row or ()), strict=True))
