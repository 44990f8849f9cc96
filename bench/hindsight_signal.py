"""Does a hindsight demonstration carry a learning signal? A CPU-sized answer.

On one Sandbox world: build a train and an eval split in-process (rules backend), fill the
corpus, build replay-checked demonstrations from the train split (each transcript read back and
replayed too), train the toy logistic keyphrase policy (``env/policy.py``: it has shown no
held-out gain) on the keyphrases they searched, then run ``multi-query`` (unweighted
keyphrases) and ``multi-query-learned`` (the policy's) on the held-out eval split, and print
the paper's Table 4 columns (Exposed gain, Selected gain, final nDCG@10) with 95% intervals
and the paired bootstrap difference, as ``inspire eval compare`` computes it. Eval gold is read
only to score.

    .venv/bin/python bench/hindsight_signal.py --papers 2000 --targets 80
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import _checkout  # noqa: F401  (this checkout first on the path)

from inspire_build import hindsight, pipeline, splits, warehouse
from inspire_build.env import agents, backends, run, store
from inspire_build.env.core import SearchEnv
from inspire_build.env.policy import train
from inspire_build.evaluation.evaluate import evaluate
from inspire_build.evaluation.score import paired
from inspire_build.sandbox import corpus as world_corpus
from inspire_build.sandbox import server as sandbox
from inspire_build.sandbox import world
from inspire_build.sources import make_client


def build_world(root: Path, seed: int, papers: int, targets: int) -> Path:
    generated = world.generate(world.WorldConfig(seed=seed, papers=papers))
    path = root / "w.duckdb"
    with sandbox.running(generated, sandbox.SandboxConfig(time_scale=1000)) as base:
        settings = sandbox.settings_for(base, warehouse=path, llm_backend="rules")
        with warehouse.open_warehouse(path) as con:
            client = make_client(settings, con)
            for split in ("train", "eval"):
                pipeline.build_split(con, client, settings, split, targets)
            store.write_corpus(con, world_corpus.from_world(generated.records), "sandbox-world")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--papers", type=int, default=2000)
    parser.add_argument("--targets", type=int, default=80, help="candidates per split")
    parser.add_argument("--budget", type=int, default=20)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = build_world(root, args.seed, args.papers, args.targets)
        with warehouse.open_warehouse(path) as con:
            train_version = splits.latest_version(con, "train")
            eval_version = splits.latest_version(con, "eval")
            local = backends.LocalBackend(con)
            instances = hindsight.load_instances(con, train_version)
            outcome = hindsight.build_all(instances, local, args.budget)
            kept = outcome.kept
            own = hindsight.funnel(kept, instances)
            policy = train([(d.brief, d.queries) for d in kept])
            tasks = store.load_tasks(con, eval_version)
            contenders = {
                "multi-query": agents.MultiQueryAgent(),
                "multi-query-learned": agents.MultiQueryAgent(policy, name="multi-query-learned"),
            }
            files = {}
            for name, agent in contenders.items():
                sessions = run.run_agent(
                    agent, tasks, lambda task: SearchEnv(task, args.budget, local), eval_version
                )
                files[name] = (root / f"run-{name}.jsonl", root / f"traj-{name}.jsonl")
                run.write_jsonl(files[name][0], (s.env.run_line() for s in sessions))
                run.write_jsonl(files[name][1], (s.env.trajectory_line() for s in sessions))
        scored = {
            name: evaluate(
                run_file, split="eval", trajectories=traj, name=name, warehouse_path=path
            )
            for name, (run_file, traj) in files.items()
        }
    print(
        f"world seed {args.seed}, {args.papers} papers; train {train_version} "
        f"({len(instances)} instances), eval {eval_version} ({len(tasks)} instances); "
        f"budget {args.budget}"
    )
    print(
        f"demonstrations: {len(kept)} of {len(instances)} kept "
        f"({len(kept) / len(instances):.1%}); dropped: {outcome.drop_counts() or 'none'}"
    )
    print(
        "demonstrations' own funnel (train): "
        + "  ".join(
            f"{m} {own.aggregate[m]:.3f} [{own.intervals[m][0]:.3f}, {own.intervals[m][1]:.3f}]"
            for m in hindsight.FUNNEL
        )
    )
    print("toy policy weights: " + ", ".join(f"{w:+.2f}" for w in policy.weights))
    print()
    print(f"{'eval split':<24}" + "".join(f"{m:>26}" for m in hindsight.FUNNEL))
    for name, scores in scored.items():
        cells = "".join(
            f"{scores.aggregate[m]:>8.3f} [{scores.intervals[m][0]:.3f}, "
            f"{scores.intervals[m][1]:.3f}]"
            for m in hindsight.FUNNEL
        )
        print(f"{name:<24}{cells}")
    base, learned = scored["multi-query"], scored["multi-query-learned"]
    cells = "".join(
        f"{mean:>+8.3f} [{low:+.3f}, {high:+.3f}]"
        for mean, low, high in paired(learned, base, hindsight.FUNNEL).values()
    )
    print(f"{'learned - base (paired)':<24}{cells}")
    print("the learned policy is a toy: an interval containing 0 is no held-out gain")
    print(f"\n{time.perf_counter() - started:.0f} s")
    named = {
        f"{name}_{m}": round(scores.aggregate[m], 4)
        for name, scores in scored.items()
        for m in hindsight.FUNNEL
    }
    print(json.dumps(named))


if __name__ == "__main__":
    main()
