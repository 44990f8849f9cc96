"""evaluation/plots.py: each figure as a PNG and an SVG through `inspire eval --plots`, and the
figures of several runs: one series per run, named in the legend, and a title naming the
version and n."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure

from inspire_build.evaluation import funnel, plots
from inspire_build.evaluation.score import Scores, score


def test_plots_render_as_png_and_svg(tmp_path: Path) -> None:
    qrels = {f"i{n}": {f"d{n}": 3, f"e{n}": 2, f"f{n}": 1} for n in range(20)}
    run = {f"i{n}": [f"d{n}", "x", f"e{n}"][: n % 4] for n in range(20)}
    paths = {i: funnel.Trajectory(((f"f{i[1:]}",), tuple(r))) for i, r in run.items()}
    (tmp_path / "q.trec").write_text(
        "".join(f"{i} 0 {d} {t}\n" for i, ds in qrels.items() for d, t in ds.items())
    )
    (tmp_path / "r.jsonl").write_text(
        "".join(json.dumps({"instance_id": i, "ranking": r}) + "\n" for i, r in run.items())
    )
    (tmp_path / "t.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "instance_id": i,
                    "steps": [{"tool": "search", "exposed": list(step)} for step in p.steps],
                }
            )
            + "\n"
            for i, p in paths.items()
        )
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspire_build",
            "eval",
            "--qrels",
            str(tmp_path / "q.trec"),
            "--run",
            str(tmp_path / "r.jsonl"),
            "--trajectories",
            str(tmp_path / "t.jsonl"),
            "--plots",
            str(tmp_path / "plots"),
            "--bootstrap",
            "50",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "rank_quality" in result.stdout and "oracle exposed gain" in result.stdout
    for name in ("recovered_top10", "funnel", "oracle_curve"):
        png, svg = tmp_path / "plots" / f"{name}.png", tmp_path / "plots" / f"{name}.svg"
        assert png.stat().st_size > 5000 and svg.stat().st_size > 5000, name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = (
            int.from_bytes(png.read_bytes()[16:20]),
            int.from_bytes(png.read_bytes()[20:24]),
        )
        assert (width, height) == (640, 400)  # 6.4 x 4.0 inches at 100 dpi
        # titled with what was scored against and n; the run named in the legend (the text of
        # an SVG is drawn as paths, each with its text in a comment)
        text = svg.read_text(encoding="utf-8")
        assert "<!-- q.trec, n = 20 instances -->" in text and "<!-- r -->" in text, name


QRELS = {f"i{n}": {f"d{n}": 3, f"e{n}": 2, f"f{n}": 1} for n in range(6)}
NAMES = ("bm25-brief", "multi-query", "reversed")


def _runs() -> dict[str, Scores]:
    """Three runs that differ: all three antecedents, one, and none but one instance's."""
    rankings = {
        "bm25-brief": {i: [f"d{i[1:]}", f"e{i[1:]}", f"f{i[1:]}"] for i in QRELS},
        "multi-query": {i: ["x", f"e{i[1:]}"] for i in QRELS},
        "reversed": {"i0": ["f0"]},
    }
    scored = {}
    for name, run in rankings.items():
        paths = {i: funnel.Trajectory((("x",), tuple(r))) for i, r in run.items()}
        found = score(QRELS, run, paths, samples=50)
        scored[name] = dataclasses.replace(found, version="eval-0123abcd")
    return scored


def _legend(figure: Figure) -> list[str]:
    legend = figure.axes[0].get_legend()
    assert legend is not None
    return [text.get_text() for text in legend.get_texts()]


def _title(figure: Figure) -> str:
    return figure.axes[0].get_title()


def test_the_title_names_the_version_and_n() -> None:
    runs = _runs()
    assert plots.title(runs) == "eval-0123abcd, n = 6 instances"
    other = {**runs, "old": dataclasses.replace(runs["reversed"], version="eval-9")}
    assert plots.title(other) == "eval-0123abcd, n = 6 instances; eval-9, n = 6 instances"


def test_recovered_counts_hold_one_bar_series_per_run() -> None:
    runs = _runs()
    hits = {name: plots.recovered(s) for name, s in runs.items()}
    figure = plots.recovered_figure(hits, plots.title(runs))
    bars = [c for c in figure.axes[0].containers if isinstance(c, BarContainer)]
    assert len(bars) == 3 and all(len(b) == len(plots.BINS) for b in bars)
    assert _legend(figure) == list(NAMES)
    assert "eval-0123abcd" in _title(figure) and "n = 6" in _title(figure)
    # bm25-brief recovers all 3 in every instance; "reversed" 1 in i0 and 0 in the five others
    heights = {name: [p.get_height() for p in b] for name, b in zip(NAMES, bars, strict=True)}
    assert heights["bm25-brief"][3] == pytest.approx(100.0)
    assert heights["reversed"][0] == pytest.approx(500 / 6)
    assert heights["reversed"][1] == pytest.approx(100 / 6)


def test_the_funnel_holds_one_series_per_run_with_its_means() -> None:
    runs = _runs()
    figure = plots.funnel_figure(runs, plots.title(runs))
    series = [c for c in figure.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert len(series) == 3 and _legend(figure) == list(NAMES)
    for name, container in zip(NAMES, series, strict=True):
        line = container.lines[0]
        assert line is not None
        expected = [runs[name].aggregate[m] for m, _ in plots.STAGES]
        assert np.asarray(line.get_ydata()).tolist() == pytest.approx(expected)
    assert _title(figure) == "eval-0123abcd, n = 6 instances"


def test_the_oracle_curve_holds_one_line_per_run() -> None:
    runs = _runs()
    curves = {name: s.curve for name, s in runs.items() if s.curve}
    figure = plots.oracle_figure(curves, plots.title(runs))
    lines = figure.axes[0].get_lines()
    assert [line.get_label() for line in lines] == list(NAMES)
    assert _legend(figure) == list(NAMES)
    assert np.asarray(lines[0].get_ydata()).tolist() == pytest.approx(
        list(curves["bm25-brief"].values())
    )
    assert "n = 6" in _title(figure)


def test_render_saves_every_figure_as_a_png_that_reads_back(tmp_path: Path) -> None:
    made = plots.render(_runs(), tmp_path)
    assert sorted(p.name for p in made) == sorted(
        f"{n}.{e}" for n in ("recovered_top10", "funnel", "oracle_curve") for e in ("png", "svg")
    )
    for path in made:
        if path.suffix == ".png":
            assert matplotlib.image.imread(path).shape[:2] == (400, 640)


def test_runs_without_trajectories_get_only_the_recovered_counts(tmp_path: Path) -> None:
    bare = {name: dataclasses.replace(s, curve=None) for name, s in _runs().items()}
    made = plots.render(bare, tmp_path)
    assert [p.name for p in made] == ["recovered_top10.png", "recovered_top10.svg"]
