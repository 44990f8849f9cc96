"""The warehouse side of the information boundary: the instance key, and the attacks the audit
plays against a split version's public side, recorded in ``boundary_audits``.

- The key is generated once per warehouse and kept in ``instance_key`` (private). Set
  ``INSPIRE_INSTANCE_KEY`` (from ``inspire key export``) before a warehouse's first build to
  rebuild byte-identical exports elsewhere; a key that differs from the one a warehouse already
  holds is refused, since the versions written under the old key would change under their IDs.
- The hash attack hashes every candidate and target ID the warehouse knows, under every public
  string of the version, in every format of ``boundary.HASH_FORMATS``. It must recover nothing.
- The attackers play a competitor holding the public export, each beside a blind guess over
  the same windows (the dates each published cutoff allows, within the split's): bm25 of the
  brief over the window's anonymity set (the split's candidates there: the papers the card's
  public criteria would select); a uniform guess over that set; and
  the build's search identity check, where it ran. The warehouse knows the window's candidates
  and what the targets cite, not all that went public, so the windows are a lower bound on a
  real competitor's and the shares an upper bound.
- The verdict (``boundary.judge``) gates on the strongest attacker's top-1 share and on the
  smallest anonymity set; a version too small to show a share under the limit is "too sparse to
  judge", neither a pass nor a failure.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import duckdb

from inspire_build import audit, boundary, warehouse
from inspire_build.config import Settings
from inspire_build.cutoff import cutoff_date, kept_offsets
from inspire_build.errors import InputError
from inspire_build.tables import cutoffs as cutoffs_table
from inspire_build.tables import keys, versions
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import windows as windows_table
from inspire_build.text import content_words

KEY_ID = "default"
WINDOW_TOP = 10


def instance_key(con: duckdb.DuckDBPyConnection, settings: Settings) -> bytes:
    """This warehouse's instance key: the stored one, else the given one, else a new one."""
    found = keys.secret_hex(con, KEY_ID)
    given = settings.instance_key
    chosen = boundary.parse_key(given.get_secret_value()) if given is not None else None
    if found is not None:
        stored = bytes.fromhex(found)
        if chosen is not None and chosen != stored:
            raise InputError(
                "INSPIRE_INSTANCE_KEY differs from this warehouse's instance key; the versions "
                "it holds would change under their IDs. Build into a fresh warehouse, or unset "
                "INSPIRE_INSTANCE_KEY (`inspire key export` prints this warehouse's key)"
            )
        return stored
    key = chosen if chosen is not None else boundary.new_key()
    origin = "environment" if chosen is not None else "generated"
    row_: dict[str, object] = {"key_id": KEY_ID, "secret_hex": key.hex(), "origin": origin}
    row_["created_at"] = dt.datetime.now(dt.UTC)
    warehouse.upsert(con, "instance_key", [row_], ["key_id"])
    return key


def stored_key(con: duckdb.DuckDBPyConnection) -> str:
    """The key as 64 hex digits, for ``inspire key export``; an error if none was made yet."""
    found = keys.secret_hex(con, KEY_ID)
    if found is None:
        raise InputError("this warehouse has no instance key yet: its first build makes one")
    return found


def cutoff_offsets(con: duckdb.DuckDBPyConnection, settings: Settings) -> Callable[[str], int]:
    """target paper_id -> the days its published cutoff lies before the exact one: the offset
    a version published for it, whatever the jitter setting (SPEC §9), else the key's draw."""
    key, days = instance_key(con, settings), settings.cutoff_jitter_days
    published = cutoffs_table.published(con)
    return kept_offsets(published, lambda target_id: boundary.cutoff_offset(key, target_id, days))


