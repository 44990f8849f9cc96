"""A split version's export: public instances, private gold, and the dataset card.

All or nothing: everything is written into a staging folder beside ``out``, the public side is
attacked (the leak scan and the hash attack), and only then are the files moved into ``out``.
An export that fails leaves no public file behind.

The leak scan reads the public files back (the JSON values, the Parquet rows, the card) and
looks, in one normal form (``boundary.normal_text``: NFKC, case folded, accents stripped,
punctuation and whitespace collapsed), for every target's title and title 6-grams, every
target ID in every scheme, and the titles of every instance's T3 antecedents.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import duckdb

from inspire_build import boundary, boundary_store, card, sampling, warehouse
from inspire_build.config import Settings
from inspire_build.errors import InputError, InspireError
from inspire_build.review import sample as review_sample
from inspire_build.splits import latest_version
from inspire_build.tables import reviews as reviews_table
from inspire_build.tables import versions
from inspire_build.tables import windows as windows_table

PUBLIC_FILES = ("instances.jsonl", "instances.parquet")
HUB_CARD = "README.md"  # in public/: the card a dataset hub reads, its data file the Parquet
CARD = "dataset_card.md"
LEAK_NGRAM = 6
MIN_ID_DIGITS = 6  # a numeric ID shorter than this (a small CorpusId) is too common to scan for


class ExportLeak(InspireError):
    """A public file names a target or an antecedent, or gives its instance ID away."""


class ExportRefused(InspireError):
    """The version's latest audit did not pass (or it was never audited), and the export was
    not forced."""


def export(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    split: str,
    version: str | None,
    out: Path,
    force: bool = False,
) -> dict[str, str]:
    """Write ``out/public``, ``out/private`` and ``out/dataset_card.md``; returns file -> sha256.

    ``out/public`` is a dataset as a hub takes it: the instances and a README.md whose metadata
    makes ``datasets.load_dataset(out/public)`` load them, the split named. Nothing of the
    private side is in it or named by it.

    Raises :class:`ExportRefused` unless the version's latest audit passed or ``force`` (the
    card then says why it did not), and :class:`ExportLeak` when the public side leaks, each
    leaving ``out`` as it was.
    """
    version = version or latest_version(con, split)
    unpassed = not_passed(windows_table.latest_verdict(con, version))
    if unpassed is not None and not force:
        raise ExportRefused(
            f"{version} is not exported: {unpassed}. Run `inspire audit {split}`, or export "
            "anyway with --force (the card then says the audit did not pass, and why)"
        )
    report = boundary_store.attack_version(con, settings, version)
    if report.hash.recovered:
        raise ExportLeak(
            f"the hash attack recovers {len(report.hash.recovered)} instance ID(s) of {version} "
            "from public data; rebuild the version (its IDs are not keyed)"
        )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.export-", dir=out.parent))
    except OSError as error:
        raise InputError(f"cannot write an export to {out}: {error.strerror or error}") from error
    try:
        _write_public(con, split, version, staging / "public")
        _write_private(con, version, staging / "private")
        _atomic(staging / CARD, dataset_card(con, split, version, report, unpassed))
        leak_scan(con, version, staging / "public", staging / CARD)
        hashes = {
            str(p.relative_to(staging)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(staging.rglob("*"))
            if p.is_file()
        }
        _move_into(staging, out, ["private", CARD, "public"])
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return hashes


def _move_into(staging: Path, out: Path, names: Iterable[str]) -> None:
    """Replace each named entry of ``out`` by the staged one; the public side goes last."""
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        os.replace(staging / name, target)


def _atomic(path: Path, text: str | bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(text.encode() if isinstance(text, str) else text)
    os.replace(tmp, path)


def _write_public(con: duckdb.DuckDBPyConnection, split: str, version: str, public: Path) -> None:
    public.mkdir()
    rows = versions.public_instances(con, version)
    lines = [
        json.dumps({"instance_id": i, "brief": b, "cutoff": str(c)}, ensure_ascii=False)
        for i, b, c in rows
    ]
    jsonl, parquet = PUBLIC_FILES
    _atomic(public / jsonl, "".join(line + "\n" for line in lines))
    versions.write_public_parquet(con, version, public / parquet)
    _atomic(public / HUB_CARD, card.hub_readme(split, version, len(rows), parquet, jsonl))


def _write_private(con: duckdb.DuckDBPyConnection, version: str, private: Path) -> None:
    private.mkdir()
    qrels = versions.sorted_qrels(con, version)
    _atomic(private / "qrels.trec", "".join(f"{i} 0 {p} {t}\n" for i, p, t in qrels))
    versions.write_private_parquets(
        con, version, private / "antecedents.parquet", private / "targets.parquet"
    )


# --- the leak scan ------------------------------------------------------------------------------


def leak_needles(con: duckdb.DuckDBPyConnection, version: str) -> set[str]:
    """Every string, in normal form, whose appearance in a public file names a target, names
    any graded antecedent by an ID (a curator's rewrite may quote one), or gives a T3
    antecedent away by its title."""
    needles: set[str] = set()
    for target_id, title, spellings in versions.target_spellings(con, version):
        needles.update(_id_needle(str(i)) for i in [target_id, *(spellings or [])] if i)
        needles.update(_title_needles(title, min_words=2, ngram=LEAK_NGRAM))
    needles.update(_id_needle(value) for value in versions.antecedent_spellings(con, version))
    for title in versions.t3_titles(con, version):
        needles.update(_title_needles(title, min_words=3, ngram=None))
    return {n for n in needles if n}


def _id_needle(value: str) -> str:
    normal = boundary.normal_text(value).strip()
    return "" if normal.isdigit() and len(normal) < MIN_ID_DIGITS else normal


def _title_needles(title: str | None, *, min_words: int, ngram: int | None) -> list[str]:
    words = boundary.normal_text(title or "").split()
    if len(words) < min_words:
        return []
    found = [" ".join(words)]
    if ngram is not None:
        found += [" ".join(words[i : i + ngram]) for i in range(len(words) - ngram + 1)]
    return found


def public_texts(con: duckdb.DuckDBPyConnection, public: Path, card: Path | None) -> list[str]:
    """The text of every public file as a reader gets it: JSON values decoded, Parquet rows
    read back, the card as written."""
    texts = []
    for path in sorted(public.iterdir()):
        if path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                texts += [str(v) for v in json.loads(line).values()] if line.strip() else []
            texts.append(path.read_text(encoding="utf-8"))
        elif path.suffix == ".parquet":
            rows = warehouse.parquet_rows(con, path)
            texts += [str(v) for row in rows for v in row]
        else:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    if card is not None:
        texts.append(card.read_text(encoding="utf-8"))
    return texts


def leak_scan(
    con: duckdb.DuckDBPyConnection, version: str, public: Path, card: Path | None = None
) -> None:
    """Raise :class:`ExportLeak` naming what leaked, if any needle is in a public file."""
    needles = leak_needles(con, version)
    found: set[str] = set()
    for text in public_texts(con, public, card):
        found.update(boundary.found_in(needles, boundary.normal_text(text)))
    if found:
        raise ExportLeak(f"a public file names a target or its gold: {sorted(found)[:5]}")


# --- the dataset card ---------------------------------------------------------------------------


def not_passed(verdict: Mapping[str, Any] | None) -> str | None:
    """Why a version's latest audit (``audit_verdicts``) does not let it be exported; None: it
    passed."""
    if verdict is None:
        return "it has not been audited"
    if verdict["verdict"] == boundary.Verdict.PASSED.value:
        return None
    reasons = f" ({verdict['reasons']})" if verdict["reasons"] else ""
    return f"its latest audit {verdict['verdict']}{reasons}"


def dataset_card(
    con: duckdb.DuckDBPyConnection,
    split: str,
    version: str,
    report: boundary_store.BoundaryReport | None,
    unpassed: str | None = None,
) -> str:
    """The paper's Table 5 statistics for this build, the funnel to instances, the curators'
    review and agreement, and the information boundary with the figures of the attacks played
    against it."""
    figures = versions.card_figures(con, split, version)
    per_target, tiers, words, years = (
        figures.per_target,
        figures.tiers,
        [len(b.split()) for b in figures.briefs],
        figures.years,
    )
    funnel = figures.funnel
    row = (figures.config_hash, figures.code_version, figures.models)
    median = statistics.median(per_target) if per_target else 0
    mean_words = statistics.fmean(words) if words else 0.0
    warning = [f"**Exported without a passing audit: {unpassed}.**", ""] if unpassed else []
    lines = [
        f"# Dataset card: {split} ({version})",
        "",
        *warning,
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
    selected, cutoffs = versions.months(con, split, version)
    lines += card.beside_paper(split, per_target, tiers, words, len(selected), figures.briefs)
    lines += card.per_month_table(sampling.per_month(cutoffs))
    lines += card.sources_section(versions.served(con, version))
    models = json.loads(str(row[2] or "{}"))
    lines += card.method_section(
        models.get("grade_readings"),
        (figures.searched, len(per_target)),
        models.get("retrieval_scope", "corpus"),
    )
    applied = (reviews_table.version(con, version) or {}).get("reviews")
    lines += card.review_section(json.loads(applied) if isinstance(applied, str) else applied)
    found = review_sample.agreement_of(con, version)
    if found is None:
        lines += card.agreement_section(None, 0, None)
    else:
        lines += card.agreement_section(found.version_id, found.seed, found.figures)
    return "\n".join(lines + boundary_section(report))


def boundary_section(report: boundary_store.BoundaryReport | None) -> list[str]:
    """What the card says of the information boundary (SPEC §9); None: not attacked yet."""
    if report is None:
        return [
            "## Information boundary",
            "",
            "Not attacked yet: `inspire audit` plays the attackers, and the card `inspire "
            "export` writes reports them.",
        ]
    jitter = report.jitter_days
    moved = (
        f"moved earlier by a secret offset of 0 to {jitter} days per target"
        if jitter
        else "not moved (`cutoff_jitter_days: 0`): it is the paper's exact cutoff"
    )
    lines = [
        "## Information boundary",
        "",
        f"- Verdict of the attacks: {report.judgement.line(report.version)}.",
        "- Instance IDs are HMAC-SHA256 values under this warehouse's secret instance key, "
        "which is not published; no hash of public data gives an instance ID.",
        f"- Each published cutoff is the target's first public date minus three months, {moved}. "
        "Antecedents are judged against the published cutoff.",
        f"- Hash attack: {len(report.hash.recovered)} instance IDs recovered from "
        f"{report.hash.tried:,} hashes of the warehouse's paper IDs under every public string.",
        "- Papers the warehouse knows in each published cutoff's window: "
        f"{_spread(report.window_sizes)}; of those, the candidates the selection criteria "
        f"above would select (the anonymity set): {_spread(report.anonymity)}.",
        "",
        "| Attacker | Target first | In the top 10 | Chance: first | Chance: top 10 | n |",
        "|---|---|---|---|---|---|",
    ]
    for a in report.attackers:
        lines.append(
            f"| {a.name} | {a.top1:.1%} | {a.top10:.1%} | {a.chance1:.1%} | {a.chance10:.1%} "
            f"| {a.n} |"
            if a.n
            else f"| {a.name} | not run | | | | 0 |"
        )
    return [*lines, ""]


def _spread(values: Iterable[int]) -> str:
    found = sorted(values)
    if not found:
        return "none"
    return f"min {found[0]}, median {statistics.median(found):g}, max {found[-1]}"
