"""Hindsight demonstrations on a Sandbox world: train and eval splits built in-process (no
Prefect), the CLI export checked end to end (every transcript in OpenAI's format and replayed
from its text, the TRL rows loaded with ``datasets``), and the proof that eval gold is never
read."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from inspire_build import hindsight, pipeline, splits, warehouse
from inspire_build.cli import app
from inspire_build.env import backends, sft_format, store, transcript
from inspire_build.env.core import Work
from inspire_build.env.policy import Policy, train
from inspire_build.env.transcript import TOOL_NAMES
from inspire_build.env.transcript_replay import replay
from inspire_build.evaluation.evaluate import evaluate
from inspire_build.sandbox import corpus as world_corpus
from inspire_build.sandbox import server as sandbox
from inspire_build.sandbox import world
from inspire_build.sources import make_client
from tests.unit.test_hindsight import validate_sft


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(warehouse, folder): a train and an eval version of a few targets each, corpus built."""
    root = tmp_path_factory.mktemp("hindsight")
    generated = world.generate(world.WorldConfig(seed=5, papers=800))
    path = root / "w.duckdb"
    with sandbox.running(generated, sandbox.SandboxConfig(time_scale=1000)) as base:
        settings = sandbox.settings_for(base, warehouse=path, llm_backend="rules")
        with warehouse.open_warehouse(path) as con:
            client = make_client(settings, con)
            for split in ("train", "eval"):
                pipeline.build_split(con, client, settings, split, 8)
            store.write_corpus(con, world_corpus.from_world(generated.records), "sandbox-world")
    yield path, root


@pytest.fixture(scope="module")
def exported(built: tuple[Path, Path]) -> tuple[Path, str]:
    path, root = built
    out = root / "sft"
    result = CliRunner().invoke(
        app, ["hindsight", "build", "--split", "train", "--out", str(out), "--warehouse", str(path)]
    )
    assert result.exit_code == 0, result.output
    return out, result.output


