"""The search environment end to end on a Sandbox: a split built in-process (no Prefect), the
corpus from the whole world, both baselines scored with trajectories, the cutoff audit of both
backends, and an external agent driving the tool server over real HTTP."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import httpx
import pytest
from typer.testing import CliRunner

from inspire_build import splits, warehouse
from inspire_build.cli import app
from inspire_build.env import audit, backends, run, server, store
from inspire_build.env.core import SearchEnv
from inspire_build.evaluation.evaluate import evaluate
from inspire_build.sandbox import server as sandbox
from inspire_build.sources import make_client


@pytest.fixture(scope="module")
def built(
    env_build: tuple[Path, Path, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, str]:
    """(warehouse, world folder, sandbox URL): this module's copy of the process's Sandbox
    build (tests/integration/conftest.py), so that what a module writes no other one sees."""
    source, folder, base = env_build
    root = tmp_path_factory.mktemp("env")
    shutil.copytree(folder / "world", root / "world")
    shutil.copy(source, root / "w.duckdb")
    return root / "w.duckdb", root, base


def _instances(path: Path) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM eval_latest").fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


def test_corpus_holds_the_whole_world_with_twins_merged(built: tuple[Path, Path, str]) -> None:
    path, _, _ = built
    con = duckdb.connect(str(path), read_only=True)
    works, records, antecedents_in = con.execute(
        "SELECT count(*), sum(records), (SELECT count(DISTINCT q.paper_id) FROM qrels q "
        "JOIN corpus c ON c.paper_id = q.paper_id) FROM corpus"
    ).fetchone() or (0, 0, 0)
    graded = con.execute("SELECT count(DISTINCT paper_id) FROM qrels").fetchone()
    con.close()
    assert records == 800 and 600 < works < 800  # twins are one work
    assert graded is not None and antecedents_in == graded[0]  # every antecedent is findable


def test_both_baselines_run_and_score_with_an_ordered_funnel(
    built: tuple[Path, Path, str],
) -> None:
    path, root, _ = built
    runner = CliRunner()
    scored = {}
    for agent in ("bm25-brief", "multi-query"):
        run_file, traj_file = root / f"run-{agent}.jsonl", root / f"traj-{agent}.jsonl"
        result = runner.invoke(
            app,
            [
                "agent", "run", "--agent", agent, "--split", "eval", "--out", str(run_file),
                "--trajectories", str(traj_file), "--warehouse", str(path),
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        scores = evaluate(
            run_file, split="eval", trajectories=traj_file, name=agent, samples=50,
            warehouse_path=path,
        )  # fmt: skip
        assert len(scores.per_instance) == _instances(path) >= 4
        for metrics in scores.per_instance.values():
            exposed, selected = metrics["exposed_gain"], metrics["selected_gain"]
            assert exposed is not None and selected is not None and metrics["ndcg@10"] is not None
            assert exposed >= selected >= metrics["ndcg@10"]
        scored[agent] = scores.aggregate
    for aggregate in scored.values():
        assert aggregate["exposed_gain"] >= aggregate["selected_gain"] >= aggregate["ndcg@10"]
        assert aggregate["unexposed_submissions"] == 0
        assert aggregate["ndcg@10"] > 0  # the corpus search finds antecedents
    assert scored["bm25-brief"]["total_calls"] == 1
    assert scored["multi-query"]["total_calls"] > 1
    assert scored["multi-query"]["exposed_gain"] > scored["bm25-brief"]["exposed_gain"]


def test_cutoff_audit_of_both_backends(built: tuple[Path, Path, str]) -> None:
    path, _, base = built
    settings = sandbox.settings_for(base, warehouse=path)
    with warehouse.open_warehouse(path) as con:
        version = splits.latest_version(con, "eval")
        tasks = store.load_tasks(con, version)
        local = audit.audit_backend(backends.LocalBackend(con), tasks)
        live = backends.OpenAlexBackend(make_client(settings, con), store.catalog(con))
        remote = audit.audit_backend(live, tasks)
        # Every call through the environment shows only works before the cutoff, never the
        # target, whatever the backend returned.
        for task in tasks:
            for backend in (backends.LocalBackend(con), live):
                env = SearchEnv(task, 5, backend)
                result = env.search(task.brief, 50)
                assert task.withheld.isdisjoint(f.paper_id for f in result.results)
                for found in result.results[:3]:
                    assert env.read(found.paper_id).paper is not None
    assert local.returned > 0 and local.late == local.undated == local.target == 0
    assert local.violation_rate == 0.0
    assert remote.returned > 0 and 0.0 <= remote.violation_rate <= 1.0


def test_env_audit_samples_the_remote_backend_only_and_says_so(
    built: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """--remote-sample: the local backend is probed with every sentence, OpenAlex with the
    sample alone (the sandbox counts exactly those searches), and both reports say which."""
    source, _, base = built
    path = tmp_path / "w.duckdb"
    shutil.copy(source, path)
    with warehouse.open_warehouse(path) as con:  # searches an earlier test stored are asked again
        con.execute("DELETE FROM raw_http WHERE source = 'openalex' AND url LIKE '%search=%'")
        tasks = store.load_tasks(con, splits.latest_version(con, "eval"))
    whole = sum(len(audit.audit_queries(t.brief)) for t in tasks)
    sampled = sum(min(2, len(audit.audit_queries(t.brief))) for t in tasks)
    assert sampled < whole
    env = dict(line.split("=", 1) for line in sandbox.env_lines(base, time_scale=1000))
    args = ["env", "audit", "--backend", "local", "--backend", "openalex", "--remote-sample", "2"]
    args += ["--warehouse", str(path)]
    before = _openalex_requests(base)
    result = CliRunner().invoke(app, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert _openalex_requests(base) - before == sampled
    local, remote = (json.loads(line) for line in result.stdout.splitlines())
    assert (local["queries"], local["population"], local["sampled"]) == (whole, whole, False)
    assert local["sample"] is None and local["briefs"] == len(tasks)
    assert (remote["queries"], remote["population"], remote["sampled"]) == (sampled, whole, True)
    assert remote["sample"] == {"per_brief": 2, "seed": 0} and remote["briefs"] == len(tasks)
    said = CliRunner().invoke(app, args, env=env)  # answered from the store this time
    assert said.exit_code == 0, said.output
    shown = " ".join(said.stdout.split())  # the console may wrap a long line
    assert f"local {whole:,} queries, " in shown
    assert (
        f"openalex {sampled:,} of {whole:,} queries sampled (2 per brief of {len(tasks)}: the "
        "brief and 1 of its sentences, seed 0), "
    ) in shown


def _openalex_requests(base: str) -> int:
    return int(httpx.get(base + "/_sandbox/stats").json()["counts"].get("openalex 200", 0))


def test_an_external_agent_over_http_from_search_to_a_scored_submission(
    built: tuple[Path, Path, str],
) -> None:
    """The debugging mode answers submit with the scores ``inspire eval`` gives, and marks the
    trajectory line, which ``inspire eval --trajectories`` still reads."""
    path, root, _ = built
    runs, trajectories = root / "http-run.jsonl", root / "http-traj.jsonl"
    with warehouse.open_warehouse(path) as con:
        version = splits.latest_version(con, "eval")

        def submitted(env: SearchEnv, scores_revealed: bool) -> None:
            run.append_jsonl(runs, env.run_line())
            run.append_jsonl(trajectories, env.trajectory_line(scores_revealed))

        sessions = server.ToolSessions(
            store.load_tasks(con, version),
            backends.LocalBackend(con),
            con,
            budget=3,
            run_name="http-test",
            version=version,
            on_submit=submitted,
            judge=server.judge_from(con, version),
        )
        key = server.new_operator_key()
        operator = {"Authorization": f"Bearer {key}"}
        app = server.create_app(sessions, key)
        with server.running(app) as url, httpx.Client(base_url=url) as http:
            assert http.post("/search", json={"query": "x"}).status_code == 401  # no token
            assert http.get("/instances").status_code == 401  # the operator's, by its key
            listed = http.get("/instances", headers=operator).json()
            assert listed and set(listed[0]) == {"instance_id", "brief", "cutoff"}
            first = listed[0]
            start = {"instance_id": first["instance_id"]}
            opened = http.post("/start", json=start, headers=operator).json()
            assert opened["budget"] == 3 and opened["brief"] == first["brief"]
            token = opened["token"]
            found = http.post(
                "/search", json={"token": token, "query": first["brief"], "k": 10}
            ).json()
            assert found["status"] == "ok" and found["results"] and found["budget_left"] == 2
            first_id = found["results"][0]["paper_id"]
            paper = http.post("/read", json={"token": token, "paper_id": first_id}).json()
            assert paper["status"] == "ok" and paper["paper"]["title"]
            http.post("/search", json={"token": token, "query": "more"})
            spent = http.post("/search", json={"token": token, "query": "again"}).json()
            assert spent == {"status": "budget_exhausted", "results": [], "budget_left": 0}
            ranking = [r["paper_id"] for r in found["results"]]
            answer = http.post("/submit", json={"token": token, "ranking": ranking}).json()
            assert answer["status"] == "ok" and answer["calls"] == 3
            assert 0.0 <= answer["scores"]["ndcg@10"] <= answer["scores"]["exposed_gain"] <= 1.0
            after = http.post("/read", json={"token": token, "paper_id": "W1"}).json()
            assert after["status"] == "submitted"
        logged = con.execute(
            "SELECT status, calls, scores_revealed FROM env_sessions WHERE run_name = 'http-test'"
        )
        assert logged.fetchall() == [("submitted", 3, True)]
    (line,) = [json.loads(text) for text in trajectories.read_text().splitlines()]
    assert line["scores_revealed"] is True
    scores = evaluate(
        runs, split="eval", trajectories=trajectories, samples=10, warehouse_path=path
    )
    instance = scores.per_instance[first["instance_id"]]
    assert instance["ndcg@10"] == pytest.approx(answer["scores"]["ndcg@10"])
    assert instance["total_calls"] == 3
