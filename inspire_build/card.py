"""Pure: the dataset card's figures beside the paper's Table 5, instances per month, and the
hub card (the public folder's README.md, with the metadata a dataset hub reads)."""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Mapping, Sequence

import yaml

from inspire_build.review import agreement
from inspire_build.review.agreement import Agreement


@dataclasses.dataclass(frozen=True)
class Table5Row:
    """One partition of the paper's Table 5 (appendix): its targets are its instances."""

    targets: int
    antecedents: int
    median: float
    t3: int
    t2: int
    t1: int
    brief_words: float


PAPER_TABLE5 = {
    "train": Table5Row(1549, 10268, 7, 430, 2905, 6933, 183.4),
    "eval": Table5Row(476, 3574, 10, 179, 1244, 2151, 179.3),
}


def _shares(t3: int, t2: int, t1: int) -> str:
    total = t3 + t2 + t1
    if not total:
        return "- / - / -"
    return " / ".join(f"{n / total:.1%}" for n in (t3, t2, t1))


def beside_paper(
    split: str,
    per_instance: Sequence[int],
    tiers: Mapping[int, int],
    brief_words: Sequence[int],
    selected: int,
) -> list[str]:
    """This build's Table 5 figures next to the paper's partition of the same name."""
    paper = PAPER_TABLE5.get(split)
    ours = [
        f"{statistics.median(per_instance):g}" if per_instance else "-",
        f"{statistics.fmean(per_instance):.2f}" if per_instance else "-",
        _shares(tiers.get(3, 0), tiers.get(2, 0), tiers.get(1, 0)),
        f"{statistics.fmean(brief_words):.1f}" if brief_words else "-",
        f"{len(per_instance) / selected:.2f} ({len(per_instance)} of {selected})"
        if selected
        else "-",
    ]
    theirs = (
        [
            f"{paper.median:g}",
            f"{paper.antecedents / paper.targets:.2f}",
            _shares(paper.t3, paper.t2, paper.t1),
            f"{paper.brief_words:.1f}",
            "not reported",
        ]
        if paper
        else ["-"] * 5
    )
    names = (
        "antecedents per instance, median",
        "antecedents per instance, mean",
        "share of T3 / T2 / T1",
        "brief words, mean",
        "instances per selected target",
    )
    lines = [
        "## Beside the paper's Table 5",
        "",
        f"| figure | this build | paper ({split}) |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {a} | {b} |" for name, a, b in zip(names, ours, theirs, strict=True)]
    return [*lines, ""]


def per_month_table(instances: Mapping[str, int]) -> list[str]:
    """Instances per month of their published cutoff. A count by the targets' first public
    month would narrow the windows a published cutoff allows (a month with no target rules out
    the days of it a window holds); the cutoffs are public already, so their months tell
    nothing new (issue 36)."""
    lines = [
        "## Instances per month of the published cutoff",
        "",
        "| month | instances |",
        "|---|---|",
    ]
    lines += [f"| {month} | {instances[month]} |" for month in sorted(instances)]
    return [*lines, ""]


def sources_section(served: Sequence[tuple[str, str, int, int]]) -> list[str]:
    """Which side served each instance's target record and S2 reference list: the APIs or a
    bulk release (``inspire snapshot ingest``)."""
    lines = [
        "## Sources",
        "",
        "| target's OpenAlex record | its S2 reference list | instances "
        "| S2 citations naming no paper |",
        "|---|---|---|---|",
    ]
    lines += [f"| {oa} | {s2} | {n:,} | {u:,} |" for oa, s2, n, u in served]
    if any(u for *_, u in served):
        lines += [
            "",
            "The S2 Datasets give no title for a citation without a cited corpus ID (the API "
            "does), so those are not references and their contexts are not used.",
        ]
    return [*lines, ""]


