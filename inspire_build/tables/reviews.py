"""Curator review: ``reviews`` (one row per decision, never rewritten), and what the review pages
read of a split version: its instances, qrels, own grades and findings, its targets' texts,
references and gold completeness, and its boundary figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb

from inspire_build import warehouse


def add(con: duckdb.DuckDBPyConnection, row: Mapping[str, object]) -> int:
    """Append one review (every column but ``review_id``); returns its ID, one above the last."""
    with warehouse.transaction(con):
        last = con.execute("SELECT coalesce(max(review_id), 0) FROM reviews").fetchone()
        review_id = int(last[0] if last else 0) + 1
        warehouse.upsert(con, "reviews", [{"review_id": review_id, **row}], ["review_id"])
    return review_id


def of_split(
    con: duckdb.DuckDBPyConnection, split: str, target_id: str | None = None
) -> list[dict[str, Any]]:
    """Every review made on a version of ``split`` (only of ``target_id``, when given), by ID
    (``before``/``after`` as JSON text; ``based_on`` and ``draft`` from migration 0024)."""
    return warehouse.dicts(
        con,
        "SELECT review_id, version_id, instance_id, target_id, paper_id, action, curator, "
        'created_at, "before", "after", based_on, draft FROM reviews WHERE split = ? '
        "AND (?::VARCHAR IS NULL OR target_id = ?) ORDER BY review_id",
        [split, target_id, target_id],
    )


def version(con: duckdb.DuckDBPyConnection, version_id: str) -> dict[str, Any] | None:
    """A version's row (None: no such version); ``reviews`` is null unless it was made by
    ``--apply-reviews``."""
    return warehouse.first_dict(
        con,
        "SELECT version_id, split, label, config_hash, code_version, prompt_hashes, models, "
        "counts, cutoff_jitter_days, reviews, created_at FROM split_versions WHERE version_id = ?",
        [version_id],
    )


def instances(
    con: duckdb.DuckDBPyConnection, version_id: str, instance_id: str | None = None
) -> list[dict[str, Any]]:
    """A version's instances (only ``instance_id``, when given), by ID, with their target's
    outcome in the split."""
    return warehouse.dicts(
        con,
        "SELECT i.instance_id, i.target_id, i.brief_id, i.brief, i.cutoff_date, i.n_antecedents, "
        "t.outcome FROM instances i JOIN split_versions v USING (version_id) "
        "LEFT JOIN targets t ON t.split = v.split AND t.paper_id = i.target_id "
        "WHERE i.version_id = ? AND (?::VARCHAR IS NULL OR i.instance_id = ?) "
        "ORDER BY i.instance_id",
        [version_id, instance_id, instance_id],
    )


def qrels(con: duckdb.DuckDBPyConnection, version_id: str) -> list[dict[str, Any]]:
    """A version's qrels: instance ID, paper ID, tier, role."""
    return warehouse.dicts(
        con,
        'SELECT instance_id, paper_id, tier, "role" FROM qrels WHERE version_id = ? '
        "ORDER BY instance_id, paper_id",
        [version_id],
    )


def grades(
    con: duckdb.DuckDBPyConnection, version_id: str, target_id: str | None = None
) -> list[dict[str, Any]]:
    """A version's own copy of its targets' grades (only ``target_id``'s, when given), tier 0
    included."""
    return warehouse.dicts(
        con,
        'SELECT target_id, paper_id, tier, "role", rationale FROM version_grades '
        "WHERE version_id = ? AND (?::VARCHAR IS NULL OR target_id = ?) "
        "ORDER BY target_id, paper_id",
        [version_id, target_id, target_id],
    )


def findings(
    con: duckdb.DuckDBPyConnection, version_id: str, instance_id: str | None = None
) -> list[dict[str, Any]]:
    """A version's own copy of its briefs' audit findings (only ``instance_id``'s, when given),
    per instance."""
    return warehouse.dicts(
        con,
        'SELECT instance_id, "check", passed, "level", detail FROM version_findings '
        "WHERE version_id = ? AND (?::VARCHAR IS NULL OR instance_id = ?) "
        'ORDER BY instance_id, "check"',
        [version_id, instance_id, instance_id],
    )


def target(con: duckdb.DuckDBPyConnection, split: str, target_id: str) -> dict[str, Any]:
    """A target's title, abstract, first public date, exact cutoff, status and reason (its own
    lineage's texts; empty when the split has no such target)."""
    return (
        warehouse.first_dict(
            con,
            "SELECT title, abstract, first_public_date, cutoff_date, status, outcome, reason "
            "FROM targets WHERE split = ? AND paper_id = ?",
            [split, target_id],
        )
        or {}
    )


def references(con: duckdb.DuckDBPyConnection, target_id: str) -> list[dict[str, Any]]:
    """A target's merged references: paper ID, title, year, status, reason, citation contexts,
    intents and influence; eligible ones first, then by title."""
    return warehouse.dicts(
        con,
        "SELECT paper_id, coalesce(work_title, title) AS title, year, status, reason, contexts, "
        'intents, is_influential FROM "references" WHERE target_id = ? '
        "ORDER BY status <> 'eligible', status, title NULLS LAST, ref_key",
        [target_id],
    )


def completeness(con: duckdb.DuckDBPyConnection, target_id: str) -> dict[str, Any]:
    """A target's gold-completeness counts (empty when it has none)."""
    return (
        warehouse.first_dict(
            con,
            "SELECT references_seen, resolved, dated, eligible, after_cutoff, dated_after_target, "
            "no_date, unresolved, self, not_antecedents, unidentified FROM gold_completeness "
            "WHERE target_id = ?",
            [target_id],
        )
        or {}
    )


def boundary(con: duckdb.DuckDBPyConnection, version_id: str) -> dict[str, Any]:
    """The attacks played on a version's public side (empty: not audited yet)."""
    return (
        warehouse.first_dict(
            con,
            "SELECT jitter_days, instances, exact_cutoffs, hash_tried, hash_recovered, "
            "window_median, window_p10, window_top1, window_top10, audited_at FROM boundary_audits "
            "WHERE version_id = ?",
            [version_id],
        )
        or {}
    )
