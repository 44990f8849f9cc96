"""Decisions make versions: :func:`apply_reviews` writes a new split version from a version's
own records with the standing decisions applied, and :func:`with_leak_marks` makes the audit
fail each instance whose brief a curator marked leaking.

No lineage or LLM step runs: a version keeps its own copy of its instances, its targets' grades
(tier 0 included) and its briefs' findings, and that copy plus the reviews is all a reviewed
version is made of. The base is the split's latest version, or, when that one was itself made
by applying reviews, the version it was made from: every standing decision is applied to the
pipeline's own records each time, so applying twice gives the same version, and a decision
taken back (a rejection followed by an accept) brings its instance back.

A curator's brief that a version would take must keep the build's length and lexical rules:
while a draft stands on a kept instance, or a rewritten brief that breaks the rules (a row
written before drafts existed), no version is written (:func:`refused_briefs`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import duckdb

from inspire_build import boundary_store, gold, splits, warehouse
from inspire_build.config import Settings
from inspire_build.errors import InspireError
from inspire_build.models import SplitVersion, VersionStatus
from inspire_build.review import decisions
from inspire_build.review.curation import brief_rules, json_value, standing_of
from inspire_build.review.decisions import Graded, Standing, Stored
from inspire_build.tables import reviews as table
from inspire_build.tables import versions


def base_of(con: duckdb.DuckDBPyConnection, version_id: str) -> str:
    """The pipeline-built version ``version_id`` was made from (itself, if it was built)."""
    header = table.version(con, version_id) or {}
    applied = json.loads(header["reviews"]) if header.get("reviews") else None
    return str(applied["base_version"]) if applied else version_id


def stored(con: duckdb.DuckDBPyConnection, version_id: str) -> list[Stored]:
    """A version's own records, one per instance, by instance ID."""
    grades: dict[str, list[Graded]] = {}
    for g in table.grades(con, version_id):
        graded = Graded(str(g["paper_id"]), int(g["tier"]), g["role"], str(g["rationale"]))
        grades.setdefault(str(g["target_id"]), []).append(graded)
    findings: dict[str, list[dict[str, Any]]] = {}
    for f in table.findings(con, version_id):
        findings.setdefault(str(f.pop("instance_id")), []).append(f)
    rows = table.instances(con, version_id)
    if rows and not grades:
        raise InspireError(
            f"version {version_id} keeps no copy of its grades (it predates migration 0012); "
            "rebuild the split, then review and apply"
        )
    return [
        Stored(
            str(r["target_id"]),
            r["cutoff_date"],
            str(r["brief_id"]),
            str(r["brief"]),
            tuple(grades.get(str(r["target_id"]), ())),
            tuple(findings.get(str(r["instance_id"]), ())),
        )
        for r in rows
    ]


def refused_briefs(
    con: duckdb.DuckDBPyConnection, version_id: str, decided: dict[str, Standing]
) -> list[str]:
    """One line per instance of ``version_id`` (not rejected) whose standing brief a version
    may not take: a draft, or a rewritten brief that breaks the build's length or lexical rule.
    Each names the instance and version the curator wrote it on, the review and the rules."""
    refused = []
    for row in table.instances(con, version_id):
        target_id = str(row["target_id"])
        review = decided.get(target_id, decisions.NOT_REVIEWED).brief
        if review is None or decided[target_id].rejected:
            continue
        text = str(review.after["text"])
        if text == str(row["brief"]):  # the version's own brief, saved back
            continue
        failed = brief_rules(con, target_id, text)
        if review.draft or failed:
            refused.append(
                f"instance {review.instance_id} of {review.version_id} (review "
                f"#{review.review_id} by {review.curator}"
                + (", a draft" if review.draft else "")
                + f"): {'; '.join(failed) or 'kept as a draft'}"
            )
    return refused


def reviewed_version_id(split: str, config: str, records: Sequence[Stored]) -> str:
    """As ``splits.version_id``: the split, then a hash of the config and the content."""
    content = json.dumps(
        [[r.target_id, str(r.cutoff), r.brief, r.antecedents] for r in records], sort_keys=True
    )
    digest = hashlib.sha256(f"{config}\0{content}".encode()).hexdigest()
    return f"{split}-{digest[:12]}"