def test_every_demonstration_is_replay_checked_and_the_share_kept_is_printed(
    exported: tuple[Path, str],
) -> None:
    out, printed = exported
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    print(printed)  # the kept share and drop reasons, in the test log
    assert manifest["split"] == "train" and manifest["version_id"].startswith("train-")
    assert len(manifest["config_hash"]) == 64
    dropped = sum(manifest["dropped"].values())
    assert manifest["instances"] >= 4 and manifest["kept"] >= manifest["instances"] / 2
    assert manifest["kept"] + dropped >= manifest["instances"]  # a drop has >= 1 reason
    assert set(manifest["dropped"]) <= {
        v for k, v in vars(hindsight.Drop).items() if not k.startswith("_")
    }
    assert f"{manifest['kept']} of {manifest['instances']} demonstration(s)" in printed
    assert "dropped: " in printed
    assert manifest["policy"]["status"] == "toy" and not manifest["policy"]["held_out_gain"]
    assert "policy.json is a toy" in printed
    funnel = manifest["funnel"]
    assert 1.0 >= funnel["exposed_gain"] >= funnel["selected_gain"] >= funnel["ndcg@10"] > 0
    lines = (out / "demonstrations.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == manifest["kept"]
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest


def test_the_sft_jsonl_is_openai_fine_tuning_format(exported: tuple[Path, str]) -> None:
    out, _ = exported
    for line in (out / hindsight.OPENAI_FILE).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        validate_sft(record)
        names = [
            m["tool_calls"][0]["function"]["name"]
            for m in record["messages"]
            if m.get("tool_calls")
        ]
        assert names[-1] == "submit" and "search" in names and len(names) - 1 <= 20


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_exported_transcript_replays_through_the_environment(
    built: tuple[Path, Path], exported: tuple[Path, str]
) -> None:
    """Each line of the SFT export, read back from its text, replays call by call on a fresh
    SearchEnv for its instance (line i of run.jsonl names it), over the same corpus."""
    path, _ = built
    out, _ = exported
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    records = _lines(out / hindsight.OPENAI_FILE)
    named = [line["instance_id"] for line in _lines(out / "run.jsonl")]
    assert len(records) == len(named) == manifest["kept"] > 0
    with warehouse.open_warehouse(path) as con:
        tasks = {t.instance_id: t for t in store.load_tasks(con, manifest["version_id"])}
        local = backends.LocalBackend(con)
        for record, instance_id in zip(records, named, strict=True):
            assert replay(record, tasks[instance_id], manifest["budget"], local) == []
        tampered = json.loads(json.dumps(records[0]))
        answer = json.loads(tampered["messages"][3]["content"])
        answer["results"] = answer["results"][::-1]  # the same papers, in another order
        tampered["messages"][3]["content"] = json.dumps(answer)
        assert replay(tampered, tasks[named[0]], manifest["budget"], local) == [
            "call_1: the search answer is not the environment's"
        ]
        other = tasks[named[-1]] if len(named) > 1 else None
        if other is not None:
            assert replay(records[0], other, manifest["budget"], local)


def test_the_trl_rows_load_with_datasets_as_the_transcripts(
    exported: tuple[Path, str], tmp_path: Path
) -> None:
    """``datasets`` loads the TRL file with Json columns: every row is its OpenAI line's
    transcript, with each call's arguments a dict of exactly its own keys."""
    from datasets import Features, Json, List, load_dataset

    out, _ = exported
    features = Features({"messages": List(Json()), "tools": List(Json())})
    data = load_dataset(
        "json", data_files=str(out / hindsight.TRL_FILE), split="train", features=features,
        cache_dir=str(tmp_path / "hf"),
    )  # fmt: skip
    records = _lines(out / hindsight.OPENAI_FILE)
    assert data.column_names == ["messages", "tools"] and data.num_rows == len(records) > 0
    for row, record in zip(data, records, strict=True):
        assert row == sft_format.trl_row(record)
        assert row["tools"] == transcript.TOOLS
        asked = [c for m in record["messages"] for c in m.get("tool_calls") or ()]
        given = [c for m in row["messages"] for c in m.get("tool_calls") or ()]
        assert [c["function"]["arguments"] for c in given] == [
            json.loads(c["function"]["arguments"]) for c in asked
        ]
        for message in row["messages"]:
            if message["role"] == "tool":
                assert isinstance(message["content"], str) and message["name"] in TOOL_NAMES


def test_the_kept_demonstrations_score_as_the_manifest_says(
    built: tuple[Path, Path], exported: tuple[Path, str]
) -> None:
    path, _ = built
    out, _ = exported
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    scores = evaluate(
        out / "run.jsonl", split="train", trajectories=out / "trajectories.jsonl",
        samples=10, warehouse_path=path,
    )  # fmt: skip
    for metric, value in manifest["funnel"].items():
        assert scores.aggregate[metric] == pytest.approx(value)
    assert scores.aggregate["unexposed_submissions"] == 0


class Frozen:
    """The local backend with every answer memoised: DuckDB's bm25 can order float ties
    differently between calls, and the gold test needs two builds to see one world (the
    corpus is the same in both; only eval gold and briefs differ)."""

    name = "frozen"

    def __init__(self, inner: backends.LocalBackend) -> None:
        self.inner = inner
        self.searches: dict[tuple[str, int, dt.date], list[Work]] = {}
        self.reads: dict[str, Work | None] = {}

    def search(self, query: str, k: int, cutoff: dt.date) -> list[Work]:
        key = (query, k, cutoff)
        if key not in self.searches:
            self.searches[key] = self.inner.search(query, k, cutoff)
        return self.searches[key]

    def read(self, paper_id: str) -> Work | None:
        if paper_id not in self.reads:
            self.reads[paper_id] = self.inner.read(paper_id)
        return self.reads[paper_id]


# One memo for every build of this module, so two builds see the same answers.
_FROZEN: list[Frozen] = []


def _build(
    con: duckdb.DuckDBPyConnection,
) -> tuple[list[hindsight.GoldInstance], hindsight.DemoOutcome]:
    if not _FROZEN:
        _FROZEN.append(Frozen(backends.LocalBackend(con)))
    _FROZEN[0].inner = backends.LocalBackend(con)  # misses go to this warehouse
    instances = hindsight.load_instances(con, splits.latest_version(con, "train"))
    return instances, hindsight.build_all(instances, _FROZEN[0])


def _policy(outcome: hindsight.DemoOutcome) -> Policy:
    return train([(d.brief, d.queries) for d in outcome.kept])


@pytest.fixture(scope="module")
def outcome(built: tuple[Path, Path]) -> tuple[list[hindsight.GoldInstance], hindsight.DemoOutcome]:
    with warehouse.open_warehouse(built[0]) as con:
        return _build(con)


def test_no_query_copies_a_title_five_gram(
    outcome: tuple[list[hindsight.GoldInstance], hindsight.DemoOutcome],
) -> None:
    instances, built = outcome
    titles = [a.title for i in instances for a in i.antecedents]
    assert len(built.demonstrations) == len(instances) == len(built.reasons)
    for demo in built.demonstrations:  # the dropped ones too
        assert demo.queries
        assert hindsight.copied_title_ngrams(demo, titles) == []


def test_the_trained_policy_never_sees_eval_gold_or_briefs(
    built: tuple[Path, Path], outcome: tuple[list[hindsight.GoldInstance], hindsight.DemoOutcome]
) -> None:
    path, root = built
    copy = root / "altered.duckdb"
    copy.write_bytes(path.read_bytes())
    with warehouse.open_warehouse(copy) as con:
        version = splits.latest_version(con, "eval")
        count = con.execute("SELECT count(*) FROM qrels WHERE version_id = ?", [version])
        assert (count.fetchone() or (0,))[0] > 0
        # Eval gold rewritten and half deleted; eval briefs replaced by train vocabulary.
        con.execute("UPDATE qrels SET tier = 4 - tier WHERE version_id = ?", [version])
        con.execute("DELETE FROM qrels WHERE version_id = ? AND hash(paper_id) % 2 = 0", [version])
        con.execute(
            "UPDATE instances SET brief = (SELECT string_agg(brief, ' ') FROM train_latest) "
            "WHERE version_id = ?",
            [version],
        )
        altered = _build(con)[1]
    assert altered.demonstrations == outcome[1].demonstrations
    assert _policy(altered) == _policy(outcome[1])


def test_the_learned_policy_runs_on_eval_and_eval_is_refused(
    built: tuple[Path, Path], exported: tuple[Path, str]
) -> None:
    path, root = built
    out, _ = exported
    runner = CliRunner()
    files = ["--out", str(root / "r.jsonl"), "--trajectories", str(root / "t.jsonl")]
    base = ["agent", "run", "--split", "eval", "--warehouse", str(path), *files]
    learned = runner.invoke(
        app, [*base, "--agent", "multi-query", "--policy", str(out / "policy.json")]
    )
    assert learned.exit_code == 0, learned.output
    with warehouse.open_warehouse(path) as con:
        row = con.execute("SELECT count(*) FROM eval_latest").fetchone()
    assert row is not None and row[0] > 0
    assert f"multi-query-learned: {row[0]} instance(s)" in learned.output
    wrong = runner.invoke(
        app, [*base, "--agent", "bm25-brief", "--policy", str(out / "policy.json")]
    )
    assert wrong.exit_code != 0
    refused = runner.invoke(
        app,
        [
            "hindsight",
            "build",
            "--split",
            "eval",
            "--out",
            str(root / "no"),
            "--warehouse",
            str(path),
        ],
    )
    assert refused.exit_code != 0 and not (root / "no").exists()
