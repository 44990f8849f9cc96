"""Split versions: assemble accepted targets into instances, and export them.

A version is named by its split and the hash of everything that made it: the split's settings,
the LLM backend and model, the prompt hashes and the code version. The same config gives the
same version (a rerun rewrites it identically); any change gives a new one, and old versions
stay queryable. Instance IDs are salted hashes, never a target's ID.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb

from inspire_build import __version__, warehouse
from inspire_build.briefs import title_ngrams
from inspire_build.config import Settings
from inspire_build.errors import InputError, InspireError
from inspire_build.llm import load_prompts

PUBLIC_FILES = ("instances.jsonl", "instances.parquet")
LEAK_NGRAM = 6


class ExportLeak(InspireError):
    """A public file names a target."""


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
        "audit_retrieval_k": settings.audit_retrieval_k,
        "code": __version__,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def version_id(settings: Settings, split: str) -> str:
    return f"{split}-{config_hash(settings, split)[:12]}"


def instance_id(version: str, target_id: str) -> str:
    """Opaque: a hash salted with the version, so it names no target and differs per version."""
    return hashlib.sha256(f"inspire:{version}:{target_id}".encode()).hexdigest()[:16]


def write_version(
    con: duckdb.DuckDBPyConnection, settings: Settings, split: str, label: str | None = None
) -> dict[str, Any]:
    """Write (or rewrite, identically) the split version for the current config."""
    version = version_id(settings, split)
    accepted = con.execute(
        "SELECT t.paper_id, t.cutoff_date, b.brief_id, b.text FROM targets t "
        "JOIN briefs b ON b.target_id = t.paper_id AND b.status = 'accepted' "
        "WHERE t.split = ? AND t.status = 'accepted' ORDER BY t.paper_id",
        [split],
    ).fetchall()
    instances, qrels = [], []
    for target_id, cutoff, brief_id, text in accepted:
        grades = con.execute(
            "SELECT paper_id, tier, role FROM grades WHERE target_id = ? ORDER BY paper_id",
            [target_id],
        ).fetchall()
        iid = instance_id(version, target_id)
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
        "models": {"llm": model, "backend": settings.llm_backend},
        "counts": counts,
        "created_at": dt.datetime.now(dt.UTC),
        "status": "complete",
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


def latest_version(con: duckdb.DuckDBPyConnection, split: str) -> str:
    row = con.execute(
        "SELECT version_id FROM latest_split_versions WHERE split = ?", [split]
    ).fetchone()
    if not row:
        raise InputError(f"split {split!r} has no version yet; build it first")
    return str(row[0])


# --- export -------------------------------------------------------------------------------------


def _atomic(path: Path, text: str | bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(text.encode() if isinstance(text, str) else text)
    os.replace(tmp, path)


def _copy(con: duckdb.DuckDBPyConnection, query: str, params: list[object], path: Path) -> None:
    tmp = path.with_name(".tmp-" + path.name)
    # COPY binds only its file name reliably, so the query's own parameters are bound first.
    statement = "CREATE OR REPLACE TEMP TABLE export_rows AS " + query  # a fixed query
    con.execute(statement, params)
    con.execute("COPY export_rows TO ? (FORMAT parquet)", [str(tmp)])
    con.execute("DROP TABLE export_rows")
    os.replace(tmp, path)


def export(
    con: duckdb.DuckDBPyConnection, split: str, version: str | None, out: Path
) -> dict[str, str]:
    """Write the public and private files and the dataset card; returns file -> sha256."""
    version = version or latest_version(con, split)
    public, private = out / "public", out / "private"
    public.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    rows = con.execute(
        "SELECT instance_id, brief, cutoff_date FROM instances WHERE version_id = ? "
        "ORDER BY instance_id",
        [version],
    ).fetchall()
    lines = [
        json.dumps({"instance_id": i, "brief": b, "cutoff": str(c)}, ensure_ascii=False)
        for i, b, c in rows
    ]
    _atomic(public / "instances.jsonl", "".join(line + "\n" for line in lines))
    _copy(
        con,
        "SELECT instance_id, brief, cutoff_date AS cutoff FROM instances "
        "WHERE version_id = ? ORDER BY instance_id",
        [version],
        public / "instances.parquet",
    )
    qrels = con.execute(
        "SELECT instance_id, paper_id, tier FROM qrels WHERE version_id = ? "
        "ORDER BY instance_id, paper_id",
        [version],
    ).fetchall()
    _atomic(private / "qrels.trec", "".join(f"{i} 0 {p} {t}\n" for i, p, t in qrels))
    _copy(
        con,
        "SELECT q.instance_id, q.paper_id, q.tier, q.role, g.rationale FROM qrels q "
        "JOIN instances i USING (version_id, instance_id) "
        "LEFT JOIN grades g ON g.target_id = i.target_id AND g.paper_id = q.paper_id "
        "WHERE q.version_id = ? ORDER BY 1, 2",
        [version],
        private / "antecedents.parquet",
    )
    _copy(
        con,
        "SELECT i.instance_id, i.target_id, p.title, i.cutoff_date, p.first_public_date "
        "FROM instances i LEFT JOIN papers p ON p.paper_id = i.target_id "
        "WHERE i.version_id = ? ORDER BY 1",
        [version],
        private / "targets.parquet",
    )
    _atomic(out / "dataset_card.md", dataset_card(con, split, version))
    leak_scan(con, version, public)
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def leak_scan(con: duckdb.DuckDBPyConnection, version: str, public: Path) -> None:
    """Fail if a target's ID, DOI, arXiv ID, title, or a 6-gram of its title is public."""
    targets = con.execute(
        "SELECT i.target_id, p.title FROM instances i LEFT JOIN papers p "
        "ON p.paper_id = i.target_id WHERE i.version_id = ?",
        [version],
    ).fetchall()
    needles: set[str] = set()
    for target_id, title in targets:
        for (value,) in con.execute(
            "SELECT value FROM paper_ids WHERE paper_id = ?", [target_id]
        ).fetchall():
            needles.add(value.lower())
        needles.add(str(target_id).lower())
        if title:
            needles.update(title_ngrams(title, LEAK_NGRAM))
    for name in ("instances.jsonl",):
        text = (public / name).read_text(encoding="utf-8").lower()
        normal = " " + re.sub(r"[^\w]+", " ", text) + " "
        found = [n for n in needles if n in text or f" {n} " in normal]
        if found:
            raise ExportLeak(f"{name} names a target: {sorted(found)[:5]}")


