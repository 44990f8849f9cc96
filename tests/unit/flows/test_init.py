"""flows/__init__.py: what importing the flows sets for the process a deployment's run starts in."""

from __future__ import annotations

import subprocess
import sys


def test_a_process_that_imports_the_flows_collects_less_and_the_package_alone_does_not() -> None:
    show = "import gc, {module}; print(gc.get_threshold())"
    ran = {
        module: subprocess.run(
            [sys.executable, "-c", show.format(module=module)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for module in ("flows", "inspire_build.pipeline")
    }
    assert ran["flows"] == "(100000, 50, 100)"
    # a program that imports the package keeps its own collector (here Python's default)
    assert ran["inspire_build.pipeline"] == "(700, 10, 10)"
