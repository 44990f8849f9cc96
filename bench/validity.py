"""Are the built benchmark's briefs, audits and grades valid? Measured against a world's truth.

For each failure profile (the truthful endpoint's default rates, then raised ones, then the
default rates graded in one reading instead of two), build an eval split with the openai
backend against a sandbox world, then score it against the truth:

- the share of planted identity leaks (method name, acronym, title 4-gram) the audit caught,
  of planted mechanism leaks (mechanism words, result numbers), and of clean briefs it wrongly
  rejected;
- instances kept per selected target;
- grade agreement with the true tiers (quadratic-weighted kappa, exact-tier accuracy), and the
  gold's antecedent precision and recall over the references that reached grading (tier 0 is
  not an antecedent);
- nDCG@10 of one bm25 query of the brief, beside an oracle that queries the target's true
  problem statement (both through the search environment's local backend, with the cutoff).

It ends with one JSON line of the default profile's figures.

    .venv/bin/python bench/validity.py --papers 2000 --targets 80
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import requests

from inspire_build import pipeline, splits, warehouse
from inspire_build.env import agents, backends, corpus, run, store
from inspire_build.env.core import SearchEnv, Task
from inspire_build.evaluation.evaluate import evaluate
from inspire_build.sandbox import server as sandbox
from inspire_build.sandbox import validity, world
from inspire_build.sandbox.llm_truth import TruthRates
from inspire_build.sandbox.openai_api import OpenAIConfig
from inspire_build.sources import make_client

RAISED = 3.0  # the raised profile multiplies every failure rate by this
# (name, raised rates, grade readings): the default grader, the raised rates, and one reading
PROFILES = (("default", False, 2), ("raised", True, 2), ("default, one reading", False, 1))
BUDGET = 20
INSTANCE_KEY = "5a" * 32  # a fixed key: every build of a profile gets the same cutoffs


def world_ids(generated: world.World) -> dict[str, world.Record]:
    """Every canonical paper ID the pipeline may give a record -> the record."""
    found: dict[str, world.Record] = {}
    for record in generated.records:
        found[f"openalex:{record.openalex}"] = record
        found[f"doi:{record.doi.lower()}"] = record
        if record.arxiv:
            found[f"arxiv:{record.arxiv}"] = record
    return found


def brief_outcomes(
    con: duckdb.DuckDBPyConnection, written: list[dict[str, Any]]
) -> list[validity.BriefOutcome]:
    """Each brief the endpoint wrote and the pipeline kept a row of, with its verdict."""
    plants = {str(b["text"]): frozenset(b["plants"]) for b in written}
    rows = con.execute("SELECT text, status, reason FROM briefs WHERE text <> ''").fetchall()
    return [
        validity.BriefOutcome(
            plants[text],
            status == "rejected",
            frozenset(part.split(":")[0].strip() for part in str(reason).split("; ")),
        )
        for text, status, reason in rows
        if text in plants
    ]


def grade_pairs(
    con: duckdb.DuckDBPyConnection, version: str, ids: Mapping[str, world.Record], truth: Any
) -> tuple[list[tuple[int, int]], dict[str, set[str]], dict[str, dict[str, int]]]:
    """(true, given) tier pairs of every graded reference of the version's instances; the
    gold and the true tiers, both as target work -> reference work."""
    rows = con.execute(
        "SELECT g.target_id, g.paper_id, g.tier FROM grades g JOIN instances i "
        "ON i.target_id = g.target_id AND i.version_id = ?",
        [version],
    ).fetchall()
    pairs, gold, true = [], dict[str, set[str]](), dict[str, dict[str, int]]()
    for target_id, paper_id, tier in rows:
        target, cited = ids.get(str(target_id)), ids.get(str(paper_id))
        if target is None or cited is None:
            continue
        actual = int(truth[target.key]["tiers"].get(cited.work, 0))
        pairs.append((actual, int(tier)))
        true.setdefault(target.work, {})[cited.work] = actual
        if int(tier) > 0:
            gold.setdefault(target.work, set()).add(cited.work)
    return pairs, gold, true


def _run(path: Path, name: str, tasks: list[Task], local: backends.LocalBackend) -> Path:
    sessions = run.run_agent(
        agents.Bm25BriefAgent(), tasks, lambda task: SearchEnv(task, BUDGET, local)
    )
    run_file = path.parent / f"run-{name}.jsonl"
    run.write_jsonl(run_file, (s.env.run_line() for s in sessions))
    return run_file


def retrieval(
    path: Path, generated: world.World, ids: Mapping[str, world.Record], version: str
) -> tuple[float, float]:
    """nDCG@10 of bm25 on the brief, and on the target's true problem statement."""
    with warehouse.open_warehouse(path) as con:
        store.write_corpus(con, corpus.from_world(generated.records), "sandbox-world")
        tasks = store.load_tasks(con, version)
        local = backends.LocalBackend(con)
        oracle = [
            dataclasses.replace(
                task, brief=next(ids[i] for i in sorted(task.withheld) if i in ids).problem
            )
            for task in tasks
        ]
        files = [_run(path, "brief", tasks, local), _run(path, "oracle", oracle, local)]
    brief, best = (
        evaluate(f, split="eval", version=version, warehouse_path=path).aggregate["ndcg@10"]
        for f in files
    )
    return brief, best


