"""Search backends: ``local`` (bm25 over the warehouse's corpus) and ``openalex`` (live search).

Both are asked for works before the cutoff; neither is trusted. SearchEnv checks every result
against our own first-public dates, and ``inspire env audit`` measures what each lets through.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import duckdb

from inspire_build.env import corpus, store
from inspire_build.env.core import Backend, Work
from inspire_build.env.store import Catalog
from inspire_build.errors import InputError, InvalidIdError
from inspire_build.http import BadRequest, HttpClient, NotFound
from inspire_build.ids import Scheme, parse_any_id
from inspire_build.models import Paper
from inspire_build.sources import openalex
from inspire_build.tables import corpus as corpus_table
from inspire_build.tables import env as env_table
from inspire_build.tables import search as search_table

BACKENDS = ("local", "openalex")


class LocalBackend:
    """bm25 over ``corpus`` titles and abstracts, only rows with public_by < cutoff, scored with
    the statistics of those rows alone: no score depends on a work after the cutoff."""

    name = "local"

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        search_table.load_fts(con)

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        return [
            Work(paper_id, public_by, title=title, year=year, score=score)
            for paper_id, score, public_by, title, year in corpus_table.search_corpus(
                self.con, query, k, cutoff
            )
        ]

    def read(self, paper_id: str) -> Work | None:
        """One work by its paper_id or any ID of its records.

        The same work for every ID, known or not, withheld or not, so that how long a refusal
        takes says nothing about whether the ID exists: the ID is always parsed, and the same
        three index lookups always run (the ID's value in ``corpus_ids``, the ID as a paper_id,
        and the paper_id the value led to, else the ID again).
        """
        try:
            typed = parse_any_id(paper_id)
            scheme, value = typed.scheme.value, typed.value
        except InvalidIdError:
            scheme, value = "", paper_id  # the lookups run and find nothing
        matches = env_table.ids_with_value(self.con, value)
        alias = min((p for s, p in matches if s == scheme), default=paper_id)
        direct = env_table.work(self.con, paper_id)
        via = env_table.work(self.con, alias)
        row = direct if direct is not None else via
        if row is None:
            return None
        found, public_by, title, abstract, year, authors = row
        return Work(
            str(found),
            public_by,
            title=title,
            abstract=abstract,
            year=year,
            authors=tuple(authors or ()),
        )


class OpenAlexBackend:
    """OpenAlex ``search`` with ``to_publication_date``, judged by our own first-public dates.

    A result is known by our paper_id when the warehouse or the corpus knows one of its IDs;
    its first public date is the earliest of OpenAlex's date and ours.
    """

    name = "openalex"

    def __init__(self, client: HttpClient, known: Catalog) -> None:
        self.client, self.known = client, known
        # Our paper_id -> OpenAlex W-ids, so read() can look a result up by the ID OpenAlex
        # has (an arXiv DOI finds only the preprint's record, if OpenAlex has one at all).
        self._openalex: dict[str, list[str]] = {}
        for typed, paper_id in known.ids.items():
            if typed.scheme is Scheme.OPENALEX:
                self._openalex.setdefault(paper_id, []).append(typed.value)

    def _work(self, paper: Paper) -> Work | None:
        typed = paper.ids.typed()
        resolved = self.known.resolve(typed, corpus.from_paper(paper).dates)
        if resolved is None:
            return None
        paper_id, date = resolved
        if paper.ids.openalex and paper.ids.openalex not in self._openalex.get(paper_id, []):
            self._openalex.setdefault(paper_id, []).append(paper.ids.openalex)
        return Work(
            paper_id,
            date.last_day if date else None,
            ids=frozenset(str(t) for t in typed),
            title=paper.title,
            abstract=paper.abstract,
            year=paper.year,
            authors=paper.authors,
        )

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        papers = openalex.search_works(self.client, query, before=cutoff, per_page=k)
        return [w for w in (self._work(p) for p in papers) if w is not None]

    def read(self, paper_id: str) -> Work | None:
        for lookup in [*self._openalex.get(paper_id, []), paper_id]:
            try:
                return self._work(openalex.fetch_work(self.client, lookup))
            except (InputError, NotFound, BadRequest):
                continue  # not an ID OpenAlex can look up, or no such work
        return None


def make_backend(
    name: str, con: duckdb.DuckDBPyConnection, client: Callable[[], HttpClient]
) -> Backend:
    """A backend by name; ``client`` is called only for the live one."""
    if name == "local":
        return LocalBackend(con)
    if name == "openalex":
        return OpenAlexBackend(client(), store.catalog(con))
    raise InputError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")
