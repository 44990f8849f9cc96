"""Semantic Scholar Graph API: references with citation signals, /paper/batch, and parsers.

How semanticscholar is hooked: semanticscholar 0.12 opens a new httpx client per request,
retries only on 429 (a 5xx fails at once), has no client-side throttle, does not send the API
key on ``/references``, and its DEBUG log prints the ``x-api-key`` header. Its models also break
on partial records (``Paper({}).url`` raises). So we take from it only the names of the
reference signal fields (``BaseReference.FIELDS``), send every request through ``http.py``, and
parse the raw JSON with the pure functions below, which the bulk Datasets files share.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from semanticscholar.BaseReference import BaseReference

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
    *BaseReference.FIELDS,
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


def _ids(raw: Fields) -> PaperIds:
    external = raw.get("externalIds", dict) or {}
    corpus = raw.get("corpusId", int, str) or external.get("CorpusId")
    values: dict[str, object] = {
        "s2": raw.get("paperId", str),
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


def _date(raw: Fields) -> tuple[dt.date | None, int | None, DatePrecision | None]:
    """(day, year, precision); a year outside 1000-2100 is no year."""
    year = raw.get("year", int)
    year = year if year is None or 1000 <= year <= 2100 else None
    value = raw.get("publicationDate", str)
    if value:
        try:
            return dt.date.fromisoformat(value[:10]), year, DatePrecision.DAY
        except ValueError:
            raw.problems.append(f"publicationDate: {value[:40]!r} is not a date")
    return None, year, DatePrecision.YEAR if year else None


def _names(raw: Fields, name: str, key: str) -> list[str]:
    listed = raw.get(name, list) or []
    return [
        str(item[key]) if isinstance(item, dict) else str(item)
        for item in listed
        if (isinstance(item, dict) and isinstance(item.get(key), str)) or isinstance(item, str)
    ]


def parse_paper(record: Mapping[str, Any]) -> Paper:
    """One S2 paper record (API, or a line of the Datasets ``papers`` files) -> Paper.

    A field of the wrong type is read as missing and named in ``Paper.problems``.
    """
    raw = Fields(record)
    published, year, precision = _date(raw)
    fields = dict.fromkeys(
        [*_names(raw, "fieldsOfStudy", "category"), *_names(raw, "s2FieldsOfStudy", "category")]
    )
    count = raw.get("referenceCount", int)
    paper_ids = _ids(raw)
    return Paper(
        source=Source.S2,
        ids=paper_ids,
        title=raw.get("title", str) or None,
        abstract=raw.get("abstract", str) or None,
        year=year,
        publication_date=published,
        date_precision=precision,
        venue=raw.get("venue", str) or None,
        authors=tuple(_names(raw, "authors", "name")),
        fields=tuple(fields),
        reference_count=count if count is None or count >= 0 else None,
        problems=tuple(raw.problems),
    )


def parse_reference(item: Mapping[str, Any], target_id: str, position: int) -> Reference:
    """One entry of ``/paper/{id}/references``. A null paperId stays, as unresolved.

    Fields of the wrong type are read as missing, as in :func:`parse_paper`.
    """
    signals = Fields(item)
    cited = Fields(signals.get("citedPaper", dict) or {})
    published, year, _ = _date(cited)
    intents = [i for i in signals.get("intents", list) or () if isinstance(i, str)]
    contexts = [c for c in signals.get("contexts", list) or () if isinstance(c, str)]
    paper_ids = _ids(cited)
    return Reference(
        target_id=target_id,
        ref_key=f"s2:{position}",
        ids=paper_ids,
        title=cited.get("title", str) or None,
        year=year,
        publication_date=published,
        contexts=tuple(contexts) if item.get("contexts") is not None else None,
        intents=tuple(dict.fromkeys(intents)) if item.get("intents") is not None else None,
        is_influential=signals.get("isInfluential", bool),
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
