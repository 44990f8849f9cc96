"""The ``inspire`` command: a thin typer CLI, one module per family of commands.

Commands call library functions and print. Errors raised inside are translated into a one-line
message and an exit code, once, in :func:`main`: 2 for bad input, 3 for a locked warehouse, 1
for anything else the product raised on purpose.
"""

from inspire_build.cli import (  # noqa: F401  (each registers its commands on the app)
    building,
    environment,
    evaluation,
    fetching,
    sandbox,
    targets,
    warehousing,
)
from inspire_build.cli.common import app, main, paper_line, reference_line

__all__ = ["app", "main", "paper_line", "reference_line"]
