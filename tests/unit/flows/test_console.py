"""Prefect's console tells our errors in one line: also a DuckDB error that a signal's Cancelled
caused (a Ctrl-C that lands mid-query surfaces as ``RuntimeError: Query interrupted``, with the
Cancelled as its cause; CI once printed its traceback).

In-process flow runs use the project's Prefect: the served server when `make serve` runs one
(its runs then show in the UI, and no temporary server starts), else the project's PREFECT_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows import console
from flows.console import use_project_prefect
from inspire_build.errors import Cancelled


def raised_from(cause: BaseException | None) -> BaseException:
    try:
        try:
            if cause is not None:
                raise cause
            raise RuntimeError("Query interrupted")
        except BaseException as inner:
            if cause is None:
                raise
            raise RuntimeError("Query interrupted") from inner
    except BaseException as outer:
        return outer


def test_an_error_our_cancellation_caused_is_ours() -> None:
    assert console._ours(raised_from(Cancelled("cancelled by SIGINT")))


@pytest.mark.parametrize("error", [raised_from(None), raised_from(ValueError("x")), None])
def test_other_errors_keep_their_traceback(error: BaseException | None) -> None:
    assert not console._ours(error)


def test_an_interrupted_query_after_a_signal_is_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "_signalled", ["cancelled by SIGTERM"])
    assert console._ours(raised_from(None))


# --- in-process flow runs use the project's Prefect ---------------------------------------------


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
