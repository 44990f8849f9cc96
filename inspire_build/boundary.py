"""The information boundary (SPEC §9), pure: keyed instance IDs, secret cutoff offsets, the
window of first public dates a published cutoff allows, the text normal form of the leak scan,
and the hash attack the audit plays against a version's public side.

Nothing public may map back to a target. An instance ID is an HMAC-SHA256 under a secret
*instance key* (one per warehouse, private), so no hash of public strings and candidate IDs
reproduces it. A published cutoff is the paper's cutoff moved earlier by a secret offset of 0 to
``jitter_days`` days, derived from the key and the target alone: every version of every split
gives a target the same offset, so two published versions cannot be intersected to narrow it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import math
import re
import secrets
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum

from inspire_build.cutoff import cutoff_date, minus_months
from inspire_build.errors import InputError
from inspire_build.text import without_accents

KEY_BYTES = 32
_HEX_KEY = re.compile(r"[0-9a-f]{64}")


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


def parse_key(text: str) -> bytes:
    """A key as ``inspire key export`` prints it: 64 hex digits."""
    cleaned = text.strip().lower()
    if not _HEX_KEY.fullmatch(cleaned):
        raise InputError("an instance key is 64 hex digits (as `inspire key export` prints it)")
    return bytes.fromhex(cleaned)


def _mac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def instance_id(key: bytes, version: str, target_id: str) -> str:
    """The opaque ID of ``target_id``'s instance in ``version``: 16 hex digits of an HMAC."""
    return _mac(key, f"instance:{version}:{target_id}").hex()[:16]


def cutoff_offset(key: bytes, target_id: str, jitter_days: int) -> int:
    """The secret number of days (0 to ``jitter_days``) a target's cutoff is moved earlier."""
    if jitter_days <= 0:
        return 0
    draw = int.from_bytes(_mac(key, f"cutoff:{target_id}")[:8], "big")
    return draw % (jitter_days + 1)


def published_cutoff(first_public: dt.date, offset_days: int) -> dt.date:
    """The paper's cutoff (first public date minus three months), ``offset_days`` earlier."""
    return cutoff_date(first_public) - dt.timedelta(days=offset_days)


def consistent_dates(public_cutoff: dt.date, jitter_days: int) -> tuple[dt.date, dt.date]:
    """The first and last first-public day a target can have, given its published cutoff.

    Those are the days ``d`` with ``cutoff_date(d)`` in ``[public_cutoff, public_cutoff +
    jitter_days]``; ``cutoff_date`` never decreases, so they form one interval.
    """
    latest_cutoff = public_cutoff + dt.timedelta(days=jitter_days)
    first = minus_months(public_cutoff, -3) - dt.timedelta(days=4)
    while cutoff_date(first) < public_cutoff:
        first += dt.timedelta(days=1)
    last = minus_months(latest_cutoff, -3) + dt.timedelta(days=4)
    while cutoff_date(last) > latest_cutoff:
        last -= dt.timedelta(days=1)
    return first, last


# --- the leak scan's normal form ----------------------------------------------------------------


