"""OpenAlex: works by ID in OR-filter batches, filtered listings with cursor paging, and parse().

How pyalex is hooked: pyalex 0.21 builds good queries (``Works().filter_or(...).select(...)``
renders OR filters and field lists correctly) but hard-codes ``https://api.openalex.org`` in
``.url``, ignores ``config.openalex_url``, opens a new ``requests`` session per call and does
not retry 403. So we use pyalex only to *build* the query and to rebuild abstracts
(``invert_abstract``); we take the path and query of its ``.url`` and send them through
``http.py``, which adds the base URL, the key, paging, retries and the store.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from pyalex import Works, invert_abstract

from inspire_build import ids
from inspire_build.config import Settings, SplitConfig
from inspire_build.errors import InputError, InvalidIdError
from inspire_build.http import (
    Described,
    HttpClient,
    Paging,
    Params,
    SourceCodec,
    split_unreadable,
)
from inspire_build.models import DatePrecision, Paper, PaperIds, Source
from inspire_build.sources.raw import Fields, dicts

NAME = "openalex"
BASE_URL = "https://api.openalex.org"
PER_PAGE_MAX = 100
OR_VALUES_MAX = 100
URL_MAX = 4096
# Room left in the URL for the base URL override, api_key and mailto added by http.py.
URL_RESERVE = 300
# Semantic search matches on the first 2,000 characters of its text and ignores the rest.
SEMANTIC_TEXT_MAX = 2000
# The fields a search identity check reads of each result: its IDs.
ID_FIELDS = ("id", "doi", "ids", "title", "publication_date", "locations")
# OpenAlex's own source ID for the arXiv repository.
ARXIV_SOURCE = "S4306400194"
# The top-level fields parse() reads (select= takes top-level fields only).
WORK_FIELDS = (
    "id",
    "doi",
    "ids",
    "title",
    "display_name",
    "publication_date",
    "publication_year",
    "abstract_inverted_index",
    "referenced_works",
    "referenced_works_count",
    "authorships",
    "primary_location",
    "locations",
    "primary_topic",
    "topics",
)
# OpenAlex's 26 fields (ASJC codes), for turning split settings into primary_topic filters.
FIELD_IDS = {
    "Agricultural and Biological Sciences": 11,
    "Arts and Humanities": 12,
    "Biochemistry, Genetics and Molecular Biology": 13,
    "Business, Management and Accounting": 14,
    "Chemical Engineering": 15,
    "Chemistry": 16,
    "Computer Science": 17,
    "Decision Sciences": 18,
    "Earth and Planetary Sciences": 19,
    "Economics, Econometrics and Finance": 20,
    "Energy": 21,
    "Engineering": 22,
    "Environmental Science": 23,
    "Immunology and Microbiology": 24,
    "Materials Science": 25,
    "Mathematics": 26,
    "Medicine": 27,
    "Neuroscience": 28,
    "Nursing": 29,
    "Pharmacology, Toxicology and Pharmaceutics": 30,
    "Physics and Astronomy": 31,
    "Psychology": 32,
    "Social Sciences": 33,
    "Veterinary": 34,
    "Dentistry": 35,
    "Health Professions": 36,
}
_ID_FILTER_KEYS = {"openalex", "cites", "cited_by", "referenced_works", "related_to"}
_FILTER_ALIASES = {"openalex_id": "openalex", "ids.openalex": "openalex"}


# --- describing requests for the store ----------------------------------------------------------


def _canonical_entity(raw: str) -> str:
    """``/works/{id}``: W-ids, DOIs in any dress, and arXiv DOIs name one resource each."""
    try:
        parsed = ids.parse_any_id(raw)
    except InvalidIdError:
        return raw.strip().lower()
    if parsed.scheme is ids.Scheme.OPENALEX:
        return parsed.value
    if parsed.scheme is ids.Scheme.ARXIV:
        return "doi:" + ids.arxiv_to_doi(parsed.value)
    if parsed.scheme is ids.Scheme.DOI:
        return "doi:" + parsed.value
    return raw.strip().lower()


def _canonical_value(key: str, value: str) -> str:
    negated = value.startswith("!")
    body = value[1:] if negated else value
    try:
        if key in _ID_FILTER_KEYS:
            body = ids.normalize_openalex(body)
        elif key == "doi":
            body = ids.normalize_doi(body)
    except InvalidIdError:
        body = body.strip()
    return ("!" if negated else "") + body


def canonical_filter(text: str) -> str:
    """Order-free form of a filter: clauses sorted, OR values sorted, IDs canonical."""
    clauses = []
    for clause in text.split(","):
        if not clause.strip():
            continue
        key, _, value = clause.partition(":")
        key = key.strip().lower().replace("-", "_")
        key = _FILTER_ALIASES.get(key, key)
        values = sorted(_canonical_value(key, v) for v in value.split("|"))
        clauses.append(f"{key}:{'|'.join(values)}")
    return ",".join(sorted(clauses))


def describe(method: str, path: str, params: Params, body: Any) -> Described:
    query = dict((k.replace("-", "_"), v) for k, v in params)
    select = query.get("select")
    fields = tuple(sorted(f.strip() for f in select.split(",") if f.strip())) if select else None
    path = path.rstrip("/")
    if path.startswith("/works/"):
        return Described(f"works/{_canonical_entity(path[len('/works/') :])}", fields, None)
    parts = [path.lstrip("/")]
    for name in ("filter", "search", "search.semantic", "sort", "sample", "seed", "group_by"):
        if name in query:
            value = canonical_filter(query[name]) if name == "filter" else query[name]
            parts.append(f"{name}={value}")
    cursor, page = query.get("cursor"), query.get("page")
    if cursor and cursor != "*":
        parts.append(f"cursor={cursor}")
    elif page and page != "1":
        parts.append(f"page={page}")
    else:
        parts.append("page=first")
    page_size = int(query.get("per_page", "25"))  # 25 is the API's default page size
    return Described(" ".join(parts), fields, page_size)


def is_complete(data: Any) -> bool:
    """A list page (its JSON) is complete when it is the first page and holds every result."""
    if not isinstance(data, dict) or "results" not in data:
        return True  # a single entity
    meta = data.get("meta") or {}
    count = meta.get("count")
    return meta.get("page") in (None, 1) and count is not None and count <= len(data["results"])


def _split_page(body: bytes) -> tuple[list[Any], str | None]:
    data = json.loads(body)
    following = (data.get("meta") or {}).get("next_cursor")
    return list(data.get("results") or []), None if not following else f"cursor={following}"


def _join_pages(first: bytes, items: list[Any], following: str | None) -> bytes:
    meta = dict(json.loads(first).get("meta") or {})
    meta |= {"per_page": len(items), "page": None}
    meta["next_cursor"] = following.removeprefix("cursor=") if following else None
    return json.dumps({"meta": meta, "results": items}).encode()


def _ends(last: bytes, count: int) -> bool:
    """A cursor chain ends at an explicit null ``next_cursor``; a page-numbered first page
    (no ``next_cursor``) ends the list only when it holds every result."""
    meta = json.loads(last).get("meta") or {}
    if "next_cursor" in meta:
        return meta["next_cursor"] is None
    return (
        meta.get("page") in (None, 1) and meta.get("count") is not None and meta["count"] <= count
    )


# Listings chain by cursor; replay joins stored pages of any size into the size asked for.
PAGING = Paging(split=_split_page, join=_join_pages, ends=_ends)


def credentials(settings: Settings) -> tuple[Params, dict[str, str]]:
    params = []
    if settings.openalex_api_key is not None:
        params.append(("api_key", settings.openalex_api_key.get_secret_value()))
    if settings.contact_email is not None:
        params.append(("mailto", settings.contact_email.get_secret_value()))
    return params, {}


def final_403(status: int, body: bytes) -> bool:
    """A 403 that is not the per-second limit: a JSON error whose ``error``/``message`` speak of
    no rate or limit (a key refused for an endpoint, say). A 403 without such a message (empty,
    or an HTML page from the edge) is taken for the limit, and retried."""
    if status != 403:
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return False
    if not isinstance(data, dict) or not (data.get("error") or data.get("message")):
        return False
    text = f"{data.get('error')} {data.get('message')}".lower()
    return not any(word in text for word in ("rate", "limit", "too many"))


CODEC = SourceCodec(
    name=NAME,
    default_base_url=BASE_URL,
    describe=describe,
    is_complete=is_complete,
    # OpenAlex answers 403 when the per-second limit is hit, 429 for the daily one.
    transient_statuses=frozenset({403, 429, 500, 502, 503, 504}),
    credentials=credentials,
    final_despite_status=final_403,
    paging=PAGING,
)


# --- parsing (pure) -----------------------------------------------------------------------------


def _arxiv_id(work: Mapping[str, Any], doi: str | None) -> str | None:
    if doi:
        from_doi = ids.doi_to_arxiv(doi)
        if from_doi:
            return from_doi
    for location in dicts(work.get("locations")):
        source = location.get("source")
        if isinstance(source, dict) and str(source.get("id", "")).endswith(ARXIV_SOURCE):
            for url in (location.get("landing_page_url"), location.get("pdf_url")):
                try:
                    return ids.normalize_arxiv(url) if isinstance(url, str) else None
                except InvalidIdError:
                    continue
    return None


def parse(work: Mapping[str, Any]) -> Paper:
    """One OpenAlex work record (API, or a line of the bulk snapshot) -> Paper.

    A field of the wrong type is read as missing and named in ``Paper.problems``.
    """
    raw = Fields(work)
    doi = raw.get("doi", str)
    published = raw.date("publication_date")
    primary = raw.get("primary_topic", dict)
    topics = [primary, *dicts(raw.get("topics", list))]
    fields = dict.fromkeys(
        str(t["field"]["display_name"])
        for t in topics
        if isinstance(t, dict)
        and isinstance(t.get("field"), dict)
        and isinstance(t["field"].get("display_name"), str)
    )
    referenced = raw.openalex_ids("referenced_works")
    location = raw.get("primary_location", dict) or {}
    source = location.get("source")
    venue = source.get("display_name") if isinstance(source, dict) else None
    venue = venue if isinstance(venue, str) else None
    authors = tuple(
        str(a["author"]["display_name"])
        for a in dicts(raw.get("authorships", list))
        if isinstance(a.get("author"), dict) and isinstance(a["author"].get("display_name"), str)
    )
    count = raw.get("referenced_works_count", int)
    listed_count = count if count is not None and count >= 0 else len(referenced or ()) or None
    inverted = raw.get("abstract_inverted_index", dict)
    year = raw.get("publication_year", int)
    openalex_id = raw.get("id", str)
    try:
        doi_value = ids.normalize_doi(doi) if doi else None
    except InvalidIdError:
        raw.problems.append(f"doi: {doi[:40]!r} is not a DOI")
        doi_value = None
    title = raw.get("title", str) or raw.get("display_name", str) or None
    paper_ids = PaperIds(
        openalex=openalex_id,
        doi=None if doi_value and ids.doi_to_arxiv(doi_value) else doi_value,
        arxiv=_arxiv_id(work, doi_value),
    )
    return Paper(
        source=Source.OPENALEX,
        ids=paper_ids,
        title=title,
        abstract=_abstract(inverted, raw.problems),
        year=year if year is None or 1000 <= year <= 2100 else None,
        publication_date=published,
        date_precision=DatePrecision.DAY if published else None,
        venue=venue or None,
        authors=authors,
        fields=tuple(fields),
        reference_count=listed_count,
        referenced_works=referenced,
        problems=tuple(raw.problems),
    )


def _abstract(inverted: dict[str, Any] | None, problems: list[str]) -> str | None:
    try:
        return invert_abstract(inverted) or None
    except (TypeError, ValueError, IndexError):  # positions that are not lists of numbers
        problems.append("abstract_inverted_index: positions are not lists of numbers")
        return None


def parse_page(page: Mapping[str, Any]) -> tuple[list[Paper], Mapping[str, Any]]:
    return [parse(work) for work in page.get("results") or []], page.get("meta") or {}


# --- fetching -----------------------------------------------------------------------------------


def _path_and_params(url: str) -> tuple[str, list[tuple[str, str]]]:
    """Path and query of a URL pyalex built; its host is dropped (http.py adds ours)."""
    parts = urlsplit(url)
    return unquote(parts.path), parse_qsl(parts.query, keep_blank_values=True)


def _url_length(path: str, params: Params) -> int:
    return len(BASE_URL) + len(path) + 1 + len(urlencode(params))


def fetch_work(client: HttpClient, paper_id: str) -> Paper:
    """One work by OpenAlex W-id, DOI or arXiv ID (a single-ID lookup, free of charge)."""
    entity = _canonical_entity(paper_id)
    if not (entity.startswith("W") or entity.startswith("doi:")):
        raise InputError(f"OpenAlex looks works up by W-id, DOI or arXiv ID, not {paper_id!r}")
    params = [("select", ",".join(WORK_FIELDS))]
    return parse(client.get(NAME, f"/works/{entity}", params).json())


def batch_queries(paper_ids: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Group IDs into OR-filter batches: ≤ 100 values and a URL under 4,096 characters.

    Returns ``(filter key, values)`` pairs; W-ids go through ``openalex:``, DOIs and arXiv IDs
    (as their DataCite DOI) through ``doi:``.
    """
    by_key: dict[str, list[str]] = {"openalex": [], "doi": []}
    for raw in dict.fromkeys(paper_ids):
        entity = _canonical_entity(raw)
        if entity.startswith("W"):
            by_key["openalex"].append(entity)
        elif entity.startswith("doi:"):
            by_key["doi"].append(entity[len("doi:") :])
        else:
            raise InputError(f"OpenAlex cannot look up {raw!r}: not a W-id, DOI or arXiv ID")
    batches: list[tuple[str, list[str]]] = []
    for key, values in by_key.items():
        start = 0
        while start < len(values):
            size = _batch_size(key, values[start : start + OR_VALUES_MAX])
            batches.append((key, values[start : start + size]))
            start += size
    return batches


