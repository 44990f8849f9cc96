"""`inspire build` and `inspire audit` live in flows/commands.py, and the CLI finds them through
the entry points of the group ``inspire_build.commands``: declared in pyproject.toml, listed first
in `inspire --help`, and, where flows/ is missing, one `error:` line instead of a traceback."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint

import typer
from typer.testing import CliRunner

from inspire_build import cli
from inspire_build.config import PROJECT_ROOT
from inspire_build.errors import InspireError


def test_pyproject_declares_each_flow_command_in_flows() -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    declared = project["entry-points"][cli.COMMANDS_GROUP]
    assert tuple(declared) == cli.FLOW_COMMANDS
    for name, value in declared.items():
        command = EntryPoint(name, value, cli.COMMANDS_GROUP).load()
        assert command.__module__ == "flows.commands" and command.__doc__, value


def test_the_app_takes_build_and_audit_from_flows_first() -> None:
    first = [(c.name, c.callback.__module__) for c in cli.app.registered_commands[:3]]
    assert first == [
        ("build", "flows.commands"),
        ("audit", "flows.commands"),
        ("export", "inspire_build.cli.building"),
    ], "stale entry points? reinstall the checkout: pip install -e '.[dev]'"


def test_a_command_whose_entry_point_is_missing_or_broken_refuses_in_one_line() -> None:
    app = typer.Typer()
    broken = EntryPoint("audit", "flows.no_such_module:audit", cli.COMMANDS_GROUP)
    cli.add_entry_point_commands(app, [broken])
    assert [c.name for c in app.registered_commands] == ["build", "audit"]
    built = CliRunner().invoke(app, ["build", "--split", "eval", "--limit", "3"])
    assert isinstance(built.exception, InspireError)
    assert "no entry point 'build' in the group inspire_build.commands" in str(built.exception)
    audited = CliRunner().invoke(app, ["audit", "eval"])
    assert isinstance(audited.exception, InspireError)
    assert "flows.no_such_module:audit does not load" in str(audited.exception)


# The package installed without flows/: its entry points name a module that is not there.
WITHOUT_FLOWS = (
    "import sys; sys.modules['flows'] = None; from inspire_build.cli import main; main()"
)


def test_without_flows_build_and_audit_say_so_in_one_line() -> None:
    for args in (["build", "--limit", "3"], ["audit", "eval"]):
        done = subprocess.run(
            [sys.executable, "-c", WITHOUT_FLOWS, *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=PROJECT_ROOT,
        )
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"error: `inspire {args[0]}` is not installed: "), line
        assert "flows/" in line and "pip install -e ." in line
