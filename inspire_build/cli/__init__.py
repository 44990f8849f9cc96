"""The ``inspire`` command: a thin typer CLI, one module per family of commands.

Commands call library functions and print. Errors raised inside are translated into a one-line
message and an exit code, once, in :func:`main`: 2 for bad input, 3 for a locked warehouse, 1
for anything else the product raised on purpose.

The package never imports flows/: ``build`` and ``audit`` (:mod:`inspire_build.cli.flow_commands`)
find the runners of their flows through entry points.
"""

from __future__ import annotations

from inspire_build.cli.common import app, main, paper_line, reference_line
from inspire_build.cli.flow_commands import FLOW_COMMANDS, FLOWS_GROUP, register

register(app)  # before the modules below add theirs: `build` and `audit` lead `inspire --help`

from inspire_build.cli import (  # noqa: E402, F401  (each registers its commands on the app)
    agents,
    building,
    cost,
    environment,
    evaluation,
    fetching,
    review,
    sandbox,
    targets,
    warehousing,
)

__all__ = ["FLOWS_GROUP", "FLOW_COMMANDS", "app", "main", "paper_line", "reference_line"]
