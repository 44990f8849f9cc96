"""The corpus from OpenAlex (a date window by cursor paging, or a works snapshot file) and the
MCP server over real stdio, on a Sandbox world and a split built in-process (no Prefect)."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult
from typer.testing import CliRunner

from inspire_build import cli, warehouse
from inspire_build.evaluation.evaluate import evaluate
from inspire_build.sandbox import payloads, world
from inspire_build.sandbox import server as sandbox
from tests.integration.conftest import sandbox_split

WINDOW = ("2016-01-01", "2024-12-31")
CS = "Computer Science"


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, world.World, str]]:
    """(warehouse, world, sandbox URL): an eval version of a few targets, with no corpus yet."""
    root = tmp_path_factory.mktemp("corpus")
    path = root / "split.duckdb"
    with sandbox_split(root, path, papers=700, targets=6) as (generated, base, _):
        yield path, generated, base


def _copy(source: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(source, into / "w.duckdb"))


def _corpus(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every corpus row (less its added_at) and every corpus_ids row, in order."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        works = con.execute("SELECT * EXCLUDE (added_at) FROM corpus ORDER BY paper_id").fetchall()
        id_rows = con.execute("SELECT * FROM corpus_ids ORDER BY scheme, value").fetchall()
        return works, id_rows
    finally:
        con.close()


def _expected_works(path: Path, records: list[world.Record]) -> int:
    """Works among these records, counted from the world and the warehouse's own paper_ids.

    In OpenAlex a preprint and its published version are two works with no ID in common, so
    they are one work only where the warehouse's crosswalk maps both to one paper.
    """
    con = duckdb.connect(str(path), read_only=True)
    try:
        keys = set()
        for record in records:
            typed = [("openalex", record.openalex), ("doi", record.doi.lower())]
            typed += [("arxiv", record.arxiv)] if record.arxiv else []
            found = {
                str(p)
                for scheme, value in typed
                for (p,) in con.execute(
                    "SELECT paper_id FROM paper_ids WHERE scheme = ? AND value = ?",
                    [scheme, value],
                ).fetchall()
            }
            keys.add(min(found) if found else record.key)
        return len(keys)
    finally:
        con.close()


def test_corpus_from_an_openalex_date_window_by_cursor_paging(
    split: tuple[Path, world.World, str], tmp_path: Path
) -> None:
    source, generated, base = split
    path = _copy(source, tmp_path)
    start, end = WINDOW
    env = dict(line.split("=", 1) for line in sandbox.env_lines(base, time_scale=1000))
    args = ["corpus", "build", "--from", start, "--to", end, "--warehouse", str(path)]
    built = CliRunner().invoke(cli.app, args, env=env)
    assert built.exit_code == 0, built.output

    inside = [r for r in generated.records if start <= r.publication_date <= end and r.field == CS]
    works = _expected_works(path, inside)
    merged = len(inside) - works
    assert len(inside) > 100 and merged >= 1  # more than one page; the crosswalk joins twins
    assert f"corpus: {works:,} works from {len(inside):,} openalex records" in built.output
    assert f"({merged:,} merged as versions of one work)" in built.output
    assert "; 0 undated" in built.output

    rows, id_rows = _corpus(path)
    assert len(rows) == works
    con = duckdb.connect(str(path), read_only=True)
    undated, early, late = con.execute(
        "SELECT count(*) FILTER (first_public_date IS NULL OR public_by IS NULL), "
        "min(first_public_date), max(first_public_date) FROM corpus"
    ).fetchone() or (None, None, None)
    pages = con.execute(
        "SELECT count(*) FROM raw_http WHERE url LIKE '%/works?%cursor=%' "
        "AND url LIKE '%from_publication_date%'"
    ).fetchone()
    openalex_ids = {
        v
        for (v,) in con.execute("SELECT value FROM corpus_ids WHERE scheme = 'openalex'").fetchall()
    }
    con.close()
    assert undated == 0 and early is not None and late is not None
    # A twin's preprint can make its work older than the window; nothing is newer than it.
    assert late.isoformat() <= end
    assert pages is not None and pages[0] >= 2  # the cursor was followed past the first page
    assert openalex_ids >= {r.openalex for r in inside}

    again = CliRunner().invoke(cli.app, args, env=env)
    assert again.exit_code == 0, again.output
    assert _corpus(path) == (rows, id_rows)


def _write_snapshot(file: Path, lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if file.suffix == ".gz":
        file.write_bytes(gzip.compress(text.encode()))
    else:
        file.write_text(text, encoding="utf-8")


def _work_lines(records: list[world.Record]) -> list[str]:
    return [json.dumps(payloads.openalex_work(r, [], 0)) for r in records]


@pytest.mark.parametrize("name", ["works.jsonl", "works.jsonl.gz"])
def test_corpus_from_a_works_snapshot_file(
    split: tuple[Path, world.World, str], tmp_path: Path, name: str
) -> None:
    _, generated, _ = split
    path = tmp_path / "w.duckdb"  # a fresh warehouse: no crosswalk, so only shared IDs merge
    warehouse.connect(path).close()
    chosen = generated.records[:300]
    snapshot = tmp_path / name
    # A snapshot lists a work again in a later partition: the same ID, so one work.
    _write_snapshot(snapshot, [*_work_lines(chosen), "", *_work_lines(chosen[:3])])
    args = ["corpus", "build", "--snapshot", str(snapshot), "--warehouse", str(path)]
    built = CliRunner().invoke(cli.app, args)
    assert built.exit_code == 0, built.output
    assert "corpus: 300 works from 303 snapshot records (3 merged" in built.output

    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM corpus").fetchone() == (300,)
        for position in (0, 137, 299):  # golden spot-checks
            record = chosen[position]
            found = con.execute(
                "SELECT c.title, c.first_public_date, c.records FROM corpus c JOIN corpus_ids i "
                "USING (paper_id) WHERE i.scheme = 'openalex' AND i.value = ?",
                [record.openalex],
            ).fetchone()
            assert found is not None
            title, first_public, records = found
            assert title == record.title
            assert first_public.isoformat() == record.publication_date
            assert records == (2 if position == 0 else 1)
        assert generated.records[0].title == chosen[0].title
    finally:
        con.close()


BAD_LINES = {
    "truncated JSON": '{"id": "https://openalex.org/W1", "title": "cut sh',
    "not an object": "[1, 2]",
    "no id": '{"title": "A work with no ID"}',
}


@pytest.mark.parametrize("problem", sorted(BAD_LINES))
@pytest.mark.parametrize("name", ["works.jsonl", "works.jsonl.gz"])
def test_a_malformed_snapshot_line_is_named_and_leaves_the_corpus(
    split: tuple[Path, world.World, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    problem: str,
) -> None:
    _, generated, _ = split
    path = tmp_path / "w.duckdb"
    warehouse.connect(path).close()
    good = tmp_path / "good.jsonl"
    _write_snapshot(good, _work_lines(generated.records[:20]))
    assert CliRunner().invoke(cli.app, ["corpus", "build", "--snapshot", str(good),
                                        "--warehouse", str(path)]).exit_code == 0  # fmt: skip
    before = _corpus(path)
    bad = tmp_path / name
    _write_snapshot(bad, [*_work_lines(generated.records[20:24]), BAD_LINES[problem]])

    code = _main(monkeypatch, "corpus", "build", "--snapshot", str(bad), "--warehouse", str(path))
    assert code == 2
    message = capsys.readouterr().err
    assert f"{bad}:5: not an OpenAlex work" in " ".join(message.split())
    assert "Traceback" not in message
    assert _corpus(path) == before


def test_a_corrupt_gzip_snapshot_is_named_and_leaves_the_corpus(
    split: tuple[Path, world.World, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, generated, _ = split
    path = tmp_path / "w.duckdb"
    warehouse.connect(path).close()
    good = tmp_path / "good.jsonl"
    _write_snapshot(good, _work_lines(generated.records[:20]))
    assert CliRunner().invoke(cli.app, ["corpus", "build", "--snapshot", str(good),
                                        "--warehouse", str(path)]).exit_code == 0  # fmt: skip
    before = _corpus(path)
    whole = gzip.compress("".join(line + "\n" for line in _work_lines(generated.records)).encode())
    for bad, body in (
        (tmp_path / "cut.jsonl.gz", whole[: len(whole) // 2]),  # truncated download
        (tmp_path / "plain.jsonl.gz", good.read_bytes()),  # not gzip at all
        (tmp_path / "packed.jsonl", whole),  # gzip without the .gz name
    ):
        bad.write_bytes(body)
        code = _main(
            monkeypatch, "corpus", "build", "--snapshot", str(bad), "--warehouse", str(path)
        )
        message = " ".join(capsys.readouterr().err.split())
        assert code == 2, message
        assert f"error: {bad}:" in message and "cannot read the file" in message
        assert _corpus(path) == before


def _main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    """The ``inspire`` entry point in-process: its exit code, errors translated once."""
    monkeypatch.setattr(sys, "argv", ["inspire", *args])
    monkeypatch.setattr(warehouse, "hide_pandas", lambda: None)  # this process may need it
    with pytest.raises(SystemExit) as exited:
        cli.main()
    code = exited.value.code
    return code if isinstance(code, int) else 1


def _answer(result: CallToolResult) -> Any:
    assert not result.isError, result.content
    structured = result.structuredContent
    assert structured is not None
    return structured["result"] if set(structured) == {"result"} else structured


def test_an_agent_over_mcp_stdio_from_search_to_a_scored_submission(
    split: tuple[Path, world.World, str], tmp_path: Path
) -> None:
    """As a harness runs it: the operator lists the instances (`inspire env instances`) and
    starts one MCP server per instance; the agent at the other end has search, read, submit."""
    source, generated, _ = split
    path = _copy(source, tmp_path)
    world_dir = tmp_path / "world"
    world.write(generated, world_dir)
    built = CliRunner().invoke(
        cli.app, ["corpus", "build", "--world", str(world_dir), "--warehouse", str(path)]
    )
    assert built.exit_code == 0, built.output
    listing = CliRunner().invoke(cli.app, ["env", "instances", "--warehouse", str(path)])
    assert listing.exit_code == 0, listing.output
    listed = [json.loads(line) for line in listing.output.splitlines()]
    assert len(listed) >= 2 and set(listed[0]) == {"instance_id", "brief", "cutoff"}
    first, second = listed[0], listed[1]
    runs, trajectories = tmp_path / "mcp-run.jsonl", tmp_path / "mcp-traj.jsonl"

    def server(instance: dict[str, str]) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=[
                "-m", "inspire_build", "env", "mcp", "--instance", instance["instance_id"],
                "--split", "eval", "--budget", "2", "--run", str(runs),
                "--trajectories", str(trajectories), "--warehouse", str(path),
            ],
        )  # fmt: skip

    seen: dict[str, Any] = {}

    async def drive() -> None:
        async with (
            stdio_client(server(first)) as (read, write),
            ClientSession(read, write) as session,
        ):
            opened = await session.initialize()
            assert opened.instructions is not None and first["brief"] in opened.instructions
            assert "Budget: 2 calls, 2 left" in opened.instructions
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert tools == {"search", "read", "submit"}

            async def call(name: str, **arguments: Any) -> Any:
                return _answer(await session.call_tool(name, arguments))

            found = await call("search", query=first["brief"], k=10)
            assert found["status"] == "ok" and found["results"] and found["budget_left"] == 1
            ranking = [r["paper_id"] for r in found["results"]]
            paper = await call("read", paper_id=ranking[0])
            assert paper["status"] == "ok" and paper["budget_left"] == 0
            assert paper["paper"]["paper_id"] == ranking[0] and paper["paper"]["title"]
            spent = await call("search", query="again")
            assert spent == {"status": "budget_exhausted", "results": [], "budget_left": 0}
            unread = await call("read", paper_id=ranking[1])
            assert unread["status"] == "budget_exhausted" and unread["paper"] is None
            answer = await call("submit", ranking=[*ranking, ranking[0]])
            assert answer["status"] == "ok" and answer["instance_id"] == first["instance_id"]
            assert answer["ranking"] == ranking and answer["calls"] == 2
            assert "scores" not in answer  # never returned to the agent
            after = await call("read", paper_id=ranking[0])
            assert after["status"] == "submitted"  # the session ended with the submission
            seen.update(ranking=ranking)
        # Left open when the client goes: kept open in the warehouse, to be resumed.
        async with (
            stdio_client(server(second)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

    anyio.run(drive)
    seen.update(first=first, second=second)

    con = duckdb.connect(str(path), read_only=True)
    try:
        sessions = con.execute(
            "SELECT session_id, instance_id, status, calls, budget, ranking, backend, run_name, "
            "scores_revealed FROM env_sessions WHERE agent = 'mcp' ORDER BY started_at"
        ).fetchall()
        assert [s[1:] for s in sessions] == [
            (
                seen["first"]["instance_id"], "submitted", 2, 2, seen["ranking"], "local",
                "mcp-run", False,
            ),
            (seen["second"]["instance_id"], "open", 0, 2, None, "local", "mcp-run", False),
        ]  # fmt: skip
        steps = con.execute(
            "SELECT step, tool, query, exposed FROM env_steps WHERE session_id = ? ORDER BY step",
            [sessions[0][0]],
        ).fetchall()
    finally:
        con.close()
    assert steps == [
        (1, "search", seen["first"]["brief"], seen["ranking"]),
        (2, "read", seen["ranking"][0], [seen["ranking"][0]]),
    ]
    run_lines = [json.loads(line) for line in runs.read_text().splitlines()]
    assert run_lines == [{"instance_id": seen["first"]["instance_id"], "ranking": seen["ranking"]}]
    traj_lines = [json.loads(line) for line in trajectories.read_text().splitlines()]
    assert len(traj_lines) == 1 and traj_lines[0]["scores_revealed"] is False
    assert [step["tool"] for step in traj_lines[0]["steps"]] == ["search", "read"]
    scores = evaluate(
        runs, split="eval", trajectories=trajectories, samples=10, warehouse_path=path
    )
    instance = scores.per_instance[seen["first"]["instance_id"]]
    assert instance["ndcg@10"] is not None and instance["total_calls"] == 2