def normal_text(text: str) -> str:
    """NFKC, case-folded, accents stripped, runs of anything but letters and digits made one
    space, padded with a space at each end. Needles and public text both pass through it, so a
    needle ``n`` is found by ``f" {n} " in normal_text(text)`` whatever its spelling."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = re.findall(r"[^\W_]+", without_accents(folded))
    return " " + " ".join(words) + " "


def found_in(needles: Iterable[str], normal: str) -> list[str]:
    """The needles (each already in normal form, unpadded) that occur as whole words."""
    return sorted({n for n in needles if n and f" {n} " in normal})


# --- the hash attack ----------------------------------------------------------------------------

HashFormat = Callable[[str, str, str], str]  # (public string, version ID, candidate ID) -> hex


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _hmac_hex(key: str, message: str) -> str:
    return hmac.new(key.encode(), message.encode(), hashlib.sha256).hexdigest()


# Every format an outsider would try: the old unkeyed one, plain digests of the candidate with a
# public string, and our own keyed format with each public string standing in for the key.
HASH_FORMATS: Mapping[str, HashFormat] = {
    "sha256(inspire:{public}:{id}) (the old format)": lambda p, v, c: _sha256(f"inspire:{p}:{c}"),
    "sha256({public}:{id})": lambda p, v, c: _sha256(f"{p}:{c}"),
    "sha256({id}:{public})": lambda p, v, c: _sha256(f"{c}:{p}"),
    "sha256({public}{id})": lambda p, v, c: _sha256(p + c),
    "sha256({id})": lambda p, v, c: _sha256(c),
    "sha1(inspire:{public}:{id})": lambda p, v, c: hashlib.sha1(
        f"inspire:{p}:{c}".encode()
    ).hexdigest(),
    "md5(inspire:{public}:{id})": lambda p, v, c: hashlib.md5(
        f"inspire:{p}:{c}".encode()
    ).hexdigest(),
    "hmac-sha256(key={public}, instance:{version}:{id})": lambda p, v, c: _hmac_hex(
        p, f"instance:{v}:{c}"
    ),
    "hmac-sha256(key={public}, {id})": lambda p, v, c: _hmac_hex(p, c),
    "hmac-sha256(key={id}, {public})": lambda p, v, c: _hmac_hex(c, p),
}


@dataclasses.dataclass(frozen=True)
class HashAttack:
    tried: int  # hashes computed
    recovered: dict[str, str]  # instance ID -> "candidate ID under format with public string"


def hash_attack(
    instance_ids: Iterable[str],
    candidates: Iterable[str],
    publics: Iterable[str],
    version: str,
    formats: Mapping[str, HashFormat] = HASH_FORMATS,
) -> HashAttack:
    """Hash every candidate ID under every public string in every format; report each instance
    ID a digest (or its prefix of the ID's length) reproduces. A sound boundary recovers none."""
    wanted = {i.lower() for i in instance_ids}
    lengths = sorted({len(i) for i in wanted})
    publics, candidates = sorted(set(publics)), sorted(set(candidates))
    recovered: dict[str, str] = {}
    tried = 0
    for name, digest in formats.items():
        for public in publics:
            for candidate in candidates:
                value = digest(public, version, candidate)
                tried += 1
                for length in lengths:
                    if value[:length] in wanted:
                        how = f"{candidate} under {name} with {public!r}"
                        recovered.setdefault(value[:length], how)
    return HashAttack(tried, recovered)


# --- the attackers and the verdict --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Attacker:
    """One attacker's success against a version, beside a blind guess over the same windows.

    ``top1`` and ``top10`` are shares of the ``n`` instances it could attack whose target it
    ranks first (in the first ten); ``chance1`` and ``chance10`` are those a uniform guess over
    each instance's whole window would expect."""

    name: str
    n: int
    top1: float
    top10: float
    chance1: float
    chance10: float


def ranked_attacker(
    name: str, ranks: Sequence[int | None], pools: Sequence[int], top: int = 10
) -> Attacker:
    """An attacker that ranks each window (``pools``: its size); None: the target not ranked."""
    n = len(ranks)
    return Attacker(
        name,
        n,
        sum(1 for r in ranks if r is not None and r <= 1) / n if n else 0.0,
        sum(1 for r in ranks if r is not None and r <= top) / n if n else 0.0,
        *chance(pools, top),
    )


def chance(pools: Sequence[int], top: int = 10) -> tuple[float, float]:
    """The top-1 and top-``top`` shares a uniform guess expects over windows of these sizes."""
    if not pools:
        return 0.0, 0.0
    sizes = [max(1, p) for p in pools]
    return (
        sum(1 / p for p in sizes) / len(sizes),
        sum(min(1.0, top / p) for p in sizes) / len(sizes),
    )


def uniform_attacker(
    name: str, anonymity: Sequence[int], windows: Sequence[int], top: int = 10
) -> Attacker:
    """The guess that keeps only the window's papers the card's criteria would select (and the
    brief's field), then picks uniformly: it expects 1/|set| per instance."""
    top1, top10 = chance(anonymity, top)
    return Attacker(name, len(anonymity), top1, top10, *chance(windows, top))


class Verdict(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    TOO_SPARSE = "too sparse to judge"


@dataclasses.dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reasons: tuple[str, ...]

    def line(self, subject: str) -> str:
        said = f": {'; '.join(self.reasons)}" if self.reasons else ""
        return (
            f"{subject}: {self.verdict.value.upper() if self.reasons else self.verdict.value}{said}"
        )


def judge(
    attackers: Sequence[Attacker],
    anonymity: Sequence[int],
    recovered: int,
    max_top1: float,
    min_anonymity: int,
) -> Judgement:
    """Failed when a hash recovers an ID, the strongest attacker ranks more than ``max_top1``
    of targets first, or a window's anonymity set holds fewer than ``min_anonymity`` papers.
    Else too sparse to judge when the version has fewer instances than one hit's share could
    show under ``max_top1`` (1 / max_top1): a top-1 share of 0 of 10 proves nothing."""
    reasons = []
    if recovered:
        reasons.append(f"the hash attack recovered {recovered} instance ID(s)")
    ran = [a for a in attackers if a.n]
    strongest = max(ran, key=lambda a: a.top1, default=None)
    if strongest is not None and strongest.top1 > max_top1:
        reasons.append(
            f"{strongest.name} ranks {strongest.top1:.1%} of targets first "
            f"(limit {max_top1:.0%}, chance {strongest.chance1:.1%})"
        )
    small = sum(1 for size in anonymity if size < min_anonymity)
    if small:
        reasons.append(
            f"{small} of {len(anonymity)} window(s) hold fewer than {min_anonymity} selectable "
            f"papers (smallest {min(anonymity)})"
        )
    if reasons:
        return Judgement(Verdict.FAILED, tuple(reasons))
    needed = math.ceil(1 / max_top1) if max_top1 > 0 else 1
    if len(anonymity) < needed:
        return Judgement(
            Verdict.TOO_SPARSE,
            (f"{len(anonymity)} instance(s): a top-1 share under {max_top1:.0%} needs {needed}",),
        )
    return Judgement(Verdict.PASSED, ())


def rank_of(target: str, scores: Mapping[str, float]) -> int | None:
    """The target's place among ``scores``: one more than the papers scoring above it, so a
    tie counts for the attacker (who cannot tell tied papers apart) and IDs, which a paper's
    may change from one build to the next, decide nothing. None: it scored nothing."""
    if target not in scores:
        return None
    return 1 + sum(1 for score in scores.values() if score > scores[target])


def bm25_scores(query: Iterable[str], docs: Mapping[str, Counter[str]]) -> dict[str, float]:
    """ID -> bm25 score (k1 1.2, b 0.75, with statistics of these docs alone; rounded to 9
    places) of each doc (ID -> token counts) that shares a token with ``query``."""
    n = len(docs)
    lengths = {paper_id: sum(counts.values()) for paper_id, counts in docs.items()}
    average = (sum(lengths.values()) / n if n else 0.0) or 1.0
    wanted = set(query)
    frequency = {t: sum(1 for counts in docs.values() if t in counts) for t in wanted}
    idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items() if f}
    scores = {}
    for paper_id, counts in docs.items():
        norm = 1.2 * (0.25 + 0.75 * lengths[paper_id] / average)
        score = sum(w * counts[t] * 2.2 / (counts[t] + norm) for t, w in idf.items() if t in counts)
        if score:
            scores[paper_id] = round(score, 9)
    return scores
