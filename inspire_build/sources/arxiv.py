"""arXiv: ``id_list`` lookups (≤ 100 per request) for first-public (v1) dates and categories.

How arxiv is used: the arxiv 4.0.2 ``Client`` keeps its own ``requests.Session`` with no
timeout, applies its 3 s delay per Client instance only, and retries a 400 as if it were
transient; ``Search(max_results=100)`` also truncates longer ``id_list``s. So we build the query
ourselves and send it through ``http.py`` (one connection, one request per
``INSPIRE_ARXIV_INTERVAL_S``, shared by every thread). From the package we take its record,
``arxiv.Result`` (with ``Result.Author`` and ``Result.Link``): :func:`read_results` turns each
feed entry into one through the public constructor, and :func:`parse_feed` reads the Paper from
it. The package parses feeds only inside ``Client.results``, which fetches them itself, and its
parser (``arxiv._feed``) is internal; so :func:`read_results` reads the tree ``check_body``
parsed, as that parser reads it: timestamps as aware UTC datetimes, whitespace runs in titles
folded to one space, an entry without an ID, ``updated`` or ``published`` skipped. arXiv's error
entries have no ``published``, so :func:`error_message` reads them itself.

The Atom API gives two dates per entry: ``published`` (v1) and ``updated`` (the version
returned, the latest unless a version was asked for), both UTC; a date is the UTC day.
Intermediate version dates need OAI-PMH; ``Paper.versions`` holds what the API gives.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from collections.abc import Mapping, Sequence
from typing import Any
from xml.etree import ElementTree

from arxiv import Result

from inspire_build import ids
from inspire_build.errors import InvalidIdError
from inspire_build.http import (
    Described,
    HttpClient,
    NotFound,
    Params,
    SourceCodec,
    split_unreadable,
)
from inspire_build.models import DatePrecision, Paper, PaperIds, Source, Version
from inspire_build.sources.raw import Fields, dicts

NAME = "arxiv"
BASE_URL = "https://export.arxiv.org/api/query"
ID_LIST_MAX = 100
_ATOM = "{http://www.w3.org/2005/Atom}"
_OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
# An entry's fields are found by their full names, without a prefix map: ElementTree then finds
# a child in C rather than through ElementPath, the bulk of reading a feed.


# --- describing requests for the store ----------------------------------------------------------


def _canonical_listed(raw: str) -> str:
    """An ``id_list`` entry keeps its version: a versioned lookup returns that version only."""
    try:
        arxiv_id, version = ids.split_arxiv_version(raw)
    except InvalidIdError:
        return raw.strip().lower()
    return f"{arxiv_id}v{version}" if version else arxiv_id


def describe(method: str, path: str, params: Params, body: Any) -> Described:
    query = dict(params)
    parts = ["query"]
    id_list = [i for i in query.get("id_list", "").split(",") if i.strip()]
    if id_list:
        parts.append("id_list=" + ",".join(_canonical_listed(i) for i in id_list))
    search = query.get("search_query", "")
    if search:
        parts.append(f"search_query={search}")
        parts.append(
            f"sort={query.get('sortBy', 'relevance')}:{query.get('sortOrder', 'descending')}"
        )
    parts.append(f"start={query.get('start', '0')}")
    return Described(" ".join(parts), None, int(query.get("max_results", "10")))


def _feed_counts(root: ElementTree.Element) -> tuple[int, int, int]:
    def number(tag: str) -> int:
        node = root.find(_OPENSEARCH + tag)
        return int(node.text or 0) if node is not None and node.text else 0

    return number("totalResults"), number("startIndex"), len(root.findall(_ATOM + "entry"))


def is_complete(root: ElementTree.Element) -> bool:
    """A feed (its parsed tree) is complete when it starts at 0 and holds every result."""
    total, start, entries = _feed_counts(root)
    return start == 0 and entries >= total


def error_message(body: bytes) -> str:
    """The summary of the feed's error entry (``/api/errors#...``), or the body itself."""
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return body.decode(errors="replace").strip()[:500] or "(empty body)"
    for entry in root.findall(_ATOM + "entry"):
        entry_id = entry.findtext(_ATOM + "id") or ""
        if "/api/errors" in entry_id:
            return (entry.findtext(_ATOM + "summary") or entry_id).strip()
    return "no error entry in the feed"


