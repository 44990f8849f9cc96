"""The CLI's refusals: unknown splits and versions, `inspire audit` with one split built, a corrupt
or locked warehouse, a missing warehouse path, and bad paths that used to end in a traceback.

Each is one `error:` line and an exit code (cli/common.py's ``main`` tells each error once),
checked on a warehouse seeded with rows directly (``test_exports.build``: one eval version of two
instances), never a sandbox build.

And the app as a whole: every command has help text, every boolean option is a plain flag,
``--version``, and an invalid configuration as one line.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import typer.main
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from inspire_build import cli, splits, warehouse
from inspire_build.cli import app
from inspire_build.config import get_settings
from inspire_build.errors import (
    InputError,
    WarehouseCorruptError,
    WarehouseError,
    WarehouseLockedError,
)
from tests.conftest import run_inspire
from tests.unit.test_exports import VERSION, Built, build


def inspire(warehouse_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "INSPIRE_WAREHOUSE": str(warehouse_path)}
    environment = {k: v for k, v in environment.items() if not k.startswith("PREFECT_")}
    return run_inspire(*args, env=environment, timeout=120)


def one_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    """The single `error:` line of a refused command, after checking its exit code."""
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


@pytest.fixture
def built(tmp_path: Path) -> Built:
    return build(tmp_path)


@pytest.fixture
def run_file(tmp_path: Path, built: Built) -> Path:
    path = tmp_path / "run.jsonl"
    lines = [{"instance_id": i, "ranking": ["arxiv:2301.00001"]} for i in built.ids.values()]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


# --- 1. split names and versions ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["audit", "evl"],
        ["eval", "--split", "evl", "--run", "RUN"],
        ["export", "--split", "evl", "--out", "OUT"],
        ["build", "--split", "evl"],
        [
            "agent",
            "run",
            "--agent",
            "bm25-brief",
            "--out",
            "o",
            "--trajectories",
            "t",
            "--split",
            "evl",
        ],
    ],  # fmt: skip
    ids=lambda a: " ".join(a[:2]),
)
def test_an_unknown_split_names_the_configured_ones_before_prefect_starts(
    tmp_path: Path, built: Built, run_file: Path, args: list[str]
) -> None:
    given = [str(run_file) if a == "RUN" else str(tmp_path / "out") if a == "OUT" else a
             for a in args]  # fmt: skip
    result = inspire(built.path, *given)
    # One line and nothing else: no Prefect server started, so no Prefect log line either.
    assert result.stderr.strip().splitlines() == [
        "error: unknown split 'evl'; known splits: train, eval"
    ]
    assert one_error(result, 2)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "--split", "eval", "--version", "eval-nope", "--run", "RUN"],
        ["export", "--split", "eval", "--version", "eval-nope", "--out", "OUT"],
        ["env", "audit", "--version", "eval-nope"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_an_unknown_version_names_the_known_ones(
    tmp_path: Path, built: Built, run_file: Path, args: list[str]
) -> None:
    given = [str(run_file) if a == "RUN" else str(tmp_path / "out") if a == "OUT" else a
             for a in args]  # fmt: skip
    result = inspire(built.path, *given)
    assert one_error(result, 2) == f"error: unknown version 'eval-nope'; known versions: {VERSION}"
    assert not (tmp_path / "out").exists()


def test_check_version_on_an_empty_warehouse(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(InputError, match="unknown version 'x'; the warehouse has none yet"):
        splits.check_version(con, "x")


# --- 2. `inspire audit` with one split built ----------------------------------------------------


@pytest.fixture
def audited(monkeypatch: pytest.MonkeyPatch, built: Built) -> Iterator[list[tuple[str, str]]]:
    """The splits and versions `audit` runs the flow on; the flow run is stubbed (it passes)."""
    import flows.audit

    calls: list[tuple[str, str]] = []

    def audited(split: str, version: str, warehouse_path: str, given: object) -> bool:
        assert Path(warehouse_path).exists() and given == (None, None)
        calls.append((split, str(version)))
        return True

    monkeypatch.setattr(flows.audit, "_audited", audited)
    monkeypatch.setenv("INSPIRE_WAREHOUSE", str(built.path))
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # no temporary server
    yield calls


def test_audit_with_one_split_built_audits_it_and_names_the_missing_one(
    audited: list[tuple[str, str]],
) -> None:
    result = CliRunner().invoke(cli.app, ["audit"])
    assert result.exit_code == 0, result.output
    assert audited == [("eval", VERSION)]
    assert "not audited: split 'train' has no version yet" in result.output.splitlines()


def test_audit_of_a_named_split_without_a_version_is_refused(
    audited: list[tuple[str, str]],
) -> None:
    import flows.audit

    with pytest.raises(InputError, match="split 'train' has no version yet"):
        flows.audit.main(["train"])
    assert audited == []


def test_audit_of_a_warehouse_without_versions_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, audited: list[tuple[str, str]]
) -> None:
    import flows.audit

    empty = tmp_path / "empty.duckdb"
    warehouse.connect(empty).close()
    monkeypatch.setenv("INSPIRE_WAREHOUSE", str(empty))
    get_settings.cache_clear()
    with pytest.raises(InputError, match="no split has a version yet"):
        flows.audit.main([])
    monkeypatch.setenv("INSPIRE_WAREHOUSE", str(tmp_path / "typo.duckdb"))
    get_settings.cache_clear()
    with pytest.raises(WarehouseError, match="no warehouse at"):
        flows.audit.main([])
    assert audited == [] and not (tmp_path / "typo.duckdb").exists()


@pytest.mark.parametrize("before", [True, False])
def test_audit_audits_the_warehouse_named_before_or_after_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, built: Built, before: bool
) -> None:
    import flows.audit

    seen: list[str | None] = []

    def audited(split: str, version: str, warehouse_path: str, given: object) -> bool:
        seen.append(warehouse_path)
        return False  # a failing audit must reach the exit code

    monkeypatch.setattr(flows.audit, "_audited", audited)
    monkeypatch.setenv("INSPIRE_WAREHOUSE", str(tmp_path / "not-this.duckdb"))
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # no temporary server
    get_settings.cache_clear()
    given = ["--warehouse", str(built.path)]
    args = [*given, "audit", "eval"] if before else ["audit", "eval", *given]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 1, result.output
    assert seen == [str(built.path)] and not (tmp_path / "not-this.duckdb").exists()


@pytest.mark.parametrize("before", [True, False])
def test_build_writes_into_the_warehouse_named_before_or_after_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, before: bool
) -> None:
    import flows.build_split

    asked: list[dict[str, object]] = []

    class Completed:  # the flow run's State, as a call with return_state=True gives it
        def is_cancelled(self) -> bool:
            return False

        def result(self) -> dict[str, object]:
            return {"version_id": "eval-x", "counts": {}}

    def build_split(**kwargs: object) -> Completed:
        asked.append(kwargs)
        return Completed()

    monkeypatch.setattr(flows.build_split, "build_split", build_split)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # no temporary server
    monkeypatch.setenv("INSPIRE_WAREHOUSE", str(tmp_path / "not-this.duckdb"))
    monkeypatch.setenv("INSPIRE_SOURCE_MODE", "replay")
    get_settings.cache_clear()
    given = ["--warehouse", str(tmp_path / "a.duckdb")]
    args = [*given, "build", "--limit", "2"] if before else ["build", "--limit", "2", *given]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    path = str(tmp_path / "a.duckdb")
    expected = {"split": "eval", "limit": 2, "label": None, "warehouse_path": path}
    unset = {"instances": None, "runner": None, "dask_address": None, "apply_reviews": False}
    unset["llm_budget_usd"] = None
    assert asked == [{**expected, **unset, "return_state": True}]


def test_the_flows_take_their_warehouse_over_the_setting(tmp_path: Path) -> None:
    import flows.audit
    import flows.build_split

    chosen = tmp_path / "chosen.duckdb"
    built = get_settings().overridden("eval", limit=3, warehouse=str(chosen))
    assert built.warehouse == chosen and built.split("eval").limit == 3
    assert flows.audit._settings(str(chosen)).warehouse == chosen
    assert flows.audit._settings(None).warehouse == get_settings().warehouse


# --- 3. a corrupt warehouse is not a locked one -------------------------------------------------


def _corrupt(tmp_path: Path) -> Path:
    """A real warehouse with every byte after DuckDB's 12 kB of headers flipped: the first block
    read fails its checksum ("... in block at location ...", which holds "lock")."""
    path = tmp_path / "corrupt.duckdb"
    con = warehouse.connect(path)
    warehouse.migrate(con)
    con.close()
    data = bytearray(path.read_bytes())
    data[12288:] = bytes(b ^ 0xFF for b in data[12288:])
    path.write_bytes(bytes(data))
    return path


def test_a_checksum_error_is_corrupt_with_exit_1(tmp_path: Path) -> None:
    path = _corrupt(tmp_path)
    line = one_error(inspire(path, "warehouse", "status"), 1)
    assert f"the warehouse {path} is corrupt" in line and "checksum" in line
    assert "in use by another process" not in line


def test_garbage_bytes_are_corrupt_with_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "garbage.duckdb"
    path.write_bytes(bytes(range(256)) * 64)
    line = one_error(inspire(path, "snapshot", "stats"), 1)
    assert f"the warehouse {path} is corrupt" in line


def test_corruption_found_mid_command_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], built: Built
) -> None:
    from inspire_build import snapshot

    def damaged(con: duckdb.DuckDBPyConnection) -> None:
        raise duckdb.IOException(
            "IO Error: Corrupt database file: computed checksum 1 does not match stored "
            "checksum 2 in block at location 2109440"
        )

    monkeypatch.setattr(snapshot, "stats", damaged)
    monkeypatch.setattr(warehouse, "hide_pandas", lambda: None)  # this process may need it
    monkeypatch.setattr(
        sys, "argv", ["inspire", "--warehouse", str(built.path), "snapshot", "stats"]
    )
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 1
    assert capsys.readouterr().err.startswith("error: the warehouse is corrupt")


def test_the_process_collects_less_skips_the_last_collection_and_hides_pandas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registered: list[object] = []
    monkeypatch.setattr(atexit, "register", registered.append)
    monkeypatch.setattr(gc, "set_threshold", lambda *given: registered.append(given))
    monkeypatch.setattr(warehouse, "hide_pandas", lambda: registered.append("hide_pandas"))
    monkeypatch.setattr(sys, "argv", ["inspire", "--help"])
    with pytest.raises(SystemExit):
        cli.main()
    # the first exit handler registered runs last; the collector runs every 100,000
    # allocations, not 700; then DuckDB is kept off pandas (0.6 CPU-s)
    assert registered == [gc.freeze, (100_000, 50, 100), "hide_pandas"]


def test_translate_tells_a_lock_from_a_block() -> None:
    locked = duckdb.IOException(
        'IO Error: Could not set lock on file "w.duckdb": Conflicting lock is held in python '
        "(PID 1). See also https://duckdb.org/docs/stable/connect/concurrency"
    )
    corrupt = duckdb.IOException(
        "IO Error: Corrupt database file: computed checksum 1 does not match stored checksum 2 "
        "in block at location 12288"
    )
    assert isinstance(warehouse.translate(locked), WarehouseLockedError)
    assert isinstance(warehouse.translate(corrupt), WarehouseCorruptError)
    assert warehouse.translate(duckdb.IOException("IO Error: disk quota exceeded")) is None


def test_a_warehouse_locked_by_another_process_is_exit_3(built: Built) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, duckdb
                con = duckdb.connect({str(built.path)!r})
                print("locked", flush=True)
                sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        line = one_error(inspire(built.path, "warehouse", "status"), 3)
        assert f"is in use by process {holder.pid} (python" in line and "corrupt" not in line
    finally:
        holder.communicate("")


# --- 4. bad paths: one line, never a traceback --------------------------------------------------


def test_export_out_is_an_existing_file(tmp_path: Path, built: Built) -> None:
    target = tmp_path / "taken"
    target.write_text("mine\n", encoding="utf-8")
    result = inspire(built.path, "export", "--force", "--split", "eval", "--out", str(target))
    assert one_error(result, 2) == f"error: --out {target} is a file; give a folder"
    assert target.read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_export_out_cannot_be_written(tmp_path: Path, built: Built, where: str) -> None:
    if where == "proc" and not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    (tmp_path / "file").write_text("", encoding="utf-8")
    target = tmp_path / "file" / "export" if where == "under-a-file" else Path("/proc/inspire-x")
    result = inspire(built.path, "export", "--force", "--split", "eval", "--out", str(target))
    assert str(target) in one_error(result, 2)


def test_eval_plots_is_an_existing_file(tmp_path: Path, built: Built, run_file: Path) -> None:
    plots = tmp_path / "plots.png"
    plots.write_bytes(b"not a folder")
    result = inspire(built.path, "eval", "--split", "eval", "--run", str(run_file),
                     "--plots", str(plots))  # fmt: skip
    assert one_error(result, 2) == f"error: --plots {plots} is a file; give a folder"


@pytest.mark.parametrize("kind", ["missing", "empty", "garbage", "binary"])
def test_corpus_build_from_a_bad_world_folder(tmp_path: Path, built: Built, kind: str) -> None:
    folder = tmp_path / "world"
    if kind != "missing":
        folder.mkdir()
    if kind == "garbage":
        (folder / "world.json").write_text("{not json", encoding="utf-8")
        (folder / "records.jsonl").write_text("{}\n", encoding="utf-8")
    if kind == "binary":
        (folder / "world.json").write_text('{"config": {}, "topics": {}}', encoding="utf-8")
        (folder / "records.jsonl").write_bytes(bytes(range(128, 256)) * 8)
    line = one_error(inspire(built.path, "corpus", "build", "--world", str(folder)), 2)
    assert str(folder) in line
    if kind in ("missing", "empty"):
        assert "holds no world" in line


def test_snapshot_import_of_a_binary_file(tmp_path: Path, built: Built) -> None:
    binary = tmp_path / "cassette.yaml"
    binary.write_bytes(bytes(range(128, 256)) * 8)
    result = inspire(built.path, "snapshot", "import", str(binary))
    assert one_error(result, 2) == "error: nothing imported: no file was a readable cassette"
    assert f"rejected {binary}: not a readable cassette (not UTF-8 text)" in result.stderr


def test_eval_compare_on_a_binary_file(tmp_path: Path, built: Built, run_file: Path) -> None:
    binary = tmp_path / "run.bin"
    binary.write_bytes(bytes(range(128, 256)) * 8)
    result = inspire(built.path, "eval", "--split", "eval", "compare", str(run_file), str(binary))
    assert str(binary) in one_error(result, 2)


# --- 5. only `warehouse init` and `build` make a warehouse ---------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["corpus", "build", "--world", "WORLD"],
        ["stats", "lineage"],
        ["stats", "llm"],
        ["snapshot", "stats"],
        ["snapshot", "import", "WORLD"],
        ["key", "export"],
        ["fetch", "paper", "W1", "--offline"],
        ["lineage", "show", "W1", "--offline"],
        ["gold", "make", "W1"],
        ["export", "--split", "eval", "--out", "OUT"],
        ["eval", "--split", "eval", "--run", "WORLD"],
        ["agent", "run", "--agent", "bm25-brief", "--out", "o", "--trajectories", "t"],
        ["hindsight", "build", "--out", "OUT"],
        ["env", "audit"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_missing_warehouse_is_refused_and_not_created(tmp_path: Path, args: list[str]) -> None:
    typo = tmp_path / "typo.duckdb"
    given = [str(tmp_path) if a == "WORLD" else str(tmp_path / "out") if a == "OUT" else a
             for a in args]  # fmt: skip
    result = CliRunner().invoke(cli.app, ["--warehouse", str(typo), *given])
    assert isinstance(result.exception, WarehouseError), result.output
    assert (
        str(result.exception) == f"no warehouse at {typo}; create it with `inspire warehouse init`"
    )
    assert not typo.exists()


def test_a_missing_warehouse_is_one_line_with_exit_1(tmp_path: Path) -> None:
    typo = tmp_path / "typo.duckdb"
    result = inspire(typo, "corpus", "build", "--world", str(tmp_path))
    assert one_error(result, 1) == (
        f"error: no warehouse at {typo}; create it with `inspire warehouse init`"
    )
    assert not typo.exists()


# --- 6. the app as a whole: help texts, flags, the version, the configuration -------------------


def test_invalid_configuration_is_a_one_line_error(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "INSPIRE_LLM_BACKEND": "nonsense"}
    result = run_inspire(
        "warehouse", "init", "--warehouse", str(tmp_path / "w.duckdb"), env=env, timeout=120
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: invalid configuration: INSPIRE_LLM_BACKEND")
    assert len(result.stderr.strip().splitlines()) == 1


# typer vendors click: its commands are not click's classes, so walk typer's own.
def _commands(group: TyperGroup, prefix: str = "") -> list[tuple[str, Any]]:
    found = []
    for name, command in group.commands.items():
        found.append((prefix + name, command))
        if isinstance(command, TyperGroup):
            found.extend(_commands(command, prefix + name + " "))
    return found


@pytest.mark.parametrize("name_command", _commands(typer.main.get_group(app)), ids=lambda c: c[0])
def test_every_command_has_help_text(name_command: tuple[str, Any]) -> None:
    name, command = name_command
    assert command.help and command.help.strip(), f"`inspire {name}` has no help text"


def test_version_prints_the_package_version() -> None:
    from inspire_build import __version__

    result = run_inspire("--version", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"inspire {__version__}\n"


def test_boolean_options_are_plain_flags_in_help() -> None:
    help_text = run_inspire(
        "eval", "--help", env={**os.environ, "COLUMNS": "200"}, timeout=120
    ).stdout
    json_line = next(line for line in help_text.splitlines() if "--json" in line)
    shown = json_line.split("--json", 1)[1].strip(" │")
    assert shown and not shown.startswith(("<", "[", "BOOL", "TEXT")), json_line
    assert "--no-json" not in help_text


def test_every_boolean_option_is_a_flag_without_a_value() -> None:
    root = typer.main.get_group(app)
    flags = [
        (name, param)
        for name, command in [("", root), *_commands(root)]
        for param in command.params
        if isinstance(param, TyperOption) and param.is_flag
    ]
    assert len(flags) >= 20  # --json and --offline on many commands, --hostile, --version, ...
    for name, param in flags:
        shown = param.display_type_rich(typer.Context(root))
        assert not shown, f"`inspire {name}` shows {param.opts[0]} {shown}"
        assert not param.secondary_opts, f"`inspire {name}` has {param.secondary_opts}"
        assert param.default is False, f"`inspire {name} {param.opts[0]}` defaults to True"


@pytest.mark.parametrize(
    "name", ["", *(n for n, _ in _commands(typer.main.get_group(app)))], ids=lambda n: n or "root"
)
def test_no_help_shows_a_flag_with_a_value(name: str) -> None:
    shown = CliRunner().invoke(app, [*name.split(), "--help"], terminal_width=200).output
    assert "--help" in shown and "<bool>" not in shown, shown


def test_a_paper_line_holds_the_keys_the_sources_guide_lists() -> None:
    """docs/sources.md promised `problems` in `fetch paper --json`, which the line lacked."""
    import re

    from inspire_build.cli.common import paper_line
    from inspire_build.models import Paper, PaperIds, Source

    guide = (Path(__file__).parents[3] / "docs" / "sources.md").read_text(encoding="utf-8")
    listed = guide.split("a paper line holds", 1)[1].split("; a reference line holds", 1)[0]
    keys = re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", listed.replace("\n", " ")))
    paper = Paper(source=Source.S2, ids=PaperIds(), problems=("year: text, not a number",))
    line = paper_line(paper)
    assert sorted(line) == sorted(keys)
    assert line["problems"] == ["year: text, not a number"]