def _batch_size(key: str, values: list[str]) -> int:
    """How many of ``values`` (at most :data:`OR_VALUES_MAX`) go in one URL: the longest
    prefix whose URL fits, and at least one. A URL grows with each value added, so the prefix
    is found by halving, with a handful of URLs built rather than one per value."""

    def fits(count: int) -> bool:
        path, params = _list_query({key: values[:count]})
        return _url_length(path, params) <= URL_MAX - URL_RESERVE

    low, high = 1, len(values)  # the prefix of ``low`` is taken whether it fits or not
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _list_query(
    or_filter: Mapping[str, list[str]], per_page: int = PER_PAGE_MAX
) -> tuple[str, list[tuple[str, str]]]:
    query = Works().filter_or(**or_filter).select(list(WORK_FIELDS))
    path, params = _path_and_params(query.url)
    return path, [*params, ("per_page", str(per_page))]


def fetch_works(
    client: HttpClient, paper_ids: Sequence[str], failed: dict[str, str] | None = None
) -> dict[str, Paper | None]:
    """Works by ID in OR-filter batches. Every requested ID is a key; None means not found.

    With ``failed``, a batch whose answer stays unreadable is asked again in halves (one bad
    record breaks a whole page; ``http.split_unreadable``), and the IDs whose own answer is
    unreadable go into ``failed`` (ID -> why) instead of failing the others.
    """
    found: dict[str, Paper | None] = {raw: None for raw in paper_ids}
    wanted = {_canonical_entity(raw): raw for raw in paper_ids}

    def ask(query: tuple[str, list[str]]) -> tuple[list[Paper], dict[str, str]]:
        key, values = query
        unreadable: dict[str, str] = {}  # the batch's own, merged below in the batches' order
        prefix = "doi:" if key == "doi" else ""
        kept = None if failed is None else unreadable  # None: an unreadable batch raises
        return _batch(client, key, values, prefix, kept, wanted), unreadable

    # The batches are asked at once (``HttpClient.at_once``) and read in their own order.
    for papers, unreadable in client.at_once(ask, batch_queries(paper_ids)):
        if failed is not None:
            failed.update(unreadable)
        for paper in papers:
            for name in _entity_names(paper):
                if name in wanted:
                    found[wanted[name]] = paper
    return found


