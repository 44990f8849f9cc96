"""Pure: the dataset card's figures beside the paper's Table 5, how many briefs state a problem
of their own, instances per month, and the hub card (the public folder's README.md, with the
metadata a dataset hub reads)."""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence

import yaml

from inspire_build.review import agreement
from inspire_build.review.agreement import Agreement
from inspire_build.text import content_words

# A problem holding this share of another's words (less the words most problems hold) restates
# it. Calibrated on the sandbox (seed 1, 55 eval-window works): the works' own problem
# statements score 0.93, their field's lead sentences alone 0.00.
DISTINCT_OVERLAP, FRAME_SHARE = 0.9, 0.5


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
    briefs: Sequence[str] = (),
) -> list[str]:
    """This build's Table 5 figures next to the paper's partition of the same name, and the
    share of its ``briefs`` that state a problem of their own (:func:`distinct_problems`)."""
    paper = PAPER_TABLE5.get(split)
    own = distinct_problems([problem_statement(b) for b in briefs])
    ours = [
        f"{statistics.median(per_instance):g}" if per_instance else "-",
        f"{statistics.fmean(per_instance):.2f}" if per_instance else "-",
        _shares(tiers.get(3, 0), tiers.get(2, 0), tiers.get(1, 0)),
        f"{statistics.fmean(brief_words):.1f}" if brief_words else "-",
        f"{len(per_instance) / selected:.2f} ({len(per_instance)} of {selected})"
        if selected
        else "-",
        f"{own / len(briefs):.1%} ({own} of {len(briefs)})" if briefs else "-",
    ]
    theirs = (
        [
            f"{paper.median:g}",
            f"{paper.antecedents / paper.targets:.2f}",
            _shares(paper.t3, paper.t2, paper.t1),
            f"{paper.brief_words:.1f}",
            "not reported",
            "not reported",
        ]
        if paper
        else ["-"] * 6
    )
    names = (
        "antecedents per instance, median",
        "antecedents per instance, mean",
        "share of T3 / T2 / T1",
        "brief words, mean",
        "instances per selected target",
        "briefs stating a problem no other brief restates",
    )
    lines = [
        "## Beside the paper's Table 5",
        "",
        f"| figure | this build | paper ({split}) |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {a} | {b} |" for name, a, b in zip(names, ours, theirs, strict=True)]
    return [*lines, ""]


def problem_statement(brief: str) -> str:
    """What a brief states of its problem: its first paragraph (the brief prompt asks for the
    problem first)."""
    return brief.strip().partition("\n\n")[0]


def distinct_problems(
    problems: Sequence[str], overlap: float = DISTINCT_OVERLAP, frame: float = FRAME_SHARE
) -> int:
    """How many problem statements are their own: no other statement holds ``overlap`` or
    more of their content words. Words in more than ``frame`` of the statements (of four or
    more) are their shared frame ("current", "pipelines"...) and are not counted: with them,
    even the sandbox's targets' own abstracts score 0. Briefs of one field's problem restate
    each other, however their framing differs; a statement of frame words alone is nobody's
    own."""
    bags = [set(content_words(p)) for p in problems]
    counts = Counter(word for bag in bags for word in bag)
    shared = {w for w, n in counts.items() if n > frame * len(bags)} if len(bags) >= 4 else set()
    bags = [bag - shared for bag in bags]
    holding: dict[str, list[int]] = {}
    for j, bag in enumerate(bags):
        for word in bag:
            holding.setdefault(word, []).append(j)
    return sum(_own(i, bags, holding, overlap) for i in range(len(bags)))


def _own(
    i: int, bags: Sequence[set[str]], holding: Mapping[str, list[int]], overlap: float
) -> bool:
    """Whether no other bag holds ``overlap`` of bag ``i``'s words. One that holds that many
    holds one of its ``len - need + 1`` rarest words, so only their holders are compared (a
    version's thousands of briefs are not compared pair by pair)."""
    bag = bags[i]
    if not bag:  # a statement of frame words alone states no problem of its own
        return False
    need = math.ceil(overlap * len(bag))
    rarest = sorted(bag, key=lambda w: (len(holding[w]), w))[: len(bag) - need + 1]
    others = {j for word in rarest for j in holding[word]} - {i}
    return all(len(bag & bags[j]) < need for j in others)


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


RETRIEVAL_SCOPES = {
    "corpus": "bm25 over the warehouse's papers",
    "window": "bm25 over the papers its published cutoff's window holds",
}


def audits_line(searched: tuple[int, int] | None = None, scope: str = "corpus") -> str:
    """The leakage audits every brief passed; ``searched``: (instances whose brief the search
    identity check judged, instances). A build without a sources client does not run it.
    ``scope``: where the build's retrieval check ranked the target (RETRIEVAL_SCOPES)."""
    checks = (
        f"lexical, identity (a model names the paper), retrieval ({RETRIEVAL_SCOPES[scope]}), "
        "a blind mechanism audit (a model guesses the mechanism from the brief alone; a second "
        "call compares the guess with the abstract)"
    )
    if searched is None or not searched[0]:
        return f"- Each brief passed four audits: {checks}. The search identity check did not run."
    done, instances = searched
    some = "" if done == instances else f" ({done:,} of {instances:,} instances)"
    return (
        f"- Each brief passed five audits: {checks}, and identity by search{some} (the brief "
        "searched among the works its published cutoff allows: its target in the top k fails)."
    )


def method_section(
    readings: int | None = None, searched: tuple[int, int] | None = None, scope: str = "corpus"
) -> list[str]:
    """How the gold and the briefs were made: the rubric, tier 0, the grader's readings, the
    redaction rules and the audits."""
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
        audits_line(searched, scope),
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
