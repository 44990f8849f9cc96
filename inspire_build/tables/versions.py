"""A split's versions: ``split_versions``, ``instances``, ``qrels``, ``version_grades``,
``version_findings`` and the latest-version views. A version, once written, never changes
under its ID."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from inspire_build import warehouse
from inspire_build.models import Instance, SplitVersion
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import model_rows

JSON_COLUMNS = ("prompt_hashes", "models", "counts", "reviews")  # of split_versions


def insert(con: duckdb.DuckDBPyConnection, version: SplitVersion) -> None:
    """Write a version's ``split_versions`` row (its notes are never stored)."""
    warehouse.upsert(con, "split_versions", [model_rows.row(version)], ["version_id"])


def write_instances(con: duckdb.DuckDBPyConnection, instances: Sequence[Instance]) -> None:
    warehouse.upsert(con, "instances", model_rows.rows(instances), ["version_id", "instance_id"])


def split_version(con: duckdb.DuckDBPyConnection, version: str) -> SplitVersion | None:
    """A version as it is stored (None: no such version)."""
    found = warehouse.dicts(con, "SELECT * FROM split_versions WHERE version_id = ?", [version])
    read = model_rows.read(SplitVersion, found, JSON_COLUMNS)
    return read[0] if read else None


def instances(con: duckdb.DuckDBPyConnection, version: str) -> list[Instance]:
    """Every instance of a version, by instance ID."""
    found = warehouse.dicts(
        con, "SELECT * FROM instances WHERE version_id = ? ORDER BY instance_id", [version]
    )
    return model_rows.read(Instance, found)


def briefs(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[str, str, str]]:
    """Each instance of a version, by instance ID: its ID, target and brief."""
    rows = con.execute(
        "SELECT instance_id, target_id, brief FROM instances WHERE version_id = ? "
        "ORDER BY instance_id",
        [version],
    ).fetchall()
    return [(str(i), str(t), str(b)) for i, t, b in rows]


def instance(
    con: duckdb.DuckDBPyConnection, version: str, instance_id: str
) -> tuple[Any, ...] | None:
    """One instance of a version: its target, brief and published cutoff (None: no such one)."""
    return con.execute(
        "SELECT target_id, brief, cutoff_date FROM instances WHERE version_id = ? "
        "AND instance_id = ?",
        [version, instance_id],
    ).fetchone()


def models(con: duckdb.DuckDBPyConnection, version: str) -> str | None:
    """The LLM a version was built with, as ``split_versions.models`` records it (JSON)."""
    row = con.execute("SELECT models FROM split_versions WHERE version_id = ?", [version])
    found = row.fetchone()
    return str(found[0]) if found and found[0] is not None else None


def header(con: duckdb.DuckDBPyConnection, version: str) -> dict[str, Any] | None:
    """A version's ID, split, label, config hash and code version (None: no such version)."""
    return warehouse.first_dict(
        con,
        "SELECT version_id, split, label, config_hash, code_version FROM split_versions "
        "WHERE version_id = ?",
        [version],
    )


def graded_with_text(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[Any, ...]]:
    """Each qrel of a version with its antecedent's title and abstract (the corpus's, else the
    warehouse's papers'): instance ID, paper ID, tier, title, abstract."""
    return con.execute(
        "SELECT q.instance_id, q.paper_id, q.tier, coalesce(c.title, p.title), "
        "coalesce(c.abstract, p.abstract) FROM qrels q "
        "LEFT JOIN corpus c ON c.paper_id = q.paper_id "
        "LEFT JOIN papers p ON p.paper_id = q.paper_id "
        "WHERE q.version_id = ? ORDER BY q.instance_id, q.paper_id",
        [version],
    ).fetchall()


def cutoffs(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[Any, ...]]:
    """Each instance of a version, by ID: instance ID, brief, published cutoff, target and the
    target's first public date."""
    return con.execute(
        "SELECT i.instance_id, i.brief, i.cutoff_date, i.target_id, p.first_public_date "
        "FROM instances i LEFT JOIN papers p ON p.paper_id = i.target_id "
        "WHERE i.version_id = ? ORDER BY i.instance_id",
        [version],
    ).fetchall()


