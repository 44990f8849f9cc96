"""The three bibliographic sources, and a client wired to all of them.

Each module is a fetch layer (through ``http.py``) plus pure ``parse`` functions, and exports
a ``CODEC`` that tells ``http.py`` how the source names resources, pages and errors.
"""

from __future__ import annotations

from collections.abc import Iterable

import duckdb

from inspire_build import ids
from inspire_build.config import Settings
from inspire_build.errors import InputError, InspireError
from inspire_build.http import HttpClient, ResponseStore, SourceCodec, SourceMode
from inspire_build.models import Paper, PaperIds, Provenance, Reference, ReferenceStatus, Source
from inspire_build.sources import arxiv, openalex, semanticscholar


def register(codecs: Iterable[SourceCodec]) -> dict[str, SourceCodec]:
    """Name -> codec. Refuses two codecs with one name."""
    registry: dict[str, SourceCodec] = {}
    for codec in codecs:
        if codec.name in registry:
            raise InspireError(f"source {codec.name!r} is registered twice")
        registry[codec.name] = codec
    return registry


CODECS = register([openalex.CODEC, semanticscholar.CODEC, arxiv.CODEC])


def make_client(
    settings: Settings,
    con: duckdb.DuckDBPyConnection | None,
    mode: SourceMode | None = None,
) -> HttpClient:
    """An HttpClient for every source, recording into ``con``'s raw store when given."""
    store = ResponseStore(con) if con is not None else None
    return HttpClient(settings, CODECS, store, mode=mode)


def default_source(paper_id: str) -> str:
    """The source that knows an ID best: arXiv for arXiv IDs, S2 for S2 IDs, else OpenAlex."""
    scheme = ids.parse_any_id(paper_id).scheme
    return {ids.Scheme.ARXIV: "arxiv", ids.Scheme.S2: "s2", ids.Scheme.CORPUS_ID: "s2"}.get(
        scheme, "openalex"
    )


def fetch_paper(client: HttpClient, paper_id: str, source: str) -> Paper:
    """One paper's record from the named source."""
    if source == "openalex":
        return openalex.fetch_work(client, paper_id)
    if source == "s2":
        return semanticscholar.fetch_paper(client, paper_id)
    if source == "arxiv":
        return arxiv.fetch_record(client, paper_id)
    raise InputError(f"unknown source {source!r}; known: {', '.join(CODECS)}")


def fetch_references(client: HttpClient, paper_id: str, source: str) -> list[Reference]:
    """A paper's reference list as one source gives it (merging is lineage's job).

    S2 gives citation contexts and intents; OpenAlex gives ``referenced_works``, whose records
    are then fetched in OR-filter batches. A listed work with no record stays, unresolved.
    """
    if source == "s2":
        return semanticscholar.fetch_references(client, paper_id)
    if source != "openalex":
        raise InputError(f"references come from s2 or openalex, not {source!r}")
    work = openalex.fetch_work(client, paper_id)
    target = str(ids.parse_any_id(paper_id))
    listed = [w.removeprefix("openalex:") for w in work.referenced_works or ()]
    records = openalex.fetch_works(client, listed) if listed else {}
    references = []
    for position, work_id in enumerate(listed):
        record = records.get(work_id)
        references.append(
            Reference(
                target_id=target,
                ref_key=f"openalex:{position}",
                ids=record.ids if record else PaperIds(openalex=work_id),
                title=record.title if record else None,
                year=record.year if record else None,
                publication_date=record.publication_date if record else None,
                provenance=(Provenance(source=Source.OPENALEX),),
                status=None if record else ReferenceStatus.UNRESOLVED,
                reason=None if record else f"OpenAlex has no record for {work_id}",
            )
        )
    return references