def apply_reviews(
    con: duckdb.DuckDBPyConnection, settings: Settings, split: str, label: str | None = None
) -> dict[str, Any]:
    """Write the split's latest version again with every standing review applied, as a new
    version (the old ones stay), and return its row; ``reviews`` names the base version, the
    reviews applied and the figures. Its config hash covers the base and the reviews."""
    base = base_of(con, splits.latest_version(con, split))
    header = table.version(con, base) or {}
    decided = standing_of(con, split)
    refused = refused_briefs(con, base, decided)
    if refused:
        raise InspireError(
            f"refused: {len(refused)} curator brief(s) break the build's rules, so no version "
            f"is written: {' | '.join(refused)}. Save a brief that keeps them on the instance's "
            "review page (`inspire review serve`), or discard the draft, then apply again"
        )
    kept, figures, applied = decisions.apply(stored(con, base), decided)
    if not applied:
        raise InspireError(
            f"no review stands on an instance of {base}, so there is nothing to apply; review "
            "it first (`inspire review serve`)"
        )
    config = hashlib.sha256(
        json.dumps({"reviewed_version": base, "reviews": applied}).encode()
    ).hexdigest()
    version = reviewed_version_id(split, config, kept)
    now = dt.datetime.now(dt.UTC)
    counts = json_value(header["counts"])
    made = SplitVersion(
        version_id=version,
        split=split,
        label=label,
        config_hash=config,
        code_version=header["code_version"],
        prompt_hashes=json_value(header["prompt_hashes"]),
        models=json_value(header["models"]),
        counts={
            **{k: v for k, v in counts.items() if k.startswith("targets_")},
            "instances": len(kept),
            "graded_antecedents": sum(len(r.antecedents) for r in kept),
            # accepted by the build, dropped by curators: 11 accepted beside 9 instances add up
            "dropped_by_curators": figures.rejected + figures.emptied,
        },
        created_at=now,
        status=VersionStatus.COMPLETE,
        cutoff_jitter_days=header["cutoff_jitter_days"],
        written_at=now,
        reviews={"base_version": base, "review_ids": applied, "figures": figures.as_dict()},
    )
    with warehouse.transaction(con):
        existing = versions.written(con, version)
        if existing:  # the same reviews on the same base: the same version, the latest again
            warehouse.update_where(
                con, "split_versions", {"written_at": now}, {"version_id": version}
            )
            return {**made.as_dict(), "created_at": existing[0], "label": existing[1]}
        _write(con, settings, made, kept)
    return made.as_dict()


def _write(
    con: duckdb.DuckDBPyConnection, settings: Settings, made: SplitVersion, kept: list[Stored]
) -> None:
    version = made.version_id
    key = boundary_store.instance_key(con, settings)
    instances, qrels, grades, findings = [], [], [], []
    for record in kept:
        brief = (record.brief_id, record.brief)
        instance, rels = splits.instance_rows(
            key, version, record.target_id, brief, record.cutoff, record.antecedents
        )
        instances.append(instance)
        qrels += rels
        at = {"version_id": version, "instance_id": instance.instance_id}
        grades += [
            {"version_id": version, "target_id": record.target_id, **dataclasses.asdict(g)}
            for g in record.grades
        ]
        findings += [{**at, **f} for f in record.findings]
    versions.insert(con, made)
    versions.write_instances(con, instances)
    warehouse.upsert(con, "qrels", qrels, ["version_id", "instance_id", "paper_id"])
    warehouse.upsert(con, "version_grades", grades, ["version_id", "target_id", "paper_id"])
    warehouse.upsert(con, "version_findings", findings, ["version_id", "instance_id", "check"])


def leak_failures(con: duckdb.DuckDBPyConnection, version_id: str) -> list[tuple[str, str]]:
    """(instance ID, what failed) for each instance of a version whose brief a curator marked
    leaking (the mark made on this very text)."""
    header = table.version(con, version_id)
    if header is None:
        return []
    rows = table.instances(con, version_id)
    return decisions.leak_failures(
        [(str(r["instance_id"]), str(r["target_id"]), str(r["brief"])) for r in rows],
        standing_of(con, str(header["split"])),
    )


def with_leak_marks(
    report: gold.AuditReport, marked: Sequence[tuple[str, str]]
) -> gold.AuditReport:
    """``report`` with each instance a curator marked leaking counted as a failure (check
    ``curator``); an instance that failed a check already gets the mark beside it."""
    if not marked:
        return report
    failed = dict(report.failed)
    for iid, what in marked:
        failed[iid] = f"{failed[iid]}; {what}" if iid in failed else what
    return dataclasses.replace(
        report,
        failures={**report.failures, "curator": len(marked)},
        failed=sorted(failed.items()),
    )