def jitter_days(con: duckdb.DuckDBPyConnection, version: str) -> int | None:
    """The cutoff jitter a version was built with (None: older than the setting)."""
    row = con.execute(
        "SELECT cutoff_jitter_days FROM split_versions WHERE version_id = ?", [version]
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def tasks(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[Any, ...]]:
    """Each instance of a version, by ID: instance ID, brief, published cutoff, target."""
    return con.execute(
        "SELECT instance_id, brief, cutoff_date, target_id FROM instances WHERE version_id = ? "
        "ORDER BY instance_id",
        [version],
    ).fetchall()


def written(con: duckdb.DuckDBPyConnection, version: str) -> tuple[Any, ...] | None:
    """An existing version's first-written time, label and counts (None: not written)."""
    return con.execute(
        "SELECT created_at, label, counts FROM split_versions WHERE version_id = ?", [version]
    ).fetchone()


def qrels(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[str, str, int]]:
    """A version's graded antecedents: instance ID, paper ID, tier."""
    rows = con.execute(
        "SELECT instance_id, paper_id, tier FROM qrels WHERE version_id = ?", [version]
    ).fetchall()
    return [(str(i), str(p), int(t)) for i, p, t in rows]


def latest(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """split -> the version written last, for every split that has one."""
    rows = con.execute("SELECT split, version_id FROM latest_split_versions").fetchall()
    return {str(split): str(version) for split, version in rows}


def known(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every version ID, newest first."""
    rows = con.execute("SELECT version_id FROM split_versions ORDER BY created_at DESC, version_id")
    return [str(v) for (v,) in rows.fetchall()]


# --- the export's files and the dataset card ----------------------------------------------------


def public_instances(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[Any, ...]]:
    """What the public side shows of each instance, by ID: instance ID, brief, cutoff."""
    return con.execute(
        "SELECT instance_id, brief, cutoff_date FROM instances WHERE version_id = ? "
        "ORDER BY instance_id",
        [version],
    ).fetchall()


def write_public_parquet(con: duckdb.DuckDBPyConnection, version: str, path: Path) -> None:
    warehouse.copy_to_parquet(
        con,
        "SELECT instance_id, brief, cutoff_date AS cutoff FROM instances "
        "WHERE version_id = ? ORDER BY instance_id",
        [version],
        path,
    )


def sorted_qrels(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[Any, ...]]:
    """A version's qrels by instance and paper: instance ID, paper ID, tier."""
    return con.execute(
        "SELECT instance_id, paper_id, tier FROM qrels WHERE version_id = ? "
        "ORDER BY instance_id, paper_id",
        [version],
    ).fetchall()


def write_private_parquets(
    con: duckdb.DuckDBPyConnection, version: str, antecedents: Path, targets: Path
) -> None:
    """The evaluator's antecedents (tier, role, rationale) and targets, as Parquet."""
    warehouse.copy_to_parquet(
        con,
        "SELECT q.instance_id, q.paper_id, q.tier, q.role, g.rationale FROM qrels q "
        "JOIN instances i USING (version_id, instance_id) "
        "LEFT JOIN grades g ON g.target_id = i.target_id AND g.paper_id = q.paper_id "
        "WHERE q.version_id = ? ORDER BY 1, 2",
        [version],
        antecedents,
    )
    warehouse.copy_to_parquet(
        con,
        # the title and date the target's own lineage resolved: its ``papers`` row is rewritten
        # by any later chunk that cites it, from that chunk's records
        "SELECT i.instance_id, i.target_id, coalesce(t.title, p.title) AS title, i.cutoff_date, "
        "coalesce(t.first_public_date, p.first_public_date) AS first_public_date "
        "FROM instances i JOIN split_versions v USING (version_id) "
        "LEFT JOIN targets t ON t.split = v.split AND t.paper_id = i.target_id "
        "LEFT JOIN papers p ON p.paper_id = i.target_id "
        "WHERE i.version_id = ? ORDER BY 1",
        [version],
        targets,
    )


def target_spellings(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[Any, ...]]:
    """Each target of a version: its ID, title, and every ID value and ``scheme:value``."""
    return con.execute(
        "SELECT i.target_id, any_value(p.title), "
        "list(x.value) || list(x.scheme || ':' || x.value) FROM instances i "
        "LEFT JOIN papers p ON p.paper_id = i.target_id "
        "LEFT JOIN paper_ids x ON x.paper_id = i.target_id "
        "WHERE i.version_id = ? GROUP BY i.target_id",
        [version],
    ).fetchall()


def antecedent_spellings(con: duckdb.DuckDBPyConnection, version: str) -> list[str]:
    """Every graded antecedent of a version: its ID, and every ID value and ``scheme:value``
    the crosswalk and the search corpus know it by."""
    rows = con.execute(
        "WITH gold AS (SELECT DISTINCT paper_id FROM qrels WHERE version_id = ? AND tier > 0), "
        "known AS (SELECT paper_id, scheme, value FROM paper_ids UNION "
        "SELECT paper_id, scheme, value FROM corpus_ids) "
        "SELECT paper_id FROM gold UNION "
        "SELECT k.value FROM known k JOIN gold USING (paper_id) UNION "
        "SELECT k.scheme || ':' || k.value FROM known k JOIN gold USING (paper_id)",
        [version],
    ).fetchall()
    return sorted(str(value) for (value,) in rows if value)


def t3_titles(con: duckdb.DuckDBPyConnection, version: str) -> list[str | None]:
    """The titles of a version's T3 antecedents."""
    rows = con.execute(
        "SELECT p.title FROM qrels q JOIN papers p USING (paper_id) "
        "WHERE q.version_id = ? AND q.tier = 3",
        [version],
    ).fetchall()
    return [title for (title,) in rows]


@dataclasses.dataclass(frozen=True)
class CardFigures:
    """What the dataset card counts of a version (the paper's Table 5 and the funnel)."""

    per_target: list[int]  # antecedents per instance
    tiers: Counter[int]
    briefs: list[str]  # the instances' brief texts
    searched: int  # instances whose brief the search identity check judged
    years: tuple[Any, Any]  # first and last year of the targets' first public dates
    funnel: dict[str, int]  # target status -> targets of the split
    config_hash: str
    code_version: str
    models: str  # JSON


def card_figures(con: duckdb.DuckDBPyConnection, split: str, version: str) -> CardFigures:
    per_target = [
        int(n)
        for (n,) in con.execute(
            "SELECT n_antecedents FROM instances WHERE version_id = ?", [version]
        ).fetchall()
    ]
    tiers = con.execute(
        "SELECT tier, count(*) FROM qrels WHERE version_id = ? GROUP BY 1", [version]
    ).fetchall()
    briefs = con.execute(
        "SELECT brief FROM instances WHERE version_id = ? ORDER BY instance_id", [version]
    ).fetchall()
    searched = con.execute(  # the version's own copy: the briefs' rows may be replaced since
        "SELECT count(DISTINCT instance_id) FROM version_findings "
        "WHERE version_id = ? AND \"check\" = 'search'",
        [version],
    ).fetchone()
    years = con.execute(
        "SELECT min(year(t.first_public_date)), max(year(t.first_public_date)) FROM instances i "
        "JOIN targets t ON t.paper_id = i.target_id AND t.split = ? WHERE i.version_id = ?",
        [split, version],
    ).fetchone() or (None, None)
    row = con.execute(
        "SELECT config_hash, code_version, models FROM split_versions WHERE version_id = ?",
        [version],
    ).fetchone() or ("", "", "{}")
    return CardFigures(
        per_target,
        Counter({int(t): int(n) for t, n in tiers}),
        [str(b) for (b,) in briefs],
        int(searched[0]) if searched else 0,
        (years[0], years[1]),
        lineage_table.target_statuses(con, split),
        str(row[0]),
        str(row[1]),
        str(row[2] or "{}"),
    )


def months(con: duckdb.DuckDBPyConnection, split: str, version: str) -> tuple[list[Any], list[Any]]:
    """The first public dates of the split's selected targets (all but those over its limit),
    and the published cutoffs of this version's instances."""
    selected = con.execute(
        "SELECT first_public_date FROM targets WHERE split = ? "
        "AND coalesce(outcome, '') <> 'over_limit'",
        [split],
    ).fetchall()
    made = con.execute(
        "SELECT cutoff_date FROM instances WHERE version_id = ?", [version]
    ).fetchall()
    return [day for (day,) in selected], [day for (day,) in made]


def served(con: duckdb.DuckDBPyConnection, version: str) -> list[tuple[str, str, int, int]]:
    """Per pair of sides that served an instance's target (its OpenAlex record, its S2 list:
    ``api`` or ``bulk <release>``): the instances, and the S2 citations left unidentified."""
    rows = con.execute(
        "SELECT coalesce(g.served_by->>'openalex', 'api'), "
        "coalesce(g.served_by->>'s2 references', 'none'), count(*), "
        "coalesce(sum(g.unidentified), 0) FROM instances i "
        "JOIN gold_completeness g ON g.target_id = i.target_id WHERE i.version_id = ? "
        "GROUP BY ALL ORDER BY 1, 2",
        [version],
    ).fetchall()
    return [(str(a), str(b), int(n), int(u)) for a, b, n, u in rows]
