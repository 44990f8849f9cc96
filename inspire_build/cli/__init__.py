"""The ``inspire`` command: a thin typer CLI, one module per family of commands.

Commands call library functions and print. Errors raised inside are translated into a one-line
message and an exit code, once, in :func:`main`: 2 for bad input, 3 for a locked warehouse, 1
for anything else the product raised on purpose.

The package never imports flows/. The commands that run the flows, ``build`` and ``audit``, live
in ``flows/commands.py`` and are found through the entry points of the group
:data:`COMMANDS_GROUP` (``pyproject.toml``); :func:`add_entry_point_commands` adds them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import typer

from inspire_build.cli.auditing import AuditCommand
from inspire_build.cli.common import app, main, paper_line, reference_line
from inspire_build.errors import InspireError

COMMANDS_GROUP = "inspire_build.commands"
# The commands flows/ provides, in the order `inspire --help` lists them (before `export`).
FLOW_COMMANDS = ("build", "audit")
# How each is registered beyond its name: `inspire audit brief` runs in this package.
_REGISTERED: dict[str, dict[str, Any]] = {
    "audit": {
        "cls": AuditCommand,
        "epilog": "`inspire audit brief --split S --instance ID --text FILE` runs the same "
        "checks on any text for one instance (see `inspire audit brief --help`).",
    }
}


def add_entry_point_commands(target: typer.Typer, found: Iterable[EntryPoint]) -> None:
    """Add each entry point's command to ``target``: the flows' commands first, in their order,
    then any other by name. A flow command that is missing or cannot be loaded still appears,
    and says why in one line when it runs."""
    by_name = {point.name: point for point in found}
    for name in [*FLOW_COMMANDS, *sorted(by_name.keys() - set(FLOW_COMMANDS))]:
        point = by_name.get(name)
        if point is None:
            _add_missing(target, name, f"no entry point {name!r} in the group {COMMANDS_GROUP}")
            continue
        try:
            command: Callable[..., None] = point.load()
        except (ImportError, AttributeError) as error:
            _add_missing(target, name, f"its entry point {point.value} does not load ({error})")
            continue
        target.command(name, **_REGISTERED.get(name, {}))(command)


def _add_missing(target: typer.Typer, name: str, why: str) -> None:
    """A stand-in for a command that is not installed: it takes any arguments and refuses."""

    def missing() -> None:
        raise InspireError(
            f"`inspire {name}` is not installed: {why}. It comes with the flows/ package: "
            "reinstall inspire-build with it (in a checkout: pip install -e .), which registers "
            "its entry points"
        )

    target.command(
        name,
        help=f"(not installed: {why})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        cls=_REGISTERED.get(name, {}).get("cls"),
    )(missing)


# Before the modules below add theirs, so that `build` and `audit` come first, as they always have.
add_entry_point_commands(app, entry_points(group=COMMANDS_GROUP))

from inspire_build.cli import (  # noqa: E402, F401  (each registers its commands on the app)
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

__all__ = ["app", "main", "paper_line", "reference_line"]