def check_body(body: bytes) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(body)
    except ElementTree.ParseError as error:  # a SyntaxError, not a ValueError
        raise ValueError(f"malformed Atom feed: {error}") from error


CODEC = SourceCodec(
    name=NAME,
    default_base_url=BASE_URL,
    describe=describe,
    is_complete=is_complete,
    error_message=error_message,
    check_body=check_body,
    max_in_flight=1,  # arXiv asks for one connection
)


# --- parsing (pure) -----------------------------------------------------------------------------


def read_results(root: ElementTree.Element) -> list[Result]:
    """A parsed Atom feed -> one ``arxiv.Result`` per paper entry, as the arxiv client gives
    them: an entry without an ID, ``updated`` or ``published`` (an error entry) is skipped; a
    timestamp that is not ISO 8601 raises ValueError."""
    results = []
    for entry in root.findall(_ATOM + "entry"):
        result = _result(entry)
        if result is not None:
            results.append(result)
    return results


def _result(entry: ElementTree.Element) -> Result | None:
    entry_id = _text(entry, _ATOM + "id")
    if not entry_id:
        return None
    updated = _timestamp(_text(entry, _ATOM + "updated"))
    published = _timestamp(_text(entry, _ATOM + "published"))
    if updated is None or published is None:
        return None
    primary = entry.find(_ARXIV + "primary_category")
    return Result(
        entry_id=entry_id,
        updated=updated,
        published=published,
        title=re.sub(r"\s+", " ", _text(entry, _ATOM + "title") or ""),
        authors=[
            Result.Author(
                name=_text(author, _ATOM + "name") or "",
                affiliation=[
                    a.text for a in author.findall(_ARXIV + "affiliation") if a.text is not None
                ],
            )
            for author in entry.findall(_ATOM + "author")
        ],
        summary=_text(entry, _ATOM + "summary") or "",
        comment=_text(entry, _ARXIV + "comment"),
        journal_ref=_text(entry, _ARXIV + "journal_ref"),
        doi=_text(entry, _ARXIV + "doi"),
        primary_category=(primary.get("term") if primary is not None else None) or "",
        categories=[
            term
            for category in entry.findall(_ATOM + "category")
            if (term := category.get("term")) is not None
        ],
        links=[
            Result.Link(
                href=href,
                title=link.get("title"),
                rel=link.get("rel") or "",
                content_type=link.get("type"),
            )
            for link in entry.findall(_ATOM + "link")
            if (href := link.get("href")) is not None
        ],
    )


def _text(element: ElementTree.Element, path: str) -> str | None:
    found = element.find(path)
    return found.text if found is not None else None


def _timestamp(text: str | None) -> dt.datetime | None:
    """An Atom (RFC 3339) timestamp -> an aware UTC datetime; one without an offset is UTC."""
    if text is None:
        return None
    moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC)


def _paper(result: Result) -> Paper:
    """An ``arxiv.Result`` -> Paper: v1 is dated by ``published``, the version the entry shows
    (when it is a later one) by ``updated``, each as its UTC day."""
    arxiv_id, version = ids.split_arxiv_version(result.entry_id)
    published = result.published.date()
    versions = [Version(version=1, date=published)]
    if version and version > 1:
        versions.append(Version(version=version, date=result.updated.date()))
    doi = result.doi
    return Paper(
        source=Source.ARXIV,
        ids=PaperIds(arxiv=arxiv_id, doi=doi if doi else None),
        title=result.title or None,
        abstract=result.summary or None,
        year=published.year,
        publication_date=published,
        date_precision=DatePrecision.DAY,
        venue=result.journal_ref or None,
        authors=tuple(a.name for a in result.authors),
        fields=tuple(result.categories),
        versions=tuple(versions),
    )


def parse_feed(body: bytes | ElementTree.Element) -> list[Paper]:
    """An Atom feed from the arXiv API (its bytes, or the tree ``check_body`` read) -> one Paper
    per entry (error entries are skipped). A body that is not XML raises ValueError."""
    root = body if isinstance(body, ElementTree.Element) else check_body(body)
    return [_paper(result) for result in read_results(root)]


