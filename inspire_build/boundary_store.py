"""The warehouse side of the information boundary: the instance key, and the attacks the audit
plays against a split version's public side, recorded in ``boundary_audits``.

- The key is generated once per warehouse and kept in ``instance_key`` (private). Set
  ``INSPIRE_INSTANCE_KEY`` (from ``inspire key export``) before a warehouse's first build to
  rebuild byte-identical exports elsewhere; a key that differs from the one a warehouse already
  holds is refused, since the versions written under the old key would change under their IDs.
- The hash attack hashes every candidate and target ID the warehouse knows, under every public
  string of the version, in every format of ``boundary.HASH_FORMATS``. It must recover nothing.
- The window attack plays a competitor holding the public export: for each instance, the
  warehouse papers whose first public date the published cutoff allows, ranked by bm25 of the
  brief. The warehouse holds only targets and what they cite, far fewer papers than were public
  on those days, so its shares are an upper bound on what the same attack achieves on arXiv.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import statistics
from collections.abc import Callable, Iterable, Sequence

import duckdb

from inspire_build import boundary, warehouse
from inspire_build.config import Settings
from inspire_build.cutoff import cutoff_date, kept_offsets
from inspire_build.errors import InputError
from inspire_build.tables import cutoffs as cutoffs_table
from inspire_build.tables import keys, versions
from inspire_build.tables import lineage as lineage_table

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
    window_sizes: list[int]
    window_ranks: list[int | None]  # the target's rank among its window's papers
    max_top1: float

    def share(self, top: int) -> float:
        hits = sum(1 for r in self.window_ranks if r is not None and r <= top)
        return hits / len(self.window_ranks) if self.window_ranks else 0.0

    @property
    def window_median(self) -> float | None:
        return statistics.median(self.window_sizes) if self.window_sizes else None

    @property
    def window_p10(self) -> float | None:
        if len(self.window_sizes) < 2:
            return float(self.window_sizes[0]) if self.window_sizes else None
        return statistics.quantiles(self.window_sizes, n=10, method="inclusive")[0]

    @property
    def ok(self) -> bool:
        return not self.hash.recovered and self.share(1) <= self.max_top1

    def lines(self) -> list[str]:
        top1, top10 = self.share(1), self.share(WINDOW_TOP)
        shown = [
            f"information boundary of {self.version}: {self.instances} instance(s), cutoff "
            f"jitter {self.jitter_days} day(s)",
            f"  exact cutoffs (first public - 3 months): {self.exact_cutoffs} of {self.instances}",
            f"  hash attack: {len(self.hash.recovered)} instance ID(s) recovered from "
            f"{self.hash.tried:,} hashes of candidate IDs under public strings",
            f"  window attack: papers consistent with a public cutoff: median "
            f"{figure(self.window_median)}, 10th percentile {figure(self.window_p10)}; "
            f"target ranked first {top1:.1%} (limit {self.max_top1:.0%}), in the top "
            f"{WINDOW_TOP} {top10:.1%}",
        ]
        shown += [f"  RECOVERED {iid}: {how}" for iid, how in sorted(self.hash.recovered.items())]
        if self.ok:
            shown.append("boundary held")
        else:
            shown.append("boundary FAILED: " + "; ".join(self._why()))
        return shown

    def _why(self) -> list[str]:
        why = []
        if self.hash.recovered:
            why.append(f"the hash attack recovered {len(self.hash.recovered)} instance ID(s)")
        if self.share(1) > self.max_top1:
            why.append(
                f"the window attack ranks {self.share(1):.1%} of targets first "
                f"(over {self.max_top1:.0%})"
            )
        return why

    def row(self) -> dict[str, object]:
        return {
            "version_id": self.version,
            "jitter_days": self.jitter_days,
            "instances": self.instances,
            "exact_cutoffs": self.exact_cutoffs,
            "hash_tried": self.hash.tried,
            "hash_recovered": len(self.hash.recovered),
            "window_median": self.window_median,
            "window_p10": self.window_p10,
            "window_top1": self.share(1),
            "window_top10": self.share(WINDOW_TOP),
            "audited_at": dt.datetime.now(dt.UTC),
        }


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
    """Play both attacks against ``version``, record the figures, and return the report."""
    rows = versions.cutoffs(con, version)
    jitter = _jitter_of(con, version, settings)
    publics = [*public_strings(con, version), *extra_publics]
    hashed = boundary.hash_attack([str(r[0]) for r in rows], candidate_ids(con), publics, version)
    exact = sum(1 for r in rows if r[4] is not None and r[2] == cutoff_date(r[4]))
    sizes, ranks = _window_attack(con, [(str(b), c, str(t)) for _, b, c, t, _ in rows], jitter)
    report = BoundaryReport(
        version, jitter, len(rows), exact, hashed, sizes, ranks, settings.window_attack_max_top1
    )
    warehouse.upsert(con, "boundary_audits", [report.row()], ["version_id"])
    return report


def _jitter_of(con: duckdb.DuckDBPyConnection, version: str, settings: Settings) -> int:
    """The jitter a version was built with, else (a version older than the setting) today's."""
    days = versions.jitter_days(con, version)
    return days if days is not None else settings.cutoff_jitter_days


def _window_attack(
    con: duckdb.DuckDBPyConnection,
    instances: Sequence[tuple[str, dt.date, str]],
    jitter_days: int,
) -> tuple[list[int], list[int | None]]:
    """Per instance (brief, public cutoff, target): its window's size and the target's rank."""
    warehouse.build_search_index(con)
    sizes, ranks = [], []
    for brief, public_cutoff, target_id in instances:
        first, last = boundary.consistent_dates(public_cutoff, jitter_days)
        ranked, size = warehouse.search_public_between(con, brief, first, last)
        sizes.append(size)
        ranks.append(ranked.index(target_id) + 1 if target_id in ranked else None)
    return sizes, ranks
