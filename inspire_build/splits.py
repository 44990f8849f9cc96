"""Split versions: assemble accepted targets into instances (``exports`` writes them out).

A version is named by its split and a hash of everything that made it: the config (the split's
settings, the LLM backend, model and host, the prompt hashes, a fingerprint of the code) and
the content (each instance's target, cutoff, brief and antecedents). The same config over the
same gold gives the same version, which is never rewritten; any change gives a new one, and old
versions stay queryable. Instance IDs are HMACs under the warehouse's secret instance key (see
``boundary``), so nothing public maps back to a target.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import json
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

import inspire_build
from inspire_build import boundary, boundary_store, warehouse
from inspire_build.config import Settings
from inspire_build.cutoff import VersionCutoffs, version_cutoffs
from inspire_build.errors import InputError
from inspire_build.models import Instance, SplitVersion, VersionStatus
from inspire_build.tables import cutoffs as cutoffs_table
from inspire_build.tables import gold as gold_table
from inspire_build.tables import lineage as lineage_table
from inspire_build.tables import versions
from inspire_build.templates import load_prompts


def fingerprint(root: Path) -> str:
    """A hash of the .py and .sql files under ``root``, by relative path and content."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".sql") and "__pycache__" not in path.parts:
            digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """The package's own fingerprint, so that a change to any code that shapes a build
    (lineage, cutoff, the rules backend) gives new version IDs."""
    return fingerprint(Path(__file__).parent)


def config_hash(settings: Settings, split: str) -> str:
    """Hash of everything that shapes a split's content: its settings, the model and where it
    is served, the prompts and the code."""
    prompts = {name: p.hash for name, p in sorted(load_prompts().items())}
    model = settings.model_name
    host = urllib.parse.urlsplit(settings.llm_base_url).hostname if settings.llm_base_url else None
    described = {
        "split": split,
        "split_config": settings.split(split).model_dump(mode="json"),
        "backend": settings.llm_backend,
        "model": model,
        "llm_host": host,
        "prompts": prompts,
        "brief_attempts": settings.brief_attempts,
        "grade_part_tokens": settings.grade_part_tokens,
        "grade_readings": settings.grade_readings,
        "audit_retrieval_k": settings.audit_retrieval_k,
        "audit_retrieval_margin": settings.audit_retrieval_margin,
        "audit_search_k": settings.audit_search_k,
        "audit_search_share": settings.audit_search_share,
        "cutoff_jitter_days": settings.cutoff_jitter_days,
        "code": inspire_build.__version__,
        "code_fingerprint": code_fingerprint(),
    }
    # What shapes the model's answers beyond the prompt, named only when set: a build that sets
    # none keeps the hash it had before these settings existed.
    chosen = {
        "audit_retrieval_scope": None
        if settings.audit_retrieval_scope == "corpus"
        else settings.audit_retrieval_scope,
        "exclude_thin_windows": settings.exclude_thin_windows or None,
        "min_anonymity": settings.min_anonymity if settings.exclude_thin_windows else None,
        "llm_temperature": settings.llm_temperature,
        "llm_seed": settings.llm_seed,
        "llm_system_prompt": settings.llm_system_prompt,
        "llm_response_format": None
        if settings.llm_response_format == "json_schema"
        else settings.llm_response_format,
    }
    described |= {name: value for name, value in chosen.items() if value is not None}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class _Accepted:
    """One accepted target as a version holds it: its brief and its antecedents' grades."""

    target_id: str
    cutoff: dt.date
    brief_id: str
    brief: str
    grades: list[tuple[str, int, str]]  # (paper_id, tier, role), tiers 1-3


def _accepted(
    con: duckdb.DuckDBPyConnection, split: str, targets: Sequence[str] | None
) -> list[_Accepted]:
    """The split's accepted targets (only those in ``targets`` when given), each with its
    accepted brief and its antecedents; tier-0 references stay in ``grades`` alone."""
    rows = gold_table.accepted_briefs(con, split)
    wanted = None if targets is None else set(targets)
    found = []
    for target_id, cutoff, brief_id, text in rows:
        if wanted is not None and target_id not in wanted:
            continue
        grades = gold_table.antecedents(con, target_id)
        found.append(_Accepted(target_id, cutoff, brief_id, text, grades))
    return found


