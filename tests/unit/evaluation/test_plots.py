"""evaluation/plots.py, through `inspire eval --plots`: each figure as a PNG and an SVG."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from inspire_build.evaluation import funnel


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
