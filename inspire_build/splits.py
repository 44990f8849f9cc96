"""Split versions: assemble accepted targets into instances (``exports`` writes them out).

A version is named by its split and the hash of everything that made it: the split's settings,
the LLM backend and model, the prompt hashes and the code version. The same config gives the
same version (a rerun rewrites it identically); any change gives a new one, and old versions
stay queryable. Instance IDs are HMACs under the warehouse's secret instance key (see
``boundary``), so nothing public maps back to a target.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

import duckdb

from inspire_build import __version__, boundary, boundary_store, warehouse
from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.llm import load_prompts


def config_hash(settings: Settings, split: str) -> str:
    """Hash of everything that shapes a split's content."""
    prompts = {name: p.hash for name, p in sorted(load_prompts().items())}
    model = "rules-v1" if settings.llm_backend == "rules" else settings.llm_model
    described = {
        "split": split,
        "split_config": settings.split(split).model_dump(mode="json"),
        "backend": settings.llm_backend,
        "model": model,
        "prompts": prompts,
        "brief_attempts": settings.brief_attempts,
        "grade_part_tokens": settings.grade_part_tokens,
        "grade_readings": settings.grade_readings,
        "audit_retrieval_k": settings.audit_retrieval_k,
        "audit_retrieval_margin": settings.audit_retrieval_margin,
        "cutoff_jitter_days": settings.cutoff_jitter_days,
        "code": __version__,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def version_id(settings: Settings, split: str) -> str:
    return f"{split}-{config_hash(settings, split)[:12]}"


def write_version(
    con: duckdb.DuckDBPyConnection, settings: Settings, split: str, label: str | None = None
) -> dict[str, Any]:
    """Write (or rewrite, identically) the split version for the current config."""
    version = version_id(settings, split)
    key = boundary_store.instance_key(con, settings)
    accepted = con.execute(
        "SELECT t.paper_id, t.cutoff_date, b.brief_id, b.text FROM targets t "
        "JOIN briefs b ON b.target_id = t.paper_id AND b.status = 'accepted' "
        "WHERE t.split = ? AND t.status = 'accepted' ORDER BY t.paper_id",
        [split],
    ).fetchall()
    instances, qrels = [], []
    for target_id, cutoff, brief_id, text in accepted:
        # Only antecedents (tiers 1-3) are gold; tier-0 references stay in ``grades`` alone.
        grades = con.execute(
            "SELECT paper_id, tier, role FROM grades WHERE target_id = ? AND tier > 0 "
            "ORDER BY paper_id",
            [target_id],
        ).fetchall()
        iid = boundary.instance_id(key, version, target_id)
        instances.append(
            {
                "version_id": version,
                "instance_id": iid,
                "target_id": target_id,
                "brief_id": brief_id,
                "brief": text,
                "cutoff_date": cutoff,
                "n_antecedents": len(grades),
            }
        )
        qrels += [
            {"version_id": version, "instance_id": iid, "paper_id": p, "tier": t, "role": r}
            for p, t, r in grades
        ]
    statuses = dict(
        con.execute(
            "SELECT status, count(*) FROM targets WHERE split = ? GROUP BY 1", [split]
        ).fetchall()
    )
    counts = {
        "instances": len(instances),
        "graded_antecedents": len(qrels),
        **{f"targets_{k}": int(v) for k, v in statuses.items()},
    }
    model = "rules-v1" if settings.llm_backend == "rules" else settings.llm_model
    row = {
        "version_id": version,
        "split": split,
        "label": label,
        "config_hash": config_hash(settings, split),
        "code_version": __version__,
        "prompt_hashes": {n: p.hash for n, p in sorted(load_prompts().items())},
        "models": {
            "llm": model,
            "backend": settings.llm_backend,
            "grade_readings": settings.grade_readings,
        },
        "counts": counts,
        "created_at": dt.datetime.now(dt.UTC),
        "status": "complete",
        "cutoff_jitter_days": settings.cutoff_jitter_days,
    }
    with warehouse.transaction(con):
        existing = con.execute(
            "SELECT created_at FROM split_versions WHERE version_id = ?", [version]
        ).fetchone()
        if existing:  # the same config again: keep the version's identity and time
            row["created_at"] = existing[0]
        warehouse.upsert(con, "split_versions", [row], ["version_id"])
        warehouse.replace_where(
            con, "instances", {"version_id": version}, instances, ["version_id", "instance_id"]
        )
        warehouse.replace_where(
            con, "qrels", {"version_id": version}, qrels, ["version_id", "instance_id", "paper_id"]
        )
    return row


def version_qrels(con: duckdb.DuckDBPyConnection, version: str) -> dict[str, dict[str, int]]:
    """instance_id -> paper_id -> tier: a split version's graded antecedents."""
    found: dict[str, dict[str, int]] = {}
    for iid, paper_id, tier in con.execute(
        "SELECT instance_id, paper_id, tier FROM qrels WHERE version_id = ?", [version]
    ).fetchall():
        found.setdefault(str(iid), {})[str(paper_id)] = int(tier)
    return found


def latest_version(con: duckdb.DuckDBPyConnection, split: str) -> str:
    row = con.execute(
        "SELECT version_id FROM latest_split_versions WHERE split = ?", [split]
    ).fetchone()
    if not row:
        raise InputError(f"split {split!r} has no version yet; build it first")
    return str(row[0])


def latest_versions(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """split -> its latest version, for every split that has one."""
    rows = con.execute("SELECT split, version_id FROM latest_split_versions").fetchall()
    return {str(split): str(version) for split, version in rows}


def check_version(con: duckdb.DuckDBPyConnection, version: str) -> None:
    """Refuse a version ID the warehouse does not hold, naming the ones it does (newest first)."""
    known = [
        str(v)
        for (v,) in con.execute(
            "SELECT version_id FROM split_versions ORDER BY created_at DESC, version_id"
        ).fetchall()
    ]
    if version in known:
        return
    shown = ", ".join(known[:KNOWN_SHOWN]) + (", ..." if len(known) > KNOWN_SHOWN else "")
    raise InputError(
        f"unknown version {version!r}; "
        + (f"known versions: {shown}" if known else "the warehouse has none yet; build a split")
    )


KNOWN_SHOWN = 10  # versions an unknown-version error lists
