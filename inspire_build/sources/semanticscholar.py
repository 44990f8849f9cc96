"""Semantic Scholar Graph API: references with citation signals, /paper/batch, and parsers.

How semanticscholar is hooked: semanticscholar 0.12 opens a new httpx client per request,
retries only on 429 (a 5xx fails at once), has no client-side throttle, does not send the API
key on ``/references``, and its DEBUG log prints the ``x-api-key`` header. So every request
goes through ``http.py``, and we take from the package its typed records: a paper is read as a
``semanticscholar.Paper.Paper``, a reference list's entry as a
``semanticscholar.Reference.Reference`` (its ``paper`` the cited Paper), and the fields we ask
for are ones those records read (``Paper.FIELDS``, ``Reference.FIELDS``). Those records take the
API's JSON on trust (a malformed ``publicationDate`` or an author that is not an object raises;
``Paper.url`` raises when the record has none), so :func:`_typed_paper` first reads each field
with its type checked, as the bulk Datasets lines need too: a value of the wrong type is read
as missing, and named.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from semanticscholar.Paper import Paper as S2Paper
from semanticscholar.Reference import Reference as S2Reference

from inspire_build import ids
from inspire_build.config import Settings
from inspire_build.errors import InputError, InvalidIdError
from inspire_build.http import (
    Described,
    HttpClient,
    Paging,
    Params,
    SourceCodec,
    SourceError,
    split_unreadable,
)
from inspire_build.models import (
    DatePrecision,
    Paper,
    PaperIds,
    Provenance,
    Reference,
    ReferenceStatus,
    Source,
)
from inspire_build.sources.raw import Fields

NAME = "s2"
BASE_URL = "https://api.semanticscholar.org/graph/v1"
REFERENCES_LIMIT = 1000
BATCH_MAX = 500
# The API's answer when no fields are asked for.
DEFAULT_FIELDS = ("paperId", "title")
PAPER_FIELDS = (
    "paperId",
    "externalIds",
    "corpusId",
    "title",
    "abstract",
    "year",
    "publicationDate",
    "venue",
    "authors",
    "fieldsOfStudy",
    "referenceCount",
)
# contexts, intents, contextsWithIntent, isInfluential; then what identifies the cited paper.
REFERENCE_FIELDS = (
    *S2Reference.FIELDS,
    "paperId",
    "externalIds",
    "title",
    "year",
    "publicationDate",
)
_API_PREFIXES = {
    ids.Scheme.ARXIV: "ARXIV:",
    ids.Scheme.DOI: "DOI:",
    ids.Scheme.CORPUS_ID: "CorpusId:",
    ids.Scheme.S2: "",
}


# --- identifiers --------------------------------------------------------------------------------


def api_id(paper_id: str) -> str:
    """Our ID -> the form the Graph API takes (``ARXIV:x``, ``DOI:x``, ``CorpusId:n``, hex)."""
    parsed = _parse_s2_id(paper_id)
    if parsed.scheme not in _API_PREFIXES:
        raise InputError(
            f"Semantic Scholar cannot look up {paper_id!r}; use a DOI, arXiv ID, "
            "S2 paperId or CorpusId"
        )
    return _API_PREFIXES[parsed.scheme] + parsed.value


def _parse_s2_id(raw: str) -> ids.PaperId:
    text = raw.strip()
    head, _, rest = text.partition(":")
    if head.upper() in ("DOI", "ARXIV") and rest:
        text = rest
    return ids.parse_any_id(text)


def _canonical_entity(raw: str) -> str:
    try:
        return str(_parse_s2_id(raw))
    except InvalidIdError:
        return raw.strip().lower()


# --- describing requests for the store ----------------------------------------------------------


def describe(method: str, path: str, params: Params, body: Any) -> Described:
    query = dict(params)
    fields_param = query.get("fields")
    fields = (
        tuple(sorted(f.strip() for f in fields_param.split(",") if f.strip()))
        if fields_param
        else DEFAULT_FIELDS
    )
    path = path.strip("/")
    if path == "paper/batch":
        requested = (body or {}).get("ids") or []
        return Described(
            "paper/batch ids=" + ",".join(_canonical_entity(i) for i in requested), fields, None
        )
    if path.startswith("paper/") and path.endswith(("/references", "/citations")):
        entity, _, kind = path[len("paper/") :].rpartition("/")
        resource = f"paper/{_canonical_entity(entity)}/{kind} offset={query.get('offset', '0')}"
        return Described(resource, fields, int(query.get("limit", "100")))
    if path.startswith("paper/"):
        return Described(f"paper/{_canonical_entity(path[len('paper/') :])}", fields, None)
    return Described(
        " ".join(
            [path, *(f"{k}={v}" for k, v in sorted(query.items()) if k not in ("fields", "limit"))]
        ),
        fields,
        int(query["limit"]) if "limit" in query else None,
    )


def is_complete(data: Any) -> bool:
    """A paged answer (its JSON) is complete when it starts at offset 0 and has no next page."""
    if isinstance(data, dict) and "data" in data:
        return not data.get("offset") and data.get("next") is None
    return True


def credentials(settings: Settings) -> tuple[Params, dict[str, str]]:
    if settings.s2_api_key is None:
        return (), {}
    return (), {"x-api-key": settings.s2_api_key.get_secret_value()}


def _split_page(body: bytes) -> tuple[list[Any], str | None]:
    data = json.loads(body)
    following = data.get("next")
    return list(data.get("data") or []), None if following is None else f"offset={following}"


def _join_pages(first: bytes, items: list[Any], following: str | None) -> bytes:
    page: dict[str, Any] = {"offset": json.loads(first).get("offset", 0), "data": items}
    if following is not None:
        page["next"] = int(following.removeprefix("offset="))
    return json.dumps(page).encode()


# A reference or citation list: "next" is absent on its last page.
PAGING = Paging(split=_split_page, join=_join_pages)

CODEC = SourceCodec(
    name=NAME,
    default_base_url=BASE_URL,
    describe=describe,
    is_complete=is_complete,
    credentials=credentials,
    paging=PAGING,
)


# --- parsing (pure) -----------------------------------------------------------------------------


def _typed_paper(raw: Fields) -> S2Paper:
    """The client's typed record of the fields :func:`parse_paper` reads."""
    return S2Paper(_checked(raw))