# --- the attacks --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BoundaryReport:
    version: str
    jitter_days: int
    instances: int
    exact_cutoffs: int
    hash: boundary.HashAttack
    window_sizes: list[int]  # papers the warehouse knows that each public cutoff allows
    anonymity: list[int]  # ... of those, the ones the card's selection criteria would select
    attackers: list[boundary.Attacker]
    judgement: boundary.Judgement

    @property
    def ok(self) -> bool:
        return self.judgement.verdict is boundary.Verdict.PASSED

    @property
    def bm25(self) -> boundary.Attacker:
        return self.attackers[0]

    def lines(self) -> list[str]:
        shown = [
            self.judgement.line(f"boundary of {self.version}"),
            f"  {self.instances} instance(s), cutoff jitter {self.jitter_days} day(s); exact "
            f"cutoffs (first public - 3 months): {self.exact_cutoffs}",
            f"  hash attack: {len(self.hash.recovered)} instance ID(s) recovered from "
            f"{self.hash.tried:,} hashes of candidate IDs under public strings",
            "  attacker (top-1, top-10; a blind guess over the window: top-1, top-10; n):",
            *(f"    {_attacker_line(a)}" for a in self.attackers),
            f"  windows (papers a public cutoff allows): {_spread(self.window_sizes)}",
            f"  anonymity sets (of those, selectable by the card's criteria): "
            f"{_spread(self.anonymity)}",
        ]
        shown += [f"  RECOVERED {iid}: {how}" for iid, how in sorted(self.hash.recovered.items())]
        return shown

    def row(self) -> dict[str, object]:
        sizes, anonymity = _quantiles(self.window_sizes), _quantiles(self.anonymity)
        return {
            "version_id": self.version,
            "jitter_days": self.jitter_days,
            "instances": self.instances,
            "exact_cutoffs": self.exact_cutoffs,
            "hash_tried": self.hash.tried,
            "hash_recovered": len(self.hash.recovered),
            "window_median": sizes[1],
            "window_p10": sizes[0],
            "window_top1": self.bm25.top1,
            "window_top10": self.bm25.top10,
            "verdict": self.judgement.verdict.value,
            "reasons": "; ".join(self.judgement.reasons) or None,
            "anonymity_min": min(self.anonymity) if self.anonymity else None,
            "anonymity_p10": anonymity[0],
            "anonymity_median": anonymity[1],
            "attackers": json.dumps([dataclasses.asdict(a) for a in self.attackers]),
            "audited_at": dt.datetime.now(dt.UTC),
        }


def _attacker_line(a: boundary.Attacker) -> str:
    if not a.n:
        return f"{a.name}: not run"
    return (
        f"{a.name}: {a.top1:.1%}, {a.top10:.1%}; chance {a.chance1:.1%}, {a.chance10:.1%}; n {a.n}"
    )


def _quantiles(values: Sequence[int]) -> tuple[float | None, float | None]:
    """(10th percentile, median), None for no values."""
    if not values:
        return None, None
    if len(values) < 2:
        return float(values[0]), float(values[0])
    p10 = statistics.quantiles(values, n=10, method="inclusive")[0]
    return p10, float(statistics.median(values))


def _spread(values: Sequence[int]) -> str:
    if not values:
        return "none"
    p10, median = _quantiles(values)
    return f"min {min(values)}, 10th percentile {figure(p10)}, median {figure(median)}"


def figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def public_strings(con: duckdb.DuckDBPyConnection, version: str) -> list[str]:
    """Every string the version's public side shows or implies about how it was made."""
    row = versions.header(con, version)
    if row is None:
        raise InputError(f"no split version {version!r}")
    keys = ("split", "label", "config_hash", "code_version")
    split, label, config, code = (str(row[k]) if row[k] is not None else "" for k in keys)
    found = {version, split, label, config, config[:12], config[:16], code, "inspire", ""}
    return sorted(found)


def candidate_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every paper and target ID the warehouse knows, in each spelling an attacker would try."""
    paper_ids, crosswalk = lineage_table.known_ids(con)
    found = set(paper_ids)
    for scheme, value, paper_id in crosswalk:
        found.update({value, f"{scheme}:{value}", paper_id})
    return sorted(found)


def attack_version(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    version: str,
    extra_publics: Iterable[str] = (),
) -> BoundaryReport:
    """Play every attacker against ``version``, judge, record the figures, return the report."""
    rows = versions.cutoffs(con, version)
    jitter = _jitter_of(con, version, settings)
    publics = [*public_strings(con, version), *extra_publics]
    hashed = boundary.hash_attack([str(r[0]) for r in rows], candidate_ids(con), publics, version)
    exact = sum(1 for r in rows if r[4] is not None and r[2] == cutoff_date(r[4]))
    split = str(versions.header(con, version)["split"])  # type: ignore[index]
    instances = [(str(b), c, str(t)) for _, b, c, t, _ in rows]
    windows = _windows(con, settings, split, instances, jitter)
    attackers = [
        boundary.ranked_attacker("bm25 of the brief over the window", windows.ranks, windows.sizes),
        boundary.uniform_attacker(
            "uniform guess over the anonymity set", windows.anonymity, windows.sizes
        ),
        _search_attacker(con, version),
    ]
    judgement = boundary.judge(
        attackers,
        windows.anonymity,
        len(hashed.recovered),
        settings.window_attack_max_top1,
        settings.min_anonymity,
    )
    report = BoundaryReport(
        version,
        jitter,
        len(rows),
        exact,
        hashed,
        windows.sizes,
        windows.anonymity,
        attackers,
        judgement,
    )
    windows_table.record_attacks(con, report.row())
    return report


def _search_attacker(con: duckdb.DuckDBPyConnection, version: str) -> boundary.Attacker:
    """The build's search identity check, where it ran: the target's rank among the works the
    source ranked from the window's first day on."""
    found = [audit.search_rank_of(d) for d in windows_table.search_details(con, version)]
    ran = [f for f in found if f is not None]
    return boundary.ranked_attacker(
        "search identity check", [rank for rank, _ in ran], [n or 1 for _, n in ran]
    )