def readings_line(readings: int | None) -> str:
    """How many times the grader read each reference (None: a version from before readings)."""
    if readings is None:
        return "- Each reference was graded once."
    if readings == 1:
        return "- Each reference was graded in one reading."
    return (
        f"- Each reference was graded in {readings} readings, each meeting the references in an "
        "order and parts of its own; where they split, one more reading voted, and the majority "
        "tier (else the median) stands."
    )


def method_section(readings: int | None = None) -> list[str]:
    """How the gold and the briefs were made: the rubric, tier 0, the grader's readings and the
    redaction rules."""
    return [
        "## How the gold and the briefs were made",
        "",
        "- Every eligible reference (public before the published cutoff) is graded: **T3** if "
        "the target's method could not exist without it, **T2** if it is a component or "
        "baseline the method builds on or compares against, **T1** if it is background that "
        "shapes the problem, and **0** if it is not an antecedent (a passing mention, a dataset "
        "used only for evaluation, a contrast). Only T1-T3 are qrels; tier-0 references stay "
        "in the warehouse's `grades` with their rationale.",
        readings_line(readings),
        "- A brief may not contain the target's coined names and acronyms (those its title or "
        "method sentences define and no antecedent uses), its title's 4-grams (case-folded, "
        "stop words never banned alone), its result numbers, or its antecedents' titles. It may "
        "name the problem's field, including acronyms the antecedents share.",
        "- Each brief passed four audits: lexical, identity (a model names the paper), "
        "retrieval (bm25 over the warehouse) and a blind mechanism audit (a model guesses the "
        "mechanism from the brief alone; a second call compares the guess with the abstract).",
        "",
    ]


REVIEW_FIGURES = (
    ("reviewed", "instances of the base with a standing decision"),
    ("accepted", "accepted by a curator"),
    ("rejected", "rejected by a curator (dropped)"),
    ("corrected", "kept, with antecedents or brief corrected"),
    ("tier_changes", "references whose tier a curator changed"),
    ("role_changes", "antecedents whose role alone a curator changed"),
    ("briefs_edited", "briefs a curator rewrote (re-audited)"),
    ("marked_leaking", "kept instances whose brief a curator marked leaking"),
    ("emptied", "instances left with no antecedent (dropped)"),
)


def review_section(applied: Mapping[str, object] | None) -> list[str]:
    """What curators decided in this version (``inspire review serve``): the figures a version
    made by ``inspire build --apply-reviews`` keeps; None: no review was applied."""
    lines = ["## Curator review", ""]
    if not applied:
        return [
            *lines,
            "No curator review was applied to this version (`inspire review serve` records "
            "decisions; `inspire build --apply-reviews` writes a version with them).",
            "",
        ]
    figures = applied.get("figures")
    counts = figures if isinstance(figures, Mapping) else {}
    ids = applied.get("review_ids")
    lines += [
        f"This version is `{applied.get('base_version')}` with "
        f"{len(ids) if isinstance(ids, list) else 0} standing curator decisions applied "
        "(`inspire build --apply-reviews`).",
        "",
        "| figure | count |",
        "|---|---|",
    ]
    lines += [f"| {label} | {int(counts.get(name, 0)):,} |" for name, label in REVIEW_FIGURES]
    return [*lines, ""]