def _checked(raw: Fields) -> dict[str, Any]:
    """The fields :func:`parse_paper` reads, each of the type the client's record expects or
    None (and named in ``raw.problems``). A year outside 1000-2100 is no year; a
    ``publicationDate`` is kept when its first 10 characters are an ISO date. The fields are
    read in the order their problems are listed."""
    year = raw.get("year", int)
    day = None
    text = raw.get("publicationDate", str)
    if text:
        try:
            day = dt.date.fromisoformat(text[:10])
        except ValueError:
            raw.problems.append(f"publicationDate: {text[:40]!r} is not a date")
    fields = _names(raw, "fieldsOfStudy", "category")
    s2_fields = _names(raw, "s2FieldsOfStudy", "category")
    count = raw.get("referenceCount", int)
    external = raw.get("externalIds", dict)
    return {
        "externalIds": external,
        "corpusId": raw.get("corpusId", int, str),
        "paperId": raw.get("paperId", str),
        "year": year if year is None or 1000 <= year <= 2100 else None,
        "publicationDate": day.isoformat() if day else None,
        "fieldsOfStudy": fields,
        "s2FieldsOfStudy": [{"category": name} for name in s2_fields],
        "referenceCount": count if count is None or count >= 0 else None,
        "title": raw.get("title", str),
        "abstract": raw.get("abstract", str),
        "venue": raw.get("venue", str),
        "authors": [{"name": name} for name in _names(raw, "authors", "name")],
    }


def _names(raw: Fields, name: str, key: str) -> list[str]:
    """A list of names, or of objects naming it under ``key`` (other items are dropped)."""
    listed = raw.get(name, list) or []
    return [
        str(item[key]) if isinstance(item, dict) else str(item)
        for item in listed
        if (isinstance(item, dict) and isinstance(item.get(key), str)) or isinstance(item, str)
    ]


def _ids(paper: S2Paper) -> PaperIds:
    external = paper.externalIds or {}
    corpus = paper.corpusId or external.get("CorpusId")
    values: dict[str, object] = {
        "s2": paper.paperId,
        "corpus_id": str(corpus) if corpus is not None else None,
        "arxiv": external.get("ArXiv"),
        "doi": external.get("DOI"),
    }
    clean: dict[str, str] = {}
    for key, value in values.items():
        if not value or not isinstance(value, str | int):
            continue
        try:
            clean[key] = str(PaperIds.model_validate({key: str(value)}).model_dump()[key])
        except ValueError:
            continue  # a malformed external ID is dropped; the others still identify the work
    if "doi" in clean and ids.doi_to_arxiv(clean["doi"]):
        clean.setdefault("arxiv", ids.doi_to_arxiv(clean["doi"]) or "")
        del clean["doi"]
    return PaperIds.model_validate(clean)


def _day(paper: S2Paper) -> dt.date | None:
    return paper.publicationDate.date() if paper.publicationDate else None


def _paper(paper: S2Paper, problems: Sequence[str]) -> Paper:
    """The client's typed paper record -> Paper."""
    published = _day(paper)
    precision = DatePrecision.DAY if published else DatePrecision.YEAR if paper.year else None
    fields = [*paper.fieldsOfStudy, *(f["category"] for f in paper.s2FieldsOfStudy)]
    return Paper(
        source=Source.S2,
        ids=_ids(paper),
        title=paper.title or None,
        abstract=paper.abstract or None,
        year=paper.year,
        publication_date=published,
        date_precision=precision,
        venue=paper.venue or None,
        authors=tuple(author.name for author in paper.authors),
        fields=tuple(dict.fromkeys(fields)),
        reference_count=paper.referenceCount,
        problems=tuple(problems),
    )