def dataset_card(con: duckdb.DuckDBPyConnection, split: str, version: str) -> str:
    """The paper's Table 5 statistics for this build, plus the funnel to instances."""
    per_target = [
        n
        for (n,) in con.execute(
            "SELECT n_antecedents FROM instances WHERE version_id = ?", [version]
        ).fetchall()
    ]
    tiers = Counter(
        dict(
            con.execute(
                "SELECT tier, count(*) FROM qrels WHERE version_id = ? GROUP BY 1", [version]
            ).fetchall()
        )
    )
    words = [
        len(str(b).split())
        for (b,) in con.execute(
            "SELECT brief FROM instances WHERE version_id = ?", [version]
        ).fetchall()
    ]
    years = con.execute(
        "SELECT min(year(t.first_public_date)), max(year(t.first_public_date)) FROM instances i "
        "JOIN targets t ON t.paper_id = i.target_id AND t.split = ? WHERE i.version_id = ?",
        [split, version],
    ).fetchone() or (None, None)
    funnel = dict(
        con.execute(
            "SELECT status, count(*) FROM targets WHERE split = ? GROUP BY 1", [split]
        ).fetchall()
    )
    row = con.execute(
        "SELECT config_hash, code_version, models FROM split_versions WHERE version_id = ?",
        [version],
    ).fetchone() or ("", "", "{}")
    median = statistics.median(per_target) if per_target else 0
    mean_words = statistics.fmean(words) if words else 0.0
    lines = [
        f"# Dataset card: {split} ({version})",
        "",
        f"Built by inspire-build {row[1]}; config hash `{str(row[0])[:16]}`; models {row[2]}.",
        "",
        "| Split | Targets | Graded antecedents | Median/target | T3 | T2 | T1 | Mean brief words "
        "| Target years |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {split} | {len(per_target):,} | {sum(per_target):,} | {median:g} | {tiers[3]:,} | "
        f"{tiers[2]:,} | {tiers[1]:,} | {mean_words:.1f} | {years[0]} to {years[1]} |",
        "",
        "## Funnel",
        "",
        "| Stage | Targets |",
        "|---|---|",
    ]
    lines += [f"| {status} | {count:,} |" for status, count in sorted(funnel.items())]
    lines += [f"| instances in this version | {len(per_target):,} |", ""]
    return "\n".join(lines)