def _batch(
    client: HttpClient,
    key: str,
    values: list[str],
    prefix: str,
    failed: dict[str, str] | None,
    wanted: Mapping[str, str],
) -> list[Paper]:
    def ask(chunk: list[str]) -> list[Paper]:
        path, params = _list_query({key: chunk})
        return list(_pages(client, path, params))

    def shown(value: str) -> str:
        return wanted.get(prefix + value, value)

    return split_unreadable(ask, values, failed, "OpenAlex", shown)


def _entity_names(paper: Paper) -> list[str]:
    names = []
    if paper.ids.openalex:
        names.append(paper.ids.openalex)
    if paper.ids.doi:
        names.append("doi:" + paper.ids.doi)
    if paper.ids.arxiv:
        names.append("doi:" + ids.arxiv_to_doi(paper.ids.arxiv))
    return names


def list_works(client: HttpClient, filter_text: str) -> list[Paper]:
    """Every work matching an OpenAlex filter string, cursor-paged 100 at a time."""
    return list(iter_works(client, filter_text))


def iter_works(client: HttpClient, filter_text: str) -> Iterator[Paper]:
    """:func:`list_works`, one page at a time, for listings too large to hold at once."""
    params = [
        ("filter", filter_text),
        ("select", ",".join(WORK_FIELDS)),
        ("per_page", str(PER_PAGE_MAX)),
    ]
    return _pages(client, "/works", params)


