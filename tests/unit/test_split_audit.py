"""The audit of a split version: the curator agreement over the version's review sample is
printed after the boundary's lines, and the verdict does not read it; the model that built the
version judges it. The leakage audit and the attacks are stubbed (their own tests run them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import duckdb
import pytest

from inspire_build import boundary, boundary_store, gold, split_audit, warehouse
from inspire_build.config import Settings
from inspire_build.review import sample
from inspire_build.tables import windows
from tests.unit.review.conftest import VERSION, plant


@dataclasses.dataclass(frozen=True)
class _Attacks:
    ok: bool

    @property
    def judgement(self) -> boundary.Judgement:
        if self.ok:
            return boundary.Judgement(boundary.Verdict.PASSED, ())
        return boundary.Judgement(boundary.Verdict.FAILED, ("planted",))

    def lines(self) -> list[str]:
        return ["boundary held" if self.ok else "boundary FAILED"]


def _audit(monkeypatch: pytest.MonkeyPatch, path: Path, boundary_ok: bool) -> list[str]:
    report = gold.AuditReport(VERSION, 2, {}, 0, [])
    monkeypatch.setattr(gold, "audit_version", lambda *args: report)
    monkeypatch.setattr(boundary_store, "attack_version", lambda *args: _Attacks(boundary_ok))
    said: list[str] = []
    settings = Settings(warehouse=path, llm_backend="rules")  # type: ignore[arg-type]
    done = split_audit.audit(settings, "eval", None, say=said.append)
    assert done.passed() is True  # else AuditFailed
    assert said == list(done.lines) and done.markdown().startswith(f"# Audit of {VERSION}\n")
    return said


def test_the_audit_prints_the_agreement_and_decides_without_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "w.duckdb"
    with warehouse.open_warehouse(path) as con:
        plant(con)
    lines = _audit(monkeypatch, path, boundary_ok=True)
    assert lines[0] == f"audit of {VERSION}: passed"  # the verdict first, then who judged
    assert lines[1].startswith("judged by rules ") and lines[1].endswith(
        "(this shell's: the version records none)"
    )
    assert (
        lines[-1] == f"curator agreement of {VERSION}: no review sample (`inspire review sample`)"
    )
    with warehouse.open_warehouse(path) as con:
        sample.draw_sample(con, "eval", VERSION, 2, seed=0)
    lines = _audit(monkeypatch, path, boundary_ok=True)  # nothing reviewed: it passes all the same
    at = lines.index("boundary held")
    assert lines[at + 1].startswith(f"curator agreement over the sample of {VERSION} (seed 0, 2 ")
    assert lines[at + 2] == "  no sampled instance reviewed yet (`inspire review serve`)"
    with pytest.raises(split_audit.AuditFailed):
        _audit(monkeypatch, path, boundary_ok=False)
    with warehouse.open_warehouse(path) as con:  # recorded for `inspire export`
        assert windows.latest_verdict(con, VERSION)["reasons"] == "planted"  # type: ignore[index]


def _built_by_sandbox_gpt(con: duckdb.DuckDBPyConnection) -> None:
    """The planted version, recorded as built by the openai backend's sandbox-gpt."""
    plant(con)
    con.execute(
        "UPDATE split_versions SET models = ? WHERE version_id = ?",
        ['{"backend": "openai", "llm": "sandbox-gpt"}', VERSION],
    )


def test_the_audit_judges_with_the_model_that_built_the_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "w.duckdb"
    with warehouse.open_warehouse(path) as con:
        _built_by_sandbox_gpt(con)
    built: list[str] = []
    real = gold.make_llm
    monkeypatch.setattr(
        gold,
        "make_llm",
        lambda settings, con: built.append(settings.llm_backend) or real(settings, con),
    )
    monkeypatch.setenv("INSPIRE_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # where it is served:
    monkeypatch.setenv("INSPIRE_LLM_API_KEY", "sk-test")  # the shell's, never recorded
    lines = _audit(monkeypatch, path, boundary_ok=True)  # the shell says rules
    assert built == ["openai"]
    assert lines[1] == "judged by openai sandbox-gpt (the build's)"


def test_a_shell_naming_another_model_is_refused_unless_asked_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from inspire_build.config import get_settings
    from inspire_build.errors import InputError

    path = tmp_path / "w.duckdb"
    with warehouse.open_warehouse(path) as con:
        _built_by_sandbox_gpt(con)
        monkeypatch.setenv("INSPIRE_LLM_BACKEND", "rules")
        get_settings.cache_clear()
        shell = Settings(warehouse=path, llm_backend="rules")  # type: ignore[arg-type]
        with pytest.raises(InputError, match="built with openai sandbox-gpt.*INSPIRE_LLM_BACKEND"):
            split_audit.judging(con, shell, VERSION, (None, None))
        chosen, whose = split_audit.judging(con, shell, VERSION, ("rules", None))
        assert (chosen.llm_backend, whose) == ("rules", "given on the command line")
        with pytest.raises(InputError, match="--llm-backend"):
            split_audit.judging(con, shell, VERSION, ("bogus", None))
        monkeypatch.delenv("INSPIRE_LLM_BACKEND")
        get_settings.cache_clear()
        chosen, whose = split_audit.judging(con, shell, VERSION, (None, None))
        assert (chosen.llm_backend, chosen.llm_model, whose) == (
            "openai",
            "sandbox-gpt",
            "the build's",
        )
    get_settings.cache_clear()


def test_only_the_splits_audited_are_checked_for_their_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`inspire audit eval` from a shell naming eval's model is not refused because train was
    built by another one; `inspire audit train` from it is."""
    from inspire_build.config import get_settings
    from inspire_build.errors import InputError

    path = tmp_path / "w.duckdb"
    with warehouse.open_warehouse(path) as con:
        _built_by_sandbox_gpt(con)
        con.execute(
            "INSERT INTO split_versions SELECT * REPLACE ('train-planted' AS version_id, "
            '\'train\' AS split, \'{"backend": "rules", "llm": "rules-v1"}\' AS models) '
            "FROM split_versions WHERE version_id = ?",
            [VERSION],
        )
    monkeypatch.setenv("INSPIRE_LLM_BACKEND", "openai")
    monkeypatch.setenv("INSPIRE_LLM_MODEL", "sandbox-gpt")
    get_settings.cache_clear()
    shell = Settings(warehouse=path, llm_backend="openai", llm_model="sandbox-gpt")  # type: ignore[arg-type]
    assert split_audit.to_audit(shell, ["eval"], (None, None)) == [("eval", VERSION)]
    with pytest.raises(InputError, match="built with rules"):
        split_audit.to_audit(shell, ["train"], (None, None))
    get_settings.cache_clear()