def agreement_section(sampled: str | None, seed: int, found: Agreement | None) -> list[str]:
    """Model-curator agreement over the review sample of version ``sampled`` (``inspire review
    sample``), with intervals and n; None: no sample was drawn. Figures only: no target,
    instance, note or curator is named."""
    lines = ["## Curator agreement", ""]
    if found is None:
        return [
            *lines,
            "No review sample was drawn for this version, so no curator has checked the model's "
            "grades and briefs on one (`inspire review sample` draws it, `inspire review serve` "
            "reviews it).",
            "",
        ]
    drawn = (
        f"Curators review a seeded sample of {found.sampled:,} instances of `{sampled}` (seed "
        f"{seed}), stratified by the target's first public month and the instance's highest "
        "gold tier (`inspire review sample`)."
    )
    if not found.reviewed:
        return [*lines, drawn, "", "No sampled instance has been reviewed yet: no figure.", ""]
    lines += [drawn, "", "| figure | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in agreement.rows(found)]
    return [
        *lines,
        "",
        "Intervals are 95% bootstrap intervals over instances. Tiers are compared on the "
        "reviewed instances a curator kept and passed on the grades of (accepted, or regraded); "
        "a reference's curator tier is its regrade, else the model's tier, left as it was. "
        "Leak marks and rejections are shares of the reviewed instances.",
        "",
    ]


# --- the hub card -------------------------------------------------------------------------------

# The licence the hub card declares. The public side is opaque IDs, dates and briefs that a
# model wrote; a publisher whose sources' terms call for another licence changes this line.
HUB_LICENSE = "cc-by-4.0"
HUB_FIELDS = (
    ("instance_id", "string", "opaque: a keyed hash under a secret key; no public string gives it"),
    ("brief", "string", "the open problem, with its solution redacted"),
    ("cutoff", "date", "search only papers public before this day"),
)
# The Hugging Face Hub's size_categories: each ends below the next power of ten.
_SIZES = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M",
          "100M<n<1B", "1B<n<10B", "10B<n<100B", "100B<n<1T")  # fmt: skip


def size_category(count: int) -> str:
    """The hub's size category of ``count`` rows: ``n<1K`` below 1,000, then one a power of
    ten, ``n>1T`` from 10^12."""
    return next((label for i, label in enumerate(_SIZES) if count < 10 ** (3 + i)), "n>1T")


def hub_split(split: str) -> str:
    """The split's name as a hub split (word characters and dots): any other character
    becomes ``_``."""
    return re.sub(r"[^\w.]", "_", split)


def hub_metadata(split: str, version: str, count: int, data_file: str) -> dict[str, object]:
    """The YAML block a dataset hub reads: licence, task, size, name, and one config whose only
    data file is the public instances file, as the split."""
    return {
        "license": HUB_LICENSE,
        "language": ["en"],
        "pretty_name": f"inspire-build {split} ({version})",
        "task_categories": ["text-retrieval"],
        "task_ids": ["document-retrieval"],
        "size_categories": [size_category(count)],
        "tags": ["literature-search", "scientific-literature", "benchmark"],
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": hub_split(split), "path": data_file}],
                "default": True,
            }
        ],
    }


def hub_readme(split: str, version: str, count: int, data_file: str, also: str) -> str:
    """The public folder's README.md: the hub's metadata, then what an instance is and how to
    load it. It names only the public files and no target: the answers are not published."""
    meta = yaml.safe_dump(hub_metadata(split, version, count, data_file), sort_keys=False)
    lines = [
        "---",
        meta.rstrip("\n"),
        "---",
        "",
        f"# inspire-build {split} ({version})",
        "",
        "Literature-search instances on open research problems, built by inspire-build by the "
        "method of the INSPIRE benchmark (Ding et al., 2026). Each instance is a research "
        "brief: a problem stated without its solution. A search agent looks for the earlier "
        "papers a solution would build on, among papers public before the instance's cutoff.",
        "",
        f"{count:,} instances, split `{hub_split(split)}`, in `{data_file}` (and `{also}`, the "
        "same rows as JSON lines):",
        "",
        "| field | type | meaning |",
        "|---|---|---|",
        *(f"| `{name}` | {kind} | {meaning} |" for name, kind, meaning in HUB_FIELDS),
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'instances = load_dataset("path/to/this/folder", split="{hub_split(split)}")',
        "```",
        "",
        "The answers are not part of this dataset and no file here names them: a benchmark "
        "whose answers are public can be looked up instead of searched for. Runs are scored by "
        "whoever holds the gold (`inspire eval`). The build's statistics and the figures of the "
        "attacks played against this public side are in the export's `dataset_card.md`.",
        "",
        f"License: {HUB_LICENSE}.",
        "",
    ]
    return "\n".join(lines)