def _jitter_of(con: duckdb.DuckDBPyConnection, version: str, settings: Settings) -> int:
    """The jitter a version was built with, else (a version older than the setting) today's."""
    days = versions.jitter_days(con, version)
    return days if days is not None else settings.cutoff_jitter_days


@dataclasses.dataclass(frozen=True)
class Windows:
    sizes: list[int]
    anonymity: list[int]
    ranks: list[int | None]  # the target's rank by bm25 of the brief among its window's papers


def window_of(
    settings: Settings, split: str, public_cutoff: dt.date, jitter_days: int
) -> tuple[dt.date, dt.date]:
    """The first public days a competitor holding the card allows a target: those its published
    cutoff allows (``boundary.consistent_dates``), within its split's window."""
    first, last = boundary.consistent_dates(public_cutoff, jitter_days)
    config = settings.split(split)
    return max(first, config.start), min(last, config.end)


def target_window(
    con: duckdb.DuckDBPyConnection, settings: Settings, target_id: str
) -> tuple[str, dt.date, dt.date] | None:
    """(split, first, last): the window of the cutoff the target's lineage set, within the
    jitter it lies in (a kept cutoff's, when wider); None before lineage set one."""
    found = windows_table.target_cutoff(con, target_id)
    if found is None:
        return None
    split, cutoff = found
    jitter = max(settings.cutoff_jitter_days, cutoffs_table.jitter_days(con, target_id) or 0)
    return split, *window_of(settings, split, cutoff, jitter)


def window_rank(
    con: duckdb.DuckDBPyConnection, settings: Settings, target_id: str, brief: str
) -> tuple[int | None, int]:
    """(the target's rank by bm25 of ``brief`` among its window's candidates, their number):
    the audit's bm25 attacker on one brief."""
    window = target_window(con, settings, target_id)
    if window is None:
        return None, 0
    return _rank_among(windows_table.pool(con, *window), brief, target_id, {})


def window_counts(
    con: duckdb.DuckDBPyConnection, settings: Settings, target_id: str, words: Sequence[str]
) -> dict[str, int] | None:
    """Word -> how many of the candidates in the target's window hold it (None: no window yet):
    how rare a word is among the papers the window-scoped attacker ranks. Unlike the whole
    warehouse's counts, these do not move when another build adds papers."""
    window = target_window(con, settings, target_id)
    if window is None:
        return None
    held = [set(content_words(text)) for text, chosen in windows_table.pool(con, *window).values()
            if chosen]  # fmt: skip
    return {word: sum(1 for bag in held if word in bag) for word in words}


def _rank_among(
    pool: dict[str, tuple[str, bool]], brief: str, target_id: str, tokens: dict[str, Counter[str]]
) -> tuple[int | None, int]:
    """(the target's rank by bm25 of ``brief`` among the pool's candidates, with their
    statistics alone; how many they are). ``tokens`` caches each paper's words across windows."""
    chosen = [p for p, (_, selectable) in pool.items() if selectable]
    for paper_id in chosen:
        if paper_id not in tokens:
            tokens[paper_id] = Counter(content_words(pool[paper_id][0]))
    scores = boundary.bm25_scores(content_words(brief), {p: tokens[p] for p in chosen})
    return boundary.rank_of(target_id, scores), len(chosen)


def thin_window(con: duckdb.DuckDBPyConnection, settings: Settings, target_id: str) -> str | None:
    """Why the target's window is too thin to publish (its anonymity set holds fewer than
    ``min_anonymity`` candidates: the audit would fail it), or None."""
    window = target_window(con, settings, target_id)
    if window is None:
        return None
    held = windows_table.selectable(con, *window)
    if held >= settings.min_anonymity:
        return None
    return (
        f"its published cutoff's window holds {held} selectable paper(s), fewer than "
        f"{settings.min_anonymity}: too few to hide it among"
    )


def _windows(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    split: str,
    instances: Sequence[tuple[str, dt.date, str]],
    jitter_days: int,
) -> Windows:
    """Per instance (brief, public cutoff, target): its window's papers (:func:`window_of`),
    those selectable (its candidates), and the target's rank among these by bm25 of the brief
    with their statistics alone. A competitor keeps only what the card's criteria select; the
    other papers the warehouse holds there are what lineage happened to fetch, each under the
    title variant its source served first."""
    tokens: dict[str, Counter[str]] = {}
    sizes, anonymity, ranks = [], [], []
    for brief, public_cutoff, target_id in instances:
        first, last = window_of(settings, split, public_cutoff, jitter_days)
        pool = windows_table.pool(con, split, first, last)
        rank, held = _rank_among(pool, brief, target_id, tokens)
        sizes.append(len(pool))
        anonymity.append(held)
        ranks.append(rank)
    return Windows(sizes, anonymity, ranks)
