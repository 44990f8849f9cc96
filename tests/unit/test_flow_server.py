"""In-process flow runs use the project's Prefect: the served server when `make serve` runs one
(its runs then show in the UI, and no temporary server starts), else the project's PREFECT_HOME;
a temporary server only where no server is set."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from inspire_build import flow_server
from inspire_build.errors import InspireError
from inspire_build.flow_server import use_project_prefect

URL = "http://127.0.0.1:4311/api"


def served(root: Path) -> None:
    (root / "run").mkdir()
    text = f"export PREFECT_HOME={root}/.prefect\nexport PREFECT_API_URL={URL}\n"
    (root / "run" / "prefect.env").write_text(text)


def test_a_served_server_that_answers_is_used(tmp_path: Path) -> None:
    served(tmp_path)
    environ: dict[str, str] = {}
    assert use_project_prefect(tmp_path, environ, healthy=lambda url: url == URL) == URL
    assert environ == {"PREFECT_API_URL": URL, "PREFECT_HOME": f"{tmp_path}/.prefect"}


def test_a_stale_env_file_falls_back_to_the_projects_home(tmp_path: Path) -> None:
    served(tmp_path)
    environ: dict[str, str] = {}
    assert use_project_prefect(tmp_path, environ, healthy=lambda _: False) is None
    assert environ == {"PREFECT_HOME": str(tmp_path / ".prefect")}


def test_variables_already_set_win(tmp_path: Path) -> None:
    served(tmp_path)
    environ = {"PREFECT_API_URL": "http://elsewhere/api"}
    assert use_project_prefect(tmp_path, environ, healthy=lambda _: True) == "http://elsewhere/api"
    assert environ == {"PREFECT_API_URL": "http://elsewhere/api"}
    environ = {"PREFECT_HOME": "/mine"}
    assert use_project_prefect(tmp_path / "nowhere", environ) is None
    assert environ == {"PREFECT_HOME": "/mine"}


def test_a_temporary_server_starts_only_where_none_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(port: int) -> tuple[list[str], dict[str, str]]:
        raise AssertionError("no server should start")

    assert flow_server.temporary_server({"PREFECT_API_URL": URL}, never) is None
    # a server that exits at once: refused in one line, naming its port
    monkeypatch.setattr(flow_server, "STARTUP_S", 30)
    environ: dict[str, str] = {}
    with pytest.raises(InspireError, match="temporary server did not start on port"):
        flow_server.temporary_server(environ, lambda port: ([sys.executable, "-c", ""], {}))
    assert "PREFECT_API_URL" not in environ
