"""bench/_checkout.py: a bench script measures the checkout it sits in, not an installed copy
(a reviewer's sabotaged prompt in a copy of the repository was silently not measured)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_a_script_in_another_checkout_imports_that_checkouts_package(tmp_path: Path) -> None:
    (tmp_path / "bench").mkdir()
    shutil.copy(BENCH / "_checkout.py", tmp_path / "bench" / "_checkout.py")
    (tmp_path / "inspire_build").mkdir()
    (tmp_path / "inspire_build" / "__init__.py").write_text("MARK = 'the copy'\n")
    (tmp_path / "prompts").mkdir()  # mapped to inspire_build.prompts, as pyproject.toml maps it
    (tmp_path / "prompts" / "__init__.py").write_text("MARK = 'its prompts'\n")
    probe = tmp_path / "bench" / "probe.py"
    probe.write_text(
        "import _checkout\nimport inspire_build\nimport inspire_build.prompts as p\n"
        "print(inspire_build.MARK, '/', p.MARK)\n"
    )
    shown = subprocess.run(
        [sys.executable, str(probe)], capture_output=True, text=True, cwd="/", timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "the copy / its prompts"


def test_every_bench_script_imports_it_before_the_package() -> None:
    for script in sorted(BENCH.glob("*.py")):
        if script.name == "_checkout.py":
            continue
        names = [
            node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            for node in ast.parse(script.read_text()).body
            if isinstance(node, ast.Import | ast.ImportFrom)
        ]
        ours = [n for n in names if n and n.split(".")[0] in ("inspire_build", "tests", "build")]
        if not ours:
            continue
        assert "_checkout" in names, script.name
        assert names.index("_checkout") < names.index(ours[0]), script.name