def search_works(
    client: HttpClient, query: str, *, before: dt.date | None, per_page: int
) -> list[Paper]:
    """One page of OpenAlex's full-text search; with ``before``, only works published before it.

    ``to_publication_date`` is inclusive, so it is set to the day before ``before``. It filters
    on OpenAlex's own date, which callers must not take for a first public date.
    """
    params = [("search", query)]
    if before is not None:
        params.append(("filter", f"to_publication_date:{before - dt.timedelta(days=1)}"))
    params += [("select", ",".join(WORK_FIELDS)), ("per_page", str(min(per_page, PER_PAGE_MAX)))]
    papers, _ = parse_page(client.get(NAME, "/works", params).json())
    return papers


def search_similar(
    client: HttpClient, text: str, *, since: dt.date, per_page: int
) -> tuple[list[Paper], int | None]:
    """One page of OpenAlex's semantic search (``search.semantic``) among works published from
    ``since`` on, and how many works that holds (``meta.count``, when given).

    Semantic, not ``search``: the keyword search joins a query's words with AND, so a paragraph
    such as a brief matches next to nothing; the semantic search ranks works by the meaning of
    up to 2,000 characters of text. Only each result's IDs are asked for."""
    params = [
        ("search.semantic", " ".join(text.split())[:SEMANTIC_TEXT_MAX]),
        ("filter", f"from_publication_date:{since}"),
        ("select", ",".join(ID_FIELDS)),
        ("per_page", str(min(per_page, PER_PAGE_MAX))),
    ]
    papers, meta = parse_page(client.get(NAME, "/works", params).json())
    count = meta.get("count")
    return papers, count if isinstance(count, int) else None