def parse_paper(record: Mapping[str, Any]) -> Paper:
    """One S2 paper record (API, or a line of the Datasets ``papers`` files) -> Paper.

    A field of the wrong type is read as missing and named in ``Paper.problems``.
    """
    raw = Fields(record)
    return _paper(_typed_paper(raw), raw.problems)


def _typed_reference(item: Mapping[str, Any]) -> S2Reference:
    """One entry of ``/paper/{id}/references`` as the client's typed record, its cited paper
    checked as :func:`parse_paper` checks a paper. Contexts and intents keep their strings; a
    list of the wrong type is an empty one (given, but unreadable), an absent or null one None."""
    signals = Fields(item)
    typed: dict[str, Any] = {
        "citedPaper": _checked(Fields(signals.get("citedPaper", dict) or {})),
        "isInfluential": signals.get("isInfluential", bool),
    }
    for name in ("contexts", "intents"):
        listed = signals.get(name, list)
        if item.get(name) is not None:
            typed[name] = [value for value in listed or () if isinstance(value, str)]
    return S2Reference(typed)


def parse_reference(item: Mapping[str, Any], target_id: str, position: int) -> Reference:
    """One entry of ``/paper/{id}/references``. A null paperId stays, as unresolved.

    Fields of the wrong type are read as missing, as in :func:`parse_paper`.
    """
    reference = _typed_reference(item)
    cited = reference.paper
    paper_ids = _ids(cited)
    intents = reference.intents
    return Reference(
        target_id=target_id,
        ref_key=f"s2:{position}",
        ids=paper_ids,
        title=cited.title or None,
        year=cited.year,
        publication_date=_day(cited),
        contexts=None if reference.contexts is None else tuple(reference.contexts),
        intents=None if intents is None else tuple(dict.fromkeys(intents)),
        is_influential=reference.isInfluential,
        provenance=(Provenance(source=Source.S2),),
        status=None if paper_ids.s2 else ReferenceStatus.UNRESOLVED,
        reason=None if paper_ids.s2 else "S2 lists this reference with no paperId",
    )


# --- fetching -----------------------------------------------------------------------------------


def fetch_paper(client: HttpClient, paper_id: str) -> Paper:
    path = f"/paper/{api_id(paper_id)}"
    return parse_paper(client.get(NAME, path, [("fields", ",".join(PAPER_FIELDS))]).json())


def fetch_references(client: HttpClient, paper_id: str) -> list[Reference]:
    """Every reference of a paper, paged ``limit=1000`` by ``offset`` until there is no next."""
    return list(_reference_pages(client, paper_id))


def _reference_pages(client: HttpClient, paper_id: str) -> Iterator[Reference]:
    path = f"/paper/{api_id(paper_id)}/references"
    target = _canonical_entity(paper_id)
    offset = 0
    while True:
        params = [
            ("fields", ",".join(REFERENCE_FIELDS)),
            ("offset", str(offset)),
            ("limit", str(REFERENCES_LIMIT)),
        ]
        page = client.get(NAME, path, params).json()
        items = page.get("data") or []
        for position, item in enumerate(items, start=offset):
            yield parse_reference(item, target, position)
        next_offset = page.get("next")
        if next_offset is None or not items:
            return
        offset = int(next_offset)


def fetch_papers(
    client: HttpClient, paper_ids: Sequence[str], failed: dict[str, str] | None = None
) -> dict[str, Paper | None]:
    """Papers by ID through ``POST /paper/batch``, ≤ 500 per call. None means not found.

    With ``failed``, a batch whose answer stays unreadable is asked again in halves
    (``http.split_unreadable``), and the IDs whose own answer is unreadable go into ``failed``.
    """
    unique = list(dict.fromkeys(paper_ids))
    found: dict[str, Paper | None] = dict.fromkeys(unique)
    for start in range(0, len(unique), BATCH_MAX):
        found.update(_batch(client, unique[start : start + BATCH_MAX], failed))
    return found


def _batch(
    client: HttpClient, chunk: list[str], failed: dict[str, str] | None
) -> dict[str, Paper | None]:
    def ask(ids_: list[str]) -> list[tuple[str, Paper | None]]:
        body = {"ids": [api_id(i) for i in ids_]}
        fields = [("fields", ",".join(PAPER_FIELDS))]
        answer = client.get(NAME, "/paper/batch", fields, json_body=body, method="POST").json()
        if not isinstance(answer, list) or len(answer) != len(ids_):
            shown = len(answer) if isinstance(answer, list) else type(answer).__name__
            raise SourceError(f"s2: /paper/batch answered {shown} records for {len(ids_)} IDs")
        return [
            (raw, parse_paper(record) if isinstance(record, dict) else None)
            for raw, record in zip(ids_, answer, strict=True)
        ]

    return dict(split_unreadable(ask, chunk, failed, "S2"))
