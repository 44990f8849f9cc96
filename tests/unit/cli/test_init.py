"""`inspire build` and `inspire audit` run flows that the package never imports: each calls the
runner flows/ declares in the entry points of the group ``inspire_build.flows`` (pyproject.toml).
They lead `inspire --help`, and where flows/ is missing each says so in one `error:` line
instead of a traceback."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint

import pytest

from inspire_build import cli
from inspire_build.cli import flow_commands
from inspire_build.config import PROJECT_ROOT
from inspire_build.errors import InspireError


def test_pyproject_declares_a_runner_in_flows_for_each_flow_command() -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    declared = project["entry-points"][cli.FLOWS_GROUP]
    assert tuple(sorted(declared)) == tuple(sorted(cli.FLOW_COMMANDS))
    for name, value in declared.items():
        runner = EntryPoint(name, value, cli.FLOWS_GROUP).load()
        assert runner.__module__.startswith("flows.") and runner.__doc__, value
        assert flow_commands.flow_runner(name) is runner, "stale entry points? pip install -e ."


def test_build_and_audit_lead_the_commands() -> None:
    first = [c.name for c in cli.app.registered_commands[:3]]
    assert first == ["build", "audit", "export"]


def test_a_runner_missing_or_broken_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = EntryPoint("audit", "flows.no_such_module:audit", cli.FLOWS_GROUP)
    monkeypatch.setattr(flow_commands, "entry_points", lambda group: [broken])
    with pytest.raises(InspireError, match="no entry point 'build' in the group"):
        flow_commands.flow_runner("build")
    with pytest.raises(InspireError, match="flows.no_such_module:audit does not load"):
        flow_commands.flow_runner("audit")


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
