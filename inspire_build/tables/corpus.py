"""The search corpus's index and its search: :func:`replace_corpus` fills ``corpus`` and
``corpus_ids`` and builds their bm25 index; :func:`search_corpus` ranks the works public before
a cutoff with the statistics of those works only. (Reading one work or its IDs: ``env``.)"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

import duckdb

from inspire_build import warehouse
from inspire_build.errors import WarehouseError
from inspire_build.tables.search import load_fts


def replace_corpus(
    con: duckdb.DuckDBPyConnection,
    works: Sequence[Mapping[str, object]],
    work_ids: Sequence[Mapping[str, object]],
) -> None:
    """Replace the search corpus and its IDs in one transaction, then rebuild its bm25 index
    (the index does not update itself)."""
    with warehouse.transaction(con):
        con.execute("DELETE FROM corpus_ids")
        con.execute("DELETE FROM corpus")
        warehouse.upsert(con, "corpus", works, ["paper_id"])
        warehouse.upsert(con, "corpus_ids", work_ids, ["scheme", "value"])
    load_fts(con)
    # The stemmer and stopwords are named, as :data:`_PAST_BM25` stems the query the same way.
    con.execute(
        "PRAGMA create_fts_index('corpus', 'paper_id', 'title', 'abstract', "
        "stemmer='porter', stopwords='english', overwrite=1)"
    )


# bm25 as DuckDB's match_bm25 computes it (log10 idf, k1 1.2, b 0.75, the same tokens from the
# index's own tables), but N, avgdl and df count only the works public before the cutoff, so
# no score depends on a later work. Subscores are summed as decimals: an exact sum, the same
# value whatever the order, so a score is equal bit for bit with or without later works.
_PAST_BM25 = """
WITH visible AS (
    SELECT d.docid, d.len FROM fts_main_corpus.docs AS d
    JOIN corpus AS c ON c.paper_id = d.name WHERE c.public_by < $before),
stats AS (SELECT count(*) AS n, sum(len)::DOUBLE / count(*) AS avgdl FROM visible),
qterms AS (
    SELECT termid FROM fts_main_corpus.dict
    WHERE term IN (SELECT stem(unnest(fts_main_corpus.tokenize($query)), 'porter'))),
tf AS (
    SELECT t.termid, t.docid, count(*) AS tf FROM fts_main_corpus.terms AS t
    SEMI JOIN visible AS v ON v.docid = t.docid
    WHERE t.termid IN (SELECT termid FROM qterms) GROUP BY t.termid, t.docid),
df AS (SELECT termid, count(*) AS df FROM tf GROUP BY termid),
scores AS (
    SELECT tf.docid, sum((log((s.n - df.df + 0.5) / (df.df + 0.5) + 1)
        * (tf.tf * ($k1 + 1) / (tf.tf + $k1 * (1 - $b + $b * (v.len / s.avgdl)))))
        ::DECIMAL(18, 12))::DOUBLE AS score
    FROM tf JOIN df USING (termid) JOIN visible AS v USING (docid), stats AS s
    GROUP BY tf.docid)
SELECT c.paper_id, sc.score, c.public_by, c.title, c.year
FROM scores AS sc JOIN fts_main_corpus.docs AS d USING (docid)
JOIN corpus AS c ON c.paper_id = d.name
ORDER BY round(sc.score, 9) DESC, c.paper_id LIMIT $k
"""


def search_corpus(
    con: duckdb.DuckDBPyConnection, query: str, k: int, before: dt.date
) -> list[tuple[str, float, dt.date, str | None, int | None]]:
    """The top ``k`` corpus works by bm25 that were public before ``before``, scored with the
    statistics of those works only (:data:`_PAST_BM25`): what an agent sees at a cutoff says
    nothing of the works after it.

    Returns (paper_id, score, public_by, title, year). Needs the index
    :func:`replace_corpus` builds, and :func:`~inspire_build.tables.search.load_fts` on this
    connection.
    """
    try:
        rows = con.execute(
            _PAST_BM25, {"query": query, "before": before, "k": k, "k1": 1.2, "b": 0.75}
        ).fetchall()
    except duckdb.CatalogException as error:
        raise WarehouseError(
            "the corpus has no search index; fill it with `inspire corpus build`"
        ) from error
    return [(str(p), float(s), d, t, y) for p, s, d, t, y in rows]
