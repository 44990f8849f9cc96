"""The paper's evaluation figures, each saved as PNG and SVG (matplotlib, no screen needed).

- Figure 3: the share of instances by the number of antecedents recovered in the top 10;
- Figure 4: the funnel (Exposed gain, Selected gain, Final nDCG@10) with 95% intervals;
- Figure 7: the oracle exposed-gain curve over normalised search progress.

Every figure holds every run given, one series per run named in its legend, and is titled with
what the runs were scored against (the split version ID, or the qrels file) and n, the number of
instances scored, so a figure read alone says what it measures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on servers or in CI

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from inspire_build.evaluation.score import Scores  # noqa: E402

SIZE = (6.4, 4.0)
DPI = 100
BINS = tuple(range(0, 11))  # antecedents recovered in the top 10: 0 to 10
STAGES = (
    ("exposed_gain", "Exposed gain"),
    ("selected_gain", "Selected gain"),
    ("ndcg@10", "Final nDCG@10"),
)
# Runs that share trajectories share a curve: a marker and line style each keeps both visible.
MARKERS = ("o", "s", "^", "D", "v", "P")
LINES = ("-", "--", ":", "-.")
SPREAD = 0.6  # the share of a bin or stage the runs' bars or points spread over


def title(runs: Mapping[str, Scores]) -> str:
    """What the runs were scored against and n, e.g. ``eval-0123abcd, n = 47 instances``; runs
    scored against different things (or n) are named each."""
    shown = sorted({(_against(s), len(s.per_instance)) for s in runs.values()})
    return "; ".join(f"{what}, n = {n} instances" for what, n in shown)


def _against(scores: Scores) -> str:
    if scores.version is not None:
        return scores.version
    return Path(scores.qrels_file).name if scores.qrels_file else "the given qrels"


def render(runs: Mapping[str, Scores], out: Path) -> list[Path]:
    """Every figure of ``runs`` (name -> scores) saved under ``out``: the recovered counts
    always, the funnel and oracle curve of the runs scored with trajectories."""
    if not runs:
        return []
    heading = title(runs)
    hits = {name: recovered(scores) for name, scores in runs.items()}
    made = _save(recovered_figure(hits, heading), out, "recovered_top10")
    traced = {name: scores for name, scores in runs.items() if scores.curve is not None}
    if traced:
        made += _save(funnel_figure(traced, heading), out, "funnel")
        curves = {name: scores.curve for name, scores in traced.items() if scores.curve}
        made += _save(oracle_figure(curves, heading), out, "oracle_curve")
    return made


def recovered(scores: Scores) -> list[int]:
    """Per instance, the graded antecedents in the top 10."""
    return [int(metrics["hits@10"] or 0) for metrics in scores.per_instance.values()]


def _save(figure: Figure, out: Path, name: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    for path in paths:
        figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return paths


def _offsets(count: int) -> list[float]:
    """Where each of ``count`` runs sits around its bin or stage, centred on it."""
    step = SPREAD / count
    return [(i - (count - 1) / 2) * step for i in range(count)]


def recovered_figure(hits: Mapping[str, Sequence[int]], heading: str) -> Figure:
    """Figure 3: per run (one bar series each), the percentage of instances with exactly n
    graded antecedents in the top 10."""
    figure, axes = plt.subplots(figsize=SIZE)
    for (name, counts), offset in zip(hits.items(), _offsets(len(hits)), strict=True):
        seen, total = Counter(counts), len(counts) or 1
        axes.bar(
            [b + offset for b in BINS],
            [100 * seen.get(b, 0) / total for b in BINS],
            width=SPREAD / len(hits),
            label=name,
        )
    axes.set_xlabel("graded antecedents recovered in the top 10")
    axes.set_ylabel("% of instances")
    axes.set_xticks(list(BINS))
    axes.legend(loc="upper right")
    axes.set_title(heading, fontsize="medium")
    figure.tight_layout()
    return figure


def funnel_figure(runs: Mapping[str, Scores], heading: str) -> Figure:
    """Figure 4: per run (one series each), mean Exposed gain, Selected gain and Final nDCG@10
    with their 95% bootstrap intervals."""
    figure, axes = plt.subplots(figsize=SIZE)
    for (name, scores), offset in zip(runs.items(), _offsets(len(runs)), strict=True):
        values = [scores.aggregate.get(metric) or 0.0 for metric, _ in STAGES]  # all defined
        bounds = [scores.intervals.get(m, (v, v)) for (m, _), v in zip(STAGES, values, strict=True)]
        axes.errorbar(
            [stage + offset for stage in range(len(STAGES))],
            values,
            yerr=[
                [v - low for v, (low, _) in zip(values, bounds, strict=True)],
                [high - v for v, (_, high) in zip(values, bounds, strict=True)],
            ],
            fmt="o-",
            capsize=3,
            label=name,
        )
    axes.set_xticks(range(len(STAGES)))
    axes.set_xticklabels([label for _, label in STAGES])
    axes.set_xlim(-0.5, len(STAGES) - 0.5)
    axes.set_ylim(0, 1)
    axes.set_ylabel("gain (95% bootstrap interval)")
    axes.legend(loc="best")
    axes.set_title(heading, fontsize="medium")
    figure.tight_layout()
    return figure


def oracle_figure(curves: Mapping[str, Mapping[float, float]], heading: str) -> Figure:
    """Figure 7: per run (one line each), the oracle exposed gain against normalised search
    progress."""
    figure, axes = plt.subplots(figsize=SIZE)
    for index, (name, curve) in enumerate(curves.items()):
        axes.plot(
            list(curve),
            list(curve.values()),
            marker=MARKERS[index % len(MARKERS)],
            linestyle=LINES[index % len(LINES)],
            fillstyle="none",
            label=name,
        )
    axes.set_xlabel("search progress (share of steps)")
    axes.set_ylabel("oracle exposed gain (nDCG@10)")
    axes.set_ylim(0, 1)
    axes.legend(loc="best")
    axes.set_title(heading, fontsize="medium")
    figure.tight_layout()
    return figure