def measure(
    root: Path, seed: int, papers: int, targets: int, raised: bool, readings: int
) -> dict[str, Any]:
    """Build an eval split against the truthful endpoint and score it against the truth."""
    generated = world.generate(world.WorldConfig(seed=seed, papers=papers))
    truth = {str(t["key"]): t for t in world.ground_truth(generated)}
    ids = world_ids(generated)
    path = root / f"{'raised' if raised else 'default'}-{readings}" / "w.duckdb"
    path.parent.mkdir(parents=True)
    config = sandbox.SandboxConfig(
        time_scale=1000,
        openai=OpenAIConfig(seed=seed, truth=TruthRates().scaled(RAISED if raised else 1.0)),
    )
    with sandbox.running(generated, config) as base:
        settings = sandbox.settings_for(
            base,
            warehouse=path,
            llm_backend="openai",
            llm_model="sandbox-gpt",
            instance_key=INSTANCE_KEY,  # the keyed cutoffs, and so the figures, repeat
            grade_readings=readings,
        )
        with warehouse.open_warehouse(path) as con:
            row = pipeline.build_split(con, make_client(settings, con), settings, "eval", targets)
            version = splits.latest_version(con, "eval")
            written = requests.get(f"{base}/_sandbox/llm/briefs", timeout=30).json()
            briefs = brief_outcomes(con, written)
            pairs, gold, true = grade_pairs(con, version, ids, truth)
            [grade_calls] = con.execute(
                "SELECT count(*) FROM llm_calls WHERE prompt_name = 'grade'"
            ).fetchone() or [0]
    bm25, oracle = retrieval(path, generated, ids, version)
    counts, selected = row["counts"], targets  # a 2,000-paper world has more candidates
    scored = validity.gold_scores(gold, true)
    identity = validity.caught(briefs, validity.IDENTITY_PLANTS)
    mechanism = validity.caught(briefs, validity.MECHANISM_PLANTS)
    wrong = validity.false_rejection(briefs)
    return {
        "identity_leak_catch": identity.share,
        "identity_leaks_planted": identity.planted,
        "mechanism_leak_catch": mechanism.share,
        "mechanism_leaks_planted": mechanism.planted,
        "false_rejection": wrong.share,
        "clean_briefs": wrong.planted,
        "clean_rejected_by": validity.rejected_by(briefs),
        "instances_per_target": int(counts["instances"]) / selected,
        "instances": int(counts["instances"]),
        "selected_targets": selected,
        "grade_kappa": validity.quadratic_kappa(pairs),
        "grade_exact": validity.exact(pairs),
        "graded_references": len(pairs),
        "grade_calls": int(grade_calls),
        "antecedent_precision": scored.precision,
        "antecedent_recall": scored.recall,
        "bm25_brief_ndcg10": bm25,
        "oracle_problem_ndcg10": oracle,
    }


KEYS = (
    "identity_leak_catch",
    "mechanism_leak_catch",
    "false_rejection",
    "instances_per_target",
    "grade_kappa",
    "grade_exact",
    "antecedent_precision",
    "antecedent_recall",
    "bm25_brief_ndcg10",
)


def report(name: str, figures: Mapping[str, Any], seconds: float) -> None:
    print(f"== {name} rates ({seconds:.0f} s) ==")
    print(
        f"  identity leaks caught   {figures['identity_leak_catch']:.3f} "
        f"of {figures['identity_leaks_planted']:.0f} planted"
    )
    print(
        f"  mechanism leaks caught  {figures['mechanism_leak_catch']:.3f} "
        f"of {figures['mechanism_leaks_planted']:.0f} planted"
    )
    print(
        f"  clean briefs rejected   {figures['false_rejection']:.3f} "
        f"of {figures['clean_briefs']:.0f}; by check: {figures['clean_rejected_by']}"
    )
    print(
        f"  instances per target    {figures['instances_per_target']:.3f} "
        f"({figures['instances']:.0f} of {figures['selected_targets']:.0f})"
    )
    print(
        f"  grades vs truth         kappa {figures['grade_kappa']:.3f}, exact "
        f"{figures['grade_exact']:.3f} over {figures['graded_references']:.0f} references, "
        f"{figures['grade_calls']:.0f} grade calls"
    )
    print(
        f"  gold vs antecedents     precision {figures['antecedent_precision']:.3f}, "
        f"recall {figures['antecedent_recall']:.3f}"
    )
    print(
        f"  nDCG@10 bm25 of brief   {figures['bm25_brief_ndcg10']:.3f}  vs oracle (true "
        f"problem) {figures['oracle_problem_ndcg10']:.3f}: ratio "
        f"{figures['bm25_brief_ndcg10'] / max(figures['oracle_problem_ndcg10'], 1e-9):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--papers", type=int, default=2000)
    parser.add_argument("--targets", type=int, default=80, help="eval candidates to select")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, raised, readings in PROFILES:
            started = time.perf_counter()
            results[name] = measure(
                Path(folder), args.seed, args.papers, args.targets, raised, readings
            )
            report(name, results[name], time.perf_counter() - started)
    one, two = results["default, one reading"], results["default"]
    cost = two["grade_calls"] / max(one["grade_calls"], 1)
    print("== grade readings: 2 (default) vs 1 ==")
    print(
        f"  antecedent precision {two['antecedent_precision']:.3f} vs "
        f"{one['antecedent_precision']:.3f}; kappa {two['grade_kappa']:.3f} vs "
        f"{one['grade_kappa']:.3f}; grade calls x{cost:.2f}"
    )
    print(json.dumps({key: round(results["default"][key], 4) for key in KEYS}))


if __name__ == "__main__":
    main()
