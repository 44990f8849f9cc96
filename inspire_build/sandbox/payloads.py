"""Pure renderers: a world record -> the payload each real API would give for it.

Field names and JSON types follow real recorded responses, kept outside this repository (the
conformance tests compare them where ``INSPIRE_SHARED_FIXTURES`` points: tests/conftest.py).
The sandbox marks itself in values, not in extra keys, so the shapes stay real: OpenAlex works
are ``indexed_in: ["inspire-sandbox"]``, S2 ``url``s and arXiv feed IDs point at
``inspire-sandbox.invalid``, arXiv entries carry an ``arxiv:comment`` saying so, and every
response has the ``X-Inspire-Sandbox`` header.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from inspire_build.sandbox.world import EVAL_START, MARKER, Record

OPENALEX = "https://openalex.org/"
ARXIV_SOURCE = {
    "id": "https://openalex.org/S4306400194",
    "display_name": "arXiv (Cornell University)",
    "issn_l": None,
    "issn": None,
    "is_oa": True,
    "is_in_doaj": False,
    "is_core": False,
    "host_organization": "https://openalex.org/I205783295",
    "host_organization_name": "Cornell University",
    "host_organization_lineage": ["https://openalex.org/I205783295"],
    "host_organization_lineage_names": [],
    "type": "repository",
}
FIELD_IDS = {"Computer Science": 17, "Mathematics": 26, "Physics and Astronomy": 31}
CREATED = "2026-01-01T00:00:00"
S2_PAPER_FIELDS = (
    "paperId",
    "externalIds",
    "corpusId",
    "publicationVenue",
    "url",
    "title",
    "abstract",
    "venue",
    "year",
    "referenceCount",
    "citationCount",
    "influentialCitationCount",
    "isOpenAccess",
    "openAccessPdf",
    "fieldsOfStudy",
    "s2FieldsOfStudy",
    "publicationTypes",
    "publicationDate",
    "journal",
    "citationStyles",
    "authors",
)
OPENALEX_WORK_FIELDS = (
    "id",
    "doi",
    "title",
    "display_name",
    "publication_year",
    "publication_date",
    "ids",
    "language",
    "primary_location",
    "type",
    "indexed_in",
    "open_access",
    "authorships",
    "institutions",
    "countries_distinct_count",
    "institutions_distinct_count",
    "corresponding_author_ids",
    "corresponding_institution_ids",
    "apc_list",
    "apc_paid",
    "fwci",
    "cited_by_count",
    "citation_normalized_percentile",
    "cited_by_percentile_year",
    "biblio",
    "is_retracted",
    "is_paratext",
    "is_xpac",
    "primary_topic",
    "topics",
    "keywords",
    "concepts",
    "mesh",
    "locations_count",
    "locations",
    "best_oa_location",
    "sustainable_development_goals",
    "grants",
    "awards",
    "funders",
    "has_content",
    "referenced_works_count",
    "referenced_works",
    "related_works",
    "abstract_inverted_index",
    "counts_by_year",
    "updated_date",
    "created_date",
)


def _inverted_index(text: str) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for position, word in enumerate(text.split()):
        index.setdefault(word, []).append(position)
    return index


def _author_id(name: str) -> str:
    return "A5" + str(int(hashlib.sha1(name.encode()).hexdigest()[:10], 16) % 10**9).zfill(9)


def _location(record: Record, arxiv: bool) -> dict[str, Any]:
    if arxiv:
        return {
            "id": f"pmh:oai:arXiv.org:{record.arxiv}",
            "is_oa": True,
            "landing_page_url": f"http://arxiv.org/abs/{record.arxiv}",
            "pdf_url": f"https://arxiv.org/pdf/{record.arxiv}",
            "source": ARXIV_SOURCE,
            "license": "other-oa",
            "license_id": "https://openalex.org/licenses/other-oa",
            "version": "submittedVersion",
            "is_accepted": False,
            "is_published": False,
            "raw_source_name": None,
        }
    return {
        "id": f"doi:{record.doi}",
        "is_oa": False,
        "landing_page_url": f"https://doi.org/{record.doi}",
        "pdf_url": None,
        "source": None,
        "license": None,
        "license_id": None,
        "version": "publishedVersion",
        "is_accepted": True,
        "is_published": True,
        "raw_source_name": record.venue,
    }


def _topic(record: Record) -> dict[str, Any]:
    field_id = FIELD_IDS.get(record.field, 17)
    number = int(record.topic[1:])
    return {
        "id": f"{OPENALEX}T1{number:04d}",
        "display_name": f"Sandbox topic {record.topic}",
        "score": 1.0,
        "subfield": {"id": f"{OPENALEX}subfields/{field_id}02", "display_name": record.topic},
        "field": {"id": f"{OPENALEX}fields/{field_id}", "display_name": record.field},
        "domain": {"id": f"{OPENALEX}domains/3", "display_name": "Physical Sciences"},
    }


def openalex_work(record: Record, referenced: Sequence[str], cited_by_count: int) -> dict[str, Any]:
    """The full OpenAlex work record (``referenced`` holds W-ids of the works it cites)."""
    locations = [_location(record, arxiv=False)]
    if record.arxiv:
        locations.append(_location(record, arxiv=True))
    if record.kind == "preprint":
        locations = [_location(record, arxiv=True)]
    date = dt.date.fromisoformat(record.publication_date)
    topic = _topic(record)
    return {
        "id": OPENALEX + record.openalex,
        "doi": f"https://doi.org/{record.doi}",
        "title": record.title,
        "display_name": record.title,
        "publication_year": date.year,
        "publication_date": record.publication_date,
        "ids": {"openalex": OPENALEX + record.openalex, "doi": f"https://doi.org/{record.doi}"},
        "language": "en",
        "primary_location": locations[0],
        "type": "preprint" if record.kind == "preprint" else "article",
        "indexed_in": [MARKER],
        "open_access": {
            "is_oa": bool(record.arxiv),
            "oa_status": "green" if record.arxiv else "closed",
            "oa_url": locations[-1]["pdf_url"],
            "any_repository_has_fulltext": bool(record.arxiv),
        },
        "authorships": [_authorship(record, i, name) for i, name in enumerate(record.authors)],
        "institutions": [],
        "countries_distinct_count": 0,
        "institutions_distinct_count": 0,
        "corresponding_author_ids": [OPENALEX + _author_id(record.authors[0])],
        "corresponding_institution_ids": [],
        "apc_list": None,
        "apc_paid": None,
        "fwci": 1.0,
        "cited_by_count": cited_by_count,
        "citation_normalized_percentile": {
            "value": 0.5,
            "is_in_top_1_percent": False,
            "is_in_top_10_percent": False,
        },
        "cited_by_percentile_year": {"min": 50, "max": 60},
        "biblio": {"volume": None, "issue": None, "first_page": None, "last_page": None},
        "is_retracted": False,
        "is_paratext": False,
        "is_xpac": False,
        "primary_topic": topic,
        "topics": [topic],
        "keywords": [],
        "concepts": [],
        "mesh": [],
        "locations_count": len(locations),
        "locations": locations,
        "best_oa_location": locations[-1] if record.arxiv else None,
        "sustainable_development_goals": [],
        "grants": [],
        "awards": [],
        "funders": [],
        "has_content": {"grobid_xml": False, "pdf": False},
        "referenced_works_count": 0 if record.openalex_references_empty else len(referenced),
        "referenced_works": []
        if record.openalex_references_empty
        else [OPENALEX + w for w in referenced],
        "related_works": [],
        "abstract_inverted_index": _inverted_index(record.abstract),
        "counts_by_year": [],
        "updated_date": CREATED + ".000000",
        "created_date": CREATED,
    }


def _authorship(record: Record, i: int, name: str) -> dict[str, Any]:
    """The ``i``-th author of a work, as OpenAlex lists its authorships."""
    return {
        "author_position": "first"
        if i == 0
        else ("last" if i == len(record.authors) - 1 else "middle"),
        "author": {"id": OPENALEX + _author_id(name), "display_name": name, "orcid": None},
        "institutions": [],
        "countries": [],
        "is_corresponding": i == 0,
        "raw_author_name": name,
        "raw_affiliation_strings": [],
        "affiliations": [],
    }


def s2_paper(record: Record) -> dict[str, Any]:
    """The S2 Graph paper record with every field the real API can return for a paper."""
    external: dict[str, Any] = {"CorpusId": record.corpus_id}
    if record.kind != "preprint":
        external["DOI"] = record.doi
    if record.s2_arxiv:
        external["ArXiv"] = record.s2_arxiv
    venue = record.venue or ("arXiv.org" if record.arxiv else "")
    return {
        "paperId": record.s2,
        "externalIds": external,
        "corpusId": record.corpus_id,
        "publicationVenue": None,
        "url": f"https://{MARKER}.invalid/paper/{record.s2}",
        "title": record.s2_title,
        "abstract": record.abstract,
        "venue": venue,
        "year": record.s2_year,
        "referenceCount": len(record.references),
        "citationCount": 0,
        "influentialCitationCount": 0,
        "isOpenAccess": bool(record.arxiv),
        "openAccessPdf": None,
        "fieldsOfStudy": [record.field],
        "s2FieldsOfStudy": [{"category": record.field, "source": "s2-fos-model"}],
        "publicationTypes": ["JournalArticle"],
        "publicationDate": record.s2_publication_date,
        "journal": {"name": venue} if venue else None,
        "citationStyles": {
            "bibtex": f"@Article{{{record.key},\n title = {{{record.s2_title}}}\n}}"
        },
        "authors": [{"authorId": _author_id(n)[2:], "name": n} for n in record.authors],
    }


def s2_unidentified(record: Record) -> dict[str, Any]:
    """How S2 shows a reference it could not match to a paper: a title and a year, no IDs."""
    paper = dict.fromkeys(s2_paper(record))
    paper.update({"title": record.s2_title, "year": record.s2_year, "venue": "", "authors": []})
    return paper


def hostile_openalex(record: Record, work: dict[str, Any]) -> dict[str, Any]:
    """The work as a hostile world serves it: wrong types, or null in every optional field.

    A cited work's date is a number too; a target's stays a string, so selection can order it.
    """
    if record.hostile == "nulls":
        kept = ("id", "indexed_in")
        return {key: value if key in kept else None for key, value in work.items()}
    if record.hostile != "wrong_types":
        return work
    wrong = {
        **work,
        "title": [work["title"]],
        "display_name": {"text": work["title"]},
        "publication_year": str(work["publication_year"]),
        "referenced_works": " ".join(work["referenced_works"]),
        "referenced_works_count": str(work["referenced_works_count"]),
        "authorships": {"first": work["authorships"][0]},
        "abstract_inverted_index": list(work["abstract_inverted_index"]),
        "topics": {"field": "Computer Science"},
    }
    if record.publication_date < EVAL_START:
        wrong["publication_date"] = int(record.publication_date.replace("-", ""))
    return wrong


def hostile_s2(record: Record, paper: dict[str, Any]) -> dict[str, Any]:
    """The S2 paper as a hostile world serves it (see :func:`hostile_openalex`)."""
    if record.hostile == "nulls":
        return {key: None if key != "paperId" else value for key, value in paper.items()}
    if record.hostile != "wrong_types":
        return paper
    return {
        **paper,
        "title": [paper["title"]],
        "year": f"circa {paper['year']}",
        "publicationDate": 20200101,
        "externalIds": list((paper["externalIds"] or {}).items()),
        "authors": {"first": paper["authors"][0]},
        "fieldsOfStudy": "Computer Science",
        "s2FieldsOfStudy": "Computer Science",
        "referenceCount": "many",
        "abstract": {"text": paper["abstract"]},
        "venue": 7,
    }


def malformed(record: Record) -> bytes:
    """A permanently malformed JSON answer: an unquoted date and no closing brace."""
    return (
        f'{{"id": "{OPENALEX}{record.openalex}", "title": "{record.title}", '
        f'"publication_date": {record.publication_date}, "referenced_works": ['
    ).encode()


def select(record: Mapping[str, Any], fields: Iterable[str] | None) -> dict[str, Any]:
    """S2-style field selection: ``paperId`` always, then the requested fields."""
    if fields is None:
        return {"paperId": record["paperId"], "title": record["title"]}
    chosen = {"paperId": record["paperId"]}
    chosen.update({f: record.get(f) for f in fields if f in record})
    return chosen


def atom_entry(record: Record, version: int | None = None) -> str:
    """One arXiv Atom ``<entry>``: the latest version, or ``version`` if asked for."""
    versions = dict(record.arxiv_versions)
    shown = version or max(versions)
    updated = versions.get(shown, versions[max(versions)])
    categories = "".join(
        f'    <category term={quoteattr(c)} scheme="http://arxiv.org/schemas/atom"/>\n'
        for c in record.categories
    )
    authors = "".join(
        f"    <author>\n      <name>{escape(a)}</name>\n    </author>\n" for a in record.authors
    )
    doi = f"    <arxiv:doi>{escape(record.doi)}</arxiv:doi>\n" if record.kind == "single" else ""
    return (
        "  <entry>\n"
        f"    <id>http://arxiv.org/abs/{record.arxiv}v{shown}</id>\n"
        f"    <title>{escape(record.title)}</title>\n"
        f"    <updated>{updated}T12:00:00Z</updated>\n"
        f'    <link href="https://arxiv.org/abs/{record.arxiv}v{shown}" rel="alternate" '
        'type="text/html"/>\n'
        f'    <link href="https://arxiv.org/pdf/{record.arxiv}v{shown}" rel="related" '
        'type="application/pdf" title="pdf"/>\n'
        f"    <summary>{escape(record.abstract)}</summary>\n"
        f"{categories}"
        f"    <published>{versions[1]}T12:00:00Z</published>\n"
        f"    <arxiv:comment>{MARKER}: a synthetic record</arxiv:comment>\n"
        f"{doi}"
        f"    <arxiv:primary_category term={quoteattr(record.categories[0])}/>\n"
        f"{authors}"
        "  </entry>\n"
    )


def atom_feed(query: str, entries: Sequence[str], total: int, start: int, per_page: int) -> str:
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">\n'
        f"  <id>https://{MARKER}.invalid/api/query</id>\n"
        f"  <title>arXiv Query: {escape(query)}</title>\n"
        f"  <updated>{CREATED}Z</updated>\n"
        f"  <opensearch:itemsPerPage>{per_page}</opensearch:itemsPerPage>\n"
        f"  <opensearch:totalResults>{total}</opensearch:totalResults>\n"
        f"  <opensearch:startIndex>{start}</opensearch:startIndex>\n"
        + "".join(entries)
        + "</feed>\n"
    )


def atom_error(message: str, anchor: str) -> str:
    entry = (
        "  <entry>\n"
        f"    <id>https://arxiv.org/api/errors#{escape(anchor)}</id>\n"
        "    <title>Error</title>\n"
        f"    <updated>{CREATED}Z</updated>\n"
        f"    <summary>{escape(message)}</summary>\n"
        "    <author>\n      <name>arXiv api core</name>\n    </author>\n"
        "  </entry>\n"
    )
    return atom_feed("error", [entry], 1, 0, 1)
