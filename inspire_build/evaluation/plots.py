"""The paper's evaluation figures, each saved as PNG and SVG (matplotlib, no screen needed).

- Figure 3: the share of instances by the number of antecedents recovered in the top 10;
- Figure 4: the funnel (Exposed gain, Selected gain, Final nDCG@10) with 95% intervals;
- Figure 7: the oracle exposed-gain curve over normalised search progress.
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


def _save(figure: Figure, out: Path, name: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    for path in paths:
        figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return paths


def recovered_histogram(hits: Sequence[int], out: Path) -> list[Path]:
    """Figure 3: percentage of instances with exactly n antecedents in the top 10."""
    counts = Counter(hits)
    total = len(hits) or 1
    bins = list(range(0, 11))
    figure, axes = plt.subplots(figsize=SIZE)
    axes.bar(bins, [100 * counts.get(b, 0) / total for b in bins], color="#4c72b0")
    axes.set_xlabel("graded antecedents recovered in the top 10")
    axes.set_ylabel("% of instances")
    axes.set_xticks(bins)
    figure.tight_layout()
    return _save(figure, out, "recovered_top10")


def funnel_chart(runs: Mapping[str, Scores], out: Path) -> list[Path]:
    """Figure 4: per run, mean Exposed gain, Selected gain and Final nDCG@10 with intervals."""
    stages = (
        ("exposed_gain", "Exposed gain"),
        ("selected_gain", "Selected gain"),
        ("ndcg@10", "Final nDCG@10"),
    )
    figure, axes = plt.subplots(figsize=SIZE)
    for row, scores in enumerate(runs.values()):
        for offset, (metric, label) in enumerate(stages):
            value = scores.aggregate.get(metric, 0.0)
            low, high = scores.intervals.get(metric, (value, value))
            axes.errorbar(
                value,
                row + (offset - 1) * 0.2,
                xerr=[[value - low], [high - value]],
                fmt="o",
                color=f"C{offset}",
                label=label if row == 0 else None,
            )
    axes.set_yticks(range(len(runs)))
    axes.set_yticklabels(list(runs))
    axes.set_ylim(-0.6, len(runs) - 0.4)
    axes.set_xlim(0, 1)
    axes.set_xlabel("gain (95% bootstrap interval)")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, 1.15), ncol=3, frameon=False)
    figure.tight_layout()
    return _save(figure, out, "funnel")


def oracle_curve(curves: Mapping[str, Mapping[float, float]], out: Path) -> list[Path]:
    """Figure 7: oracle exposed gain against normalised search progress, per run."""
    figure, axes = plt.subplots(figsize=SIZE)
    for name, curve in curves.items():
        axes.plot(list(curve), list(curve.values()), marker="o", label=name)
    axes.set_xlabel("search progress (share of steps)")
    axes.set_ylabel("oracle exposed gain (nDCG@10)")
    axes.set_ylim(0, 1)
    axes.legend(loc="lower right")
    figure.tight_layout()
    return _save(figure, out, "oracle_curve")