def version_id(split: str, config: str, accepted: Sequence[_Accepted]) -> str:
    """The split, then a hash of the config hash and the content: the same config over the same
    gold gives the same ID, and a version never changes under its ID."""
    content = json.dumps(
        [[a.target_id, str(a.cutoff), a.brief, a.grades] for a in accepted], sort_keys=True
    )
    digest = hashlib.sha256(f"{config}\0{content}".encode()).hexdigest()
    return f"{split}-{digest[:12]}"


def _rows(
    key: bytes, version: str, accepted: Sequence[_Accepted]
) -> tuple[list[Instance], list[dict[str, Any]]]:
    """The version's instances and qrel rows."""
    instances, qrels = [], []
    for a in accepted:
        made, rels = instance_rows(
            key, version, a.target_id, (a.brief_id, a.brief), a.cutoff, a.grades
        )
        instances.append(made)
        qrels += rels
    return instances, qrels


def instance_rows(
    key: bytes,
    version: str,
    target_id: str,
    brief: tuple[str, str],
    cutoff: Any,
    antecedents: Sequence[tuple[str, int, str | None]],
) -> tuple[Instance, list[dict[str, Any]]]:
    """One instance, its ID keyed by the instance key, and its qrel rows; ``brief`` is the
    brief's ID and text, ``antecedents`` (paper ID, tier, role)."""
    at = {"version_id": version, "instance_id": boundary.instance_id(key, version, target_id)}
    made = Instance(
        **at,
        target_id=target_id,
        brief_id=brief[0],
        brief=brief[1],
        cutoff_date=cutoff,
        n_antecedents=len(antecedents),
    )
    return made, [{**at, "paper_id": p, "tier": t, "role": r} for p, t, r in antecedents]