def _pages(client: HttpClient, path: str, params: Params) -> Iterator[Paper]:
    """Cursor paging (``cursor=*`` first), until the count is reached or no cursor is left."""
    cursor: str | None = "*"
    seen = 0
    while cursor:
        page = client.get(NAME, path, [*params, ("cursor", cursor)]).json()
        papers, meta = parse_page(page)
        yield from papers
        seen += len(papers)
        count = meta.get("count")
        cursor = meta.get("next_cursor")
        if not papers or (count is not None and seen >= count):
            return


def candidate_filter(split: SplitConfig) -> str:
    """The OpenAlex filter for a split's candidate targets."""
    clauses = [
        window_filter(split.fields, split.start, split.end),
        f"locations.source.id:{ARXIV_SOURCE}",
    ]
    if split.min_references:
        clauses.append(f"referenced_works_count:>{split.min_references - 1}")
    return ",".join(clauses)


def window_filter(fields: Sequence[str], start: dt.date, end: dt.date) -> str:
    """Works of these fields (names or ASJC numbers) published from ``start`` to ``end``."""
    return ",".join(
        [
            f"primary_topic.field.id:{'|'.join(map(str, field_ids(fields)))}",
            f"from_publication_date:{start.isoformat()}",
            f"to_publication_date:{end.isoformat()}",
        ]
    )


def field_ids(fields: Sequence[str]) -> list[int]:
    """Field names or ASJC numbers -> the numbers, as ``primary_topic.field.id`` takes them."""
    found = []
    for name in fields:
        if name.isdigit():
            found.append(int(name))
        elif name in FIELD_IDS:
            found.append(FIELD_IDS[name])
        else:
            known = ", ".join(sorted(FIELD_IDS))
            raise InputError(f"unknown OpenAlex field {name!r}; known fields: {known}")
    return found
