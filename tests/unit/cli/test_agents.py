"""`inspire agent run`'s LLM options: refused before any work where they do not apply, and a key
variable that is not set named, never valued."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from inspire_build.cli import app
from inspire_build.config import Settings
from inspire_build.env.llm_run import agent_settings
from inspire_build.errors import InputError


def _run(tmp_path: Path, *options: str) -> tuple[int, str]:
    """The exit code and message of a refused run (the CLI's edge turns an InputError into
    them)."""
    files = ["--out", str(tmp_path / "r.jsonl"), "--trajectories", str(tmp_path / "t.jsonl")]
    where = ["--warehouse", str(tmp_path / "w.duckdb")]
    result = CliRunner().invoke(app, ["agent", "run", *options, *files, *where])
    assert isinstance(result.exception, InputError), result.output
    return result.exception.exit_code, str(result.exception)


@pytest.mark.parametrize(
    "option", [["--model", "m"], ["--concurrency", "4"], ["--instance-timeout", "5"]]
)
def test_llm_options_with_another_agent_are_refused(tmp_path: Path, option: list[str]) -> None:
    code, output = _run(tmp_path, "--agent", "bm25-brief", *option)
    assert code == 2 and "apply to --agent llm only" in output
    assert not (tmp_path / "w.duckdb").exists() and not (tmp_path / "r.jsonl").exists()


def test_a_key_variable_that_is_not_set_is_named(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "--agent", "llm", "--api-key-env", "NO_SUCH_KEY_VARIABLE")
    assert code == 2 and "NO_SUCH_KEY_VARIABLE is not set" in output


def test_a_policy_is_refused_for_the_llm_agent(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "--agent", "llm", "--policy", str(tmp_path / "p.json"))
    assert code == 2 and "--policy applies to the multi-query agent only" in output


def test_the_agents_settings_take_the_commands_model_endpoint_and_key_over_the_environments() -> (
    None
):
    settings = Settings(llm_model="env-model", llm_base_url="http://env/v1")
    kept = agent_settings(settings, None, None, None)
    assert (kept.llm_backend, kept.llm_model, kept.llm_base_url) == (
        "openai",
        "env-model",
        "http://env/v1",
    )
    assert kept.llm_api_key is None
    chosen = agent_settings(settings, "m2", "http://cli/v1", "sk-test-key")
    assert (chosen.llm_model, chosen.llm_base_url) == ("m2", "http://cli/v1")
    assert chosen.llm_api_key is not None
    assert chosen.llm_api_key.get_secret_value() == "sk-test-key"
    assert "sk-test-key" not in repr(chosen)


def test_without_out_and_trajectories_a_run_gets_new_files_under_run_agents() -> None:
    from inspire_build.cli.agents import _run_files

    first = _run_files("llm", "eval", None, None)
    second = _run_files("llm", "eval", None, None)
    assert first[0].parent == Path("run", "agents") and first[0].name.startswith("llm-eval-")
    assert str(first[1]) == str(first[0]).removesuffix(".jsonl") + ".trajectories.jsonl"
    assert first != second  # a rerun keeps the earlier run's files
    given = (Path("a.jsonl"), Path("b.jsonl"))
    assert _run_files("llm", "eval", *given) == given


def test_out_without_trajectories_is_refused(tmp_path: Path) -> None:
    asked = ["agent", "run", "--agent", "bm25-brief", "--out", str(tmp_path / "r.jsonl")]
    result = CliRunner().invoke(app, [*asked, "--warehouse", str(tmp_path / "w.duckdb")])
    assert isinstance(result.exception, InputError), result.output
    assert "both --out and --trajectories" in str(result.exception)
    assert not (tmp_path / "w.duckdb").exists()
