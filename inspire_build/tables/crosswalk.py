"""The ID crosswalk (``paper_ids``, and the corpus's ``corpus_ids``) as the other steps read
it: every ID as a typed :class:`~inspire_build.ids.PaperId`, and one scheme's values looked
up. (The lineage step writes it: ``lineage``.)"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from inspire_build.ids import PaperId, Scheme


def crosswalk(con: duckdb.DuckDBPyConnection) -> dict[PaperId, str]:
    """The warehouse's ID crosswalk, as typed IDs."""
    known: dict[PaperId, str] = {}
    for scheme, value, paper_id in con.execute(
        "SELECT scheme, value, paper_id FROM paper_ids"
    ).fetchall():
        try:
            known[PaperId(Scheme(scheme), value)] = paper_id
        except ValueError:
            continue
    return known


def with_corpus(con: duckdb.DuckDBPyConnection) -> dict[PaperId, str]:
    """The crosswalk, and the search corpus's IDs it lacks (``corpus_ids``: a published
    version's DOI, say): every ID the environment resolves, mapped as it resolves it."""
    known = crosswalk(con)
    for scheme, value, paper_id in con.execute(
        "SELECT scheme, value, paper_id FROM corpus_ids"
    ).fetchall():
        try:
            known.setdefault(PaperId(Scheme(scheme), value), paper_id)
        except ValueError:
            continue
    return known


def lookup_ids(
    con: duckdb.DuckDBPyConnection, scheme: str, values: Sequence[str]
) -> dict[str, str]:
    """value -> canonical paper ID, for the ``values`` of ``scheme`` the crosswalk holds."""
    if not values:
        return {}
    rows = con.execute(
        "SELECT value, paper_id FROM paper_ids WHERE scheme = ? AND value IN "
        "(SELECT unnest(?::VARCHAR[]))",
        [scheme, list(values)],
    ).fetchall()
    return {str(value): str(paper_id) for value, paper_id in rows}