def _records(
    con: duckdb.DuckDBPyConnection, version: str, instances: Sequence[Instance]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The version's own copy of every grade of its targets (tier 0 included, with rationales)
    and of its briefs' audit findings, so a later build that regrades a target or re-audits a
    brief never changes what this version says."""
    grades, findings = [], []
    for instance in instances:
        target = {"version_id": version, "target_id": instance.target_id}
        grades += [{**target, **g} for g in gold_table.grades(con, instance.target_id)]
        brief = {"version_id": version, "instance_id": instance.instance_id}
        findings += [{**brief, **f} for f in gold_table.findings(con, instance.brief_id)]
    return grades, findings


def write_version(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    split: str,
    label: str | None = None,
    targets: Sequence[str] | None = None,
) -> SplitVersion:
    """Write the split version of the accepted targets among ``targets`` (default: every
    accepted target of the split), and return it.

    A version that exists already holds exactly this content (its ID hashes it), so it is not
    rewritten: only its ``written_at`` moves, which makes it the latest again. Its label never
    changes; a different one asked for is kept out, and said in its ``notes``.

    A target's cutoff is published once (SPEC §9): the lineage kept the offset an earlier
    version published, whatever the jitter setting. The version records how many it kept and
    states the jitter all its cutoffs lie within; the notes say when the setting did not apply.
    """
    config = config_hash(settings, split)
    accepted = _accepted(con, split, targets)
    version = version_id(split, config, accepted)
    now = dt.datetime.now(dt.UTC)
    statuses = lineage_table.target_statuses(con, split)
    instances, qrels = _rows(boundary_store.instance_key(con, settings), version, accepted)
    cutoffs = _cutoffs(con, settings, split, version, accepted)
    model = settings.model_name
    made = SplitVersion(
        version_id=version,
        split=split,
        label=label,
        config_hash=config,
        code_version=inspire_build.__version__,
        prompt_hashes={n: p.hash for n, p in sorted(load_prompts().items())},
        models={
            "llm": model,
            "backend": settings.llm_backend,
            "grade_readings": settings.grade_readings,
            # the card says where the retrieval check ranked; absent: the corpus (the default)
            **({"retrieval_scope": "window"} if settings.audit_retrieval_scope == "window" else {}),
        },
        counts={
            "instances": len(instances),
            "graded_antecedents": len(qrels),
            **{f"targets_{k}": int(v) for k, v in statuses.items()},
        },
        created_at=now,
        status=VersionStatus.COMPLETE,
        cutoff_jitter_days=cutoffs.jitter_days,
        written_at=now,
        cutoff_jitter_setting=settings.cutoff_jitter_days,
        cutoffs_kept=cutoffs.kept,
        notes=tuple(cutoff_notes(cutoffs, settings.cutoff_jitter_days)),
    )
    with warehouse.transaction(con):
        existing = versions.split_version(con, version)
        if existing is not None:
            return _rewritten(con, existing, label, now, made.notes)
        versions.insert(con, made)
        cutoffs_table.publish(con, cutoffs.first, now)
        versions.write_instances(con, instances)
        warehouse.upsert(con, "qrels", qrels, ["version_id", "instance_id", "paper_id"])
        grades, findings = _records(con, version, instances)
        warehouse.upsert(con, "version_grades", grades, ["version_id", "target_id", "paper_id"])
        warehouse.upsert(con, "version_findings", findings, ["version_id", "instance_id", "check"])
    return made


def _cutoffs(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    split: str,
    version: str,
    accepted: Sequence[_Accepted],
) -> VersionCutoffs:
    """The version's cutoffs beside those published before it (read before it stores its own)."""
    dates = cutoffs_table.first_public_dates(con, split)
    # a target's lineage dates it before accepting it: an undated one has no offset to keep
    held = {a.target_id: (dates[a.target_id], a.cutoff) for a in accepted if a.target_id in dates}
    published = cutoffs_table.published(con)
    return version_cutoffs(version, held, published, settings.cutoff_jitter_days)


def cutoff_notes(cutoffs: VersionCutoffs, setting: int) -> list[str]:
    """What the build's output says when kept cutoffs overrode the jitter setting, or moved."""
    notes = []
    if cutoffs.overridden:
        notes.append(
            f"{cutoffs.overridden} of {cutoffs.kept + len(cutoffs.first)} cutoffs were first "
            f"published by an earlier version and are kept (one cutoff per target), so "
            f"INSPIRE_CUTOFF_JITTER_DAYS={setting} did not apply to them; this version's "
            f"cutoffs lie 0 to {cutoffs.jitter_days} days before the exact ones"
        )
    if cutoffs.moved:
        notes.append(
            f"{cutoffs.moved} kept cutoff(s) moved with their target's first public date, "
            "which changed since an earlier version published them; the secret offset stayed"
        )
    return notes


def _rewritten(
    con: duckdb.DuckDBPyConnection,
    stored: SplitVersion,
    label: str | None,
    now: dt.datetime,
    notes: Sequence[str],
) -> SplitVersion:
    """Mark an existing version written again (the latest), and return it as stored; its
    label stays."""
    version = stored.version_id
    warehouse.update_where(con, "split_versions", {"written_at": now}, {"version_id": version})
    if label is not None and label != stored.label:
        notes = [
            *notes,
            f"version {version} exists already with label {stored.label!r}; labels never "
            f"change, so {label!r} was not applied",
        ]
    return stored.model_copy(update={"written_at": now, "notes": tuple(notes)})


def version_qrels(con: duckdb.DuckDBPyConnection, version: str) -> dict[str, dict[str, int]]:
    """instance_id -> paper_id -> tier: a split version's graded antecedents."""
    found: dict[str, dict[str, int]] = {}
    for iid, paper_id, tier in versions.qrels(con, version):
        found.setdefault(iid, {})[paper_id] = tier
    return found


def latest_version(con: duckdb.DuckDBPyConnection, split: str) -> str:
    found = versions.latest(con).get(split)
    if found is None:
        raise InputError(f"split {split!r} has no version yet; build it first")
    return found


def latest_versions(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """split -> its latest version, for every split that has one."""
    return versions.latest(con)


def check_version(con: duckdb.DuckDBPyConnection, version: str, split: str | None = None) -> None:
    """Refuse a version ID the warehouse does not hold, naming the ones it does (newest first),
    and one of another split than ``split`` (given both, a command would use one and ignore
    the other)."""
    known = versions.known(con)
    if version in known:
        stored = versions.split_version(con, version) if split is not None else None
        if stored is not None and stored.split != split:
            raise InputError(
                f"version {version!r} is of split {stored.split!r}, not {split!r}; "
                "give its split, or leave --split out"
            )
        return
    shown = ", ".join(known[:KNOWN_SHOWN]) + (", ..." if len(known) > KNOWN_SHOWN else "")
    raise InputError(
        f"unknown version {version!r}; "
        + (f"known versions: {shown}" if known else "the warehouse has none yet; build a split")
    )


KNOWN_SHOWN = 10  # versions an unknown-version error lists
