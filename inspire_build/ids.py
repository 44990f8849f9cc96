"""Pure normalisation and validation of paper identifiers.

Canonical forms (the ``value`` of a :class:`PaperId`):

========== =========================== ==============================================
scheme     canonical value             accepted inputs (case-insensitive prefixes)
========== =========================== ==============================================
arxiv      ``2310.00826``,             bare, ``arXiv:``, with ``vN``, abs/pdf URLs,
           ``hep-th/9901001``          the DataCite DOI ``10.48550/arXiv.<id>``
doi        ``10.1145/3383583.3398584`` bare, ``doi:``, ``https://doi.org/``, dx.doi.org
openalex   ``W4385245566``             bare, ``openalex:``, openalex.org URLs
s2         40 lower-case hex digits    bare, ``s2:``, semanticscholar.org/paper URLs
corpusid   ``49313245``                ``CorpusId:``/``CorpusID:`` prefix
========== =========================== ==============================================

arXiv versions are dropped from the canonical value (a work is one work across versions);
:func:`split_arxiv_version` keeps them when needed. Old-style arXiv IDs lose their subject
class (``math.GT/0309136`` -> ``math/0309136``), as arXiv's own canonical form does. An arXiv
DataCite DOI is an alias of the arXiv ID, so :func:`parse_any_id` returns the arXiv ID for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from urllib.parse import unquote

from inspire_build.errors import InvalidIdError


class Scheme(StrEnum):
    ARXIV = "arxiv"
    DOI = "doi"
    OPENALEX = "openalex"
    S2 = "s2"
    CORPUS_ID = "corpusid"


@dataclass(frozen=True, slots=True)
class PaperId:
    """A typed, normalised identifier. ``str()`` gives ``scheme:value``, which parses back."""

    scheme: Scheme
    value: str

    def __str__(self) -> str:
        return f"{self.scheme.value}:{self.value}"


ARXIV_DOI_PREFIX = "10.48550/arxiv."

# New style (2007-04 onward): YYMM.NNNN until 2014-12, YYMM.NNNNN from 2015-01.
_ARXIV_NEW = re.compile(r"(?P<yymm>\d{4})\.(?P<num>\d{4,5})(?:v(?P<version>[1-9]\d*))?")
# Old style (1991 to 2007-03): archive(.SUBJECT-CLASS)/YYMMNNN.
_ARXIV_OLD = re.compile(
    r"(?P<archive>[a-z]+(?:-[a-z]+)?)(?:\.[a-z]{2})?/(?P<yymm>\d{4})(?P<num>\d{3})"
    r"(?:v(?P<version>[1-9]\d*))?",
    re.IGNORECASE,
)
_ARXIV_URL = re.compile(
    r"(?:https?://)?(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/(?P<id>.+?)(?:\.pdf)?/?",
    re.IGNORECASE,
)
_DOI = re.compile(r"10\.\d{4,9}/\S+")
_DOI_URL = re.compile(r"(?:https?://)?(?:dx\.)?doi\.org/(?P<id>.+)", re.IGNORECASE)
_OPENALEX = re.compile(r"[Ww](?P<num>[1-9]\d*)")
_OPENALEX_URL = re.compile(
    r"(?:https?://)?(?:api\.)?openalex\.org/(?:works/)?(?P<id>[^/?#]+)", re.IGNORECASE
)
_S2 = re.compile(r"[0-9a-fA-F]{40}")
_S2_URL = re.compile(
    r"(?:https?://)?(?:www\.|api\.)?semanticscholar\.org/(?:graph/v1/)?paper/(?:[^/]+/)?"
    r"(?P<id>[0-9a-fA-F]{40})/?",
    re.IGNORECASE,
)
_CORPUS_ID = re.compile(r"corpus_?id:\s*(?P<num>\d+)", re.IGNORECASE)


def _new_style_is_valid(yymm: str, num: str) -> bool:
    year, month = int(yymm[:2]), int(yymm[2:])
    if not 1 <= month <= 12 or (year, month) < (7, 4):
        return False
    return len(num) == (5 if (year, month) >= (15, 1) else 4)


def _old_style_is_valid(yymm: str) -> bool:
    year, month = int(yymm[:2]), int(yymm[2:])
    in_range = year >= 91 or (year, month) <= (7, 3)
    return 1 <= month <= 12 and in_range


def _unwrapped(
    text: str, url: re.Pattern[str], label: str, from_url: Callable[[str], str] = str
) -> str:
    """``text`` stripped, and without its URL form (the pattern's ``id`` group, through
    ``from_url``) or its ``label`` prefix (case-insensitive): what is left to validate."""
    raw = text.strip()
    found = url.fullmatch(raw)
    if found:
        return from_url(found.group("id"))
    if raw.lower().startswith(label):
        return raw[len(label) :].strip()
    return raw


# The normalisers are pure, and a build asks for the same IDs again and again (each cited work's
# ID in every record that lists it, then in each model built from it): a bounded memo of their
# answers (not of their errors) spares the regular expressions.
_memo = lru_cache(maxsize=1 << 16)


@_memo
def split_arxiv_version(text: str) -> tuple[str, int | None]:
    """Return ``(canonical arXiv ID, version or None)`` for any accepted arXiv form."""
    raw = text.strip()
    if raw.lower().startswith(ARXIV_DOI_PREFIX):  # never a URL or an ``arxiv:`` form
        raw = raw[len(ARXIV_DOI_PREFIX) :]
    else:
        raw = _unwrapped(raw, _ARXIV_URL, "arxiv:")
    new = _ARXIV_NEW.fullmatch(raw)
    if new and _new_style_is_valid(new.group("yymm"), new.group("num")):
        version = new.group("version")
        return f"{new.group('yymm')}.{new.group('num')}", int(version) if version else None
    old = _ARXIV_OLD.fullmatch(raw)
    if old and _old_style_is_valid(old.group("yymm")):
        version = old.group("version")
        canonical = f"{old.group('archive').lower()}/{old.group('yymm')}{old.group('num')}"
        return canonical, int(version) if version else None
    raise InvalidIdError(f"not an arXiv identifier: {text!r}")


def normalize_arxiv(text: str) -> str:
    """Canonical arXiv ID without version: ``arXiv:2310.00826v2`` -> ``2310.00826``."""
    return split_arxiv_version(text)[0]


@_memo
def normalize_doi(text: str) -> str:
    """Canonical DOI: the bare ``10.x/...`` form, case-folded (DOIs are case-insensitive)."""
    doi = _unwrapped(text, _DOI_URL, "doi:", unquote).lower()
    if not _DOI.fullmatch(doi):
        raise InvalidIdError(f"not a DOI: {text!r}")
    return doi


def arxiv_to_doi(arxiv_id: str) -> str:
    """The DataCite DOI arXiv registers: ``2310.00826`` -> ``10.48550/arxiv.2310.00826``."""
    return ARXIV_DOI_PREFIX + normalize_arxiv(arxiv_id)


def doi_to_arxiv(doi: str) -> str | None:
    """The arXiv ID behind an arXiv DataCite DOI, or None for any other DOI."""
    canonical = normalize_doi(doi)
    if not canonical.startswith(ARXIV_DOI_PREFIX):
        return None
    return normalize_arxiv(canonical[len(ARXIV_DOI_PREFIX) :])


@_memo
def normalize_openalex(text: str) -> str:
    """Canonical OpenAlex work ID: ``https://openalex.org/w123`` -> ``W123``."""
    match = _OPENALEX.fullmatch(_unwrapped(text, _OPENALEX_URL, "openalex:"))
    if not match:
        raise InvalidIdError(f"not an OpenAlex work ID: {text!r}")
    return "W" + match.group("num")