def parse_metadata(record: Mapping[str, Any]) -> Paper:
    """One line of arXiv's bulk metadata (the OAI-PMH snapshot, as Kaggle publishes it:
    ``id``, ``title``, ``abstract``, ``doi``, ``categories``, ``versions`` with their RFC 2822
    ``created`` dates) -> Paper, with every version dated. A field of the wrong type is read as
    missing and named in ``Paper.problems``."""
    raw = Fields(record)
    arxiv_id = ids.normalize_arxiv(str(record.get("id", "")))
    versions = []
    for item in dicts(raw.get("versions", list)):
        try:
            number = int(str(item.get("version", "")).lstrip("v"))
            day = email.utils.parsedate_to_datetime(str(item.get("created"))).date()
        except (TypeError, ValueError):
            raw.problems.append(f"versions: {str(item)[:60]!r} is not a dated version")
            continue
        versions.append(Version(version=number, date=day))
    versions.sort(key=lambda v: v.version)
    first = next((v.date for v in versions if v.version == 1), None)
    doi = raw.get("doi", str)
    return Paper(
        source=Source.ARXIV,
        ids=PaperIds(arxiv=arxiv_id, doi=doi.split()[0] if doi else None),
        title=" ".join((raw.get("title", str) or "").split()) or None,
        abstract=" ".join((raw.get("abstract", str) or "").split()) or None,
        year=first.year if first else None,
        publication_date=first,
        date_precision=DatePrecision.DAY if first else None,
        venue=raw.get("journal-ref", str) or None,
        fields=tuple((raw.get("categories", str) or "").split()),
        versions=tuple(versions),
        problems=tuple(raw.problems),
    )


def v1_date(paper: Paper) -> dt.date | None:
    return next((v.date for v in paper.versions or () if v.version == 1), None)


# --- fetching -----------------------------------------------------------------------------------


def query(client: HttpClient, id_list: Sequence[str]) -> list[Paper]:
    """One ``id_list`` request, sent as given (no client-side validation)."""
    params = [("id_list", ",".join(id_list)), ("start", "0"), ("max_results", str(len(id_list)))]
    answer = client.get(NAME, "", params)
    # A fresh answer's tree, as check_body read it; a stored one is read here.
    tree = answer.document if isinstance(answer.document, ElementTree.Element) else None
    return parse_feed(answer.body if tree is None else tree)


def fetch_records(
    client: HttpClient, arxiv_ids: Sequence[str], failed: dict[str, str] | None = None
) -> dict[str, Paper | None]:
    """Records by arXiv ID, ≤ 100 per request. Every requested ID is a key; None: not found.

    With ``failed``, a feed that stays unreadable is asked again in halves (one bad entry
    breaks the whole feed; ``http.split_unreadable``), and an ID whose own feed is unreadable
    goes into ``failed`` (ID -> why) instead of failing the others.
    """
    canonical = {raw: ids.normalize_arxiv(raw) for raw in arxiv_ids}
    unique = list(dict.fromkeys(canonical.values()))
    by_id: dict[str, Paper] = {}
    for start in range(0, len(unique), ID_LIST_MAX):
        chunk = unique[start : start + ID_LIST_MAX]
        for paper in split_unreadable(lambda ids_: query(client, ids_), chunk, failed, "arXiv"):
            if paper.ids.arxiv:
                by_id[paper.ids.arxiv] = paper
    return {raw: by_id.get(value) for raw, value in canonical.items()}


def lookup(client: HttpClient, listed_id: str) -> Paper:
    """The record of one ``id_list`` entry, sent as given: arXiv judges the ID.

    An error entry (e.g. ``abc``) raises :class:`BadRequest` with arXiv's message; an empty
    feed (e.g. ``0000.0000``) raises :class:`NotFound`.
    """
    papers = query(client, [listed_id])
    if not papers:
        raise NotFound(NAME, 200, f"not found: arXiv has no record for {listed_id!r}",
                       f"id_list={listed_id}")  # fmt: skip
    return papers[0]


def fetch_record(client: HttpClient, arxiv_id: str) -> Paper:
    """One record by arXiv ID in any accepted form (validated and canonicalised first)."""
    return lookup(client, ids.normalize_arxiv(arxiv_id))