@_memo
def normalize_s2(text: str) -> str:
    """Canonical Semantic Scholar paperId: 40 lower-case hex digits."""
    raw = _unwrapped(text, _S2_URL, "s2:")
    if not _S2.fullmatch(raw):
        raise InvalidIdError(f"not a Semantic Scholar paperId: {text!r}")
    return raw.lower()


def normalize_corpus_id(text: str) -> str:
    """Canonical Semantic Scholar CorpusId: the decimal number without leading zeros."""
    match = _CORPUS_ID.fullmatch(text.strip())
    if not match:
        raise InvalidIdError(f"not a Semantic Scholar CorpusId: {text!r}")
    return str(int(match.group("num")))


def parse_any_id(text: str) -> PaperId:
    """Recognise the scheme of ``text`` and return its canonical typed ID.

    Raises :class:`InvalidIdError` with the offending text when no scheme fits. Bare numbers are
    refused: a CorpusId must carry its ``CorpusId:`` prefix to be told apart from junk.
    """
    raw = text.strip()
    if not raw:
        raise InvalidIdError("empty identifier")
    for scheme, normalize in _ATTEMPTS:
        try:
            value = normalize(raw)
        except InvalidIdError:
            continue
        if scheme is Scheme.DOI and value.startswith(ARXIV_DOI_PREFIX):
            return PaperId(Scheme.ARXIV, normalize_arxiv(value))
        return PaperId(scheme, value)
    shown = (
        repr(text) if len(text) <= _SHOWN else f"{text[:_SHOWN]!r}... ({len(text):,} characters)"
    )
    raise InvalidIdError(
        f"not a paper identifier: {shown} "
        "(expected an arXiv ID, DOI, OpenAlex W-id, S2 paperId or CorpusId:N)"
    )


_SHOWN = 200  # of a refused ID: a 100,000-character one is not echoed whole


_ATTEMPTS = (
    (Scheme.ARXIV, normalize_arxiv),
    (Scheme.DOI, normalize_doi),
    (Scheme.OPENALEX, normalize_openalex),
    (Scheme.S2, normalize_s2),
    (Scheme.CORPUS_ID, normalize_corpus_id),
)
