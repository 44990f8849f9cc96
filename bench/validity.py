"""Are a build's briefs, audits and grades valid? Measured against a sandbox world's truth.

One eval build with the openai backend, its sources on a sandbox world, its model the sandbox's
emulated one (which answers only from each prompt's text) or any OpenAI-compatible model
(``--llm-base-url``, ``--llm-model``, ``--llm-api-key-env``). Then, against the world's truth:

- leaks *injected* into every accepted brief after it was written, one form at a time
  (:mod:`inspire_build.sandbox.leaks`: six verbatim forms, two paraphrases in words no paper
  holds), each run through the build's checks: the share of each form caught, and by which
  check;
- with the sandbox's model, the leaks the model itself slipped into its briefs and whether the
  pipeline rejected them, and the clean briefs it rejected;
- instances per selected target, and the share of accepted briefs whose problem statement is
  their own;
- grade agreement with the true tiers (quadratic-weighted kappa, exact accuracy), the gold's
  antecedent precision and recall, beside the *evidence ceiling*: the best kappa and recall
  any grader reading the same evidence could reach, and the share of graded references that
  showed no evidence at all (what lineage gathered);
- nDCG@10 of one bm25 query of the brief, beside an oracle that queries the true problem.

``--grade-evidence none`` shows the grader each reference's index only: its kappa must fall to
chance, the proof that the grader reads the prompt. ``owners`` in the JSON line names, figure
by figure, whether the pipeline owns it or it means something only against a real model.

    .venv/bin/python bench/validity.py --seed 1 --papers 2000 --targets 80
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  (this checkout first on the path)
import duckdb
import requests

from inspire_build import gold, grading, pipeline, splits, warehouse
from inspire_build.briefs import MAX_WORDS, MIN_WORDS
from inspire_build.config import Settings
from inspire_build.env import agents, backends, run, store
from inspire_build.env.core import SearchEnv, Task
from inspire_build.errors import LLMError
from inspire_build.evaluation import kappa
from inspire_build.evaluation.evaluate import evaluate
from inspire_build.sandbox import corpus as world_corpus
from inspire_build.sandbox import leaks, validity, world
from inspire_build.sandbox import server as sandbox
from inspire_build.sandbox.llm_truth import TruthRates
from inspire_build.sandbox.openai_api import OpenAIConfig
from inspire_build.sources import make_client
from inspire_build.tables import versions
from inspire_build.templates import load_prompts
from inspire_build.text import split_abstract

RAISED = 3.0  # --rates raised multiplies every failure rate by this
BUDGET = 20
INSTANCE_KEY = "5a" * 32  # a fixed key: every build gets the same cutoffs
SANDBOX_MODEL = "sandbox-gpt"
# Who owns each figure: the pipeline (its checks, yields, the evidence it gathers), or the
# model (a figure that means something only when a real model wrote and graded).
OWNERS = {
    "identity_leak_catch": "model",
    "mechanism_leak_catch": "model",
    "false_rejection": "model",
    "instances_per_target": "model",
    "grade_kappa": "model",
    "grade_exact": "model",
    "antecedent_precision": "model",
    "antecedent_recall": "model",
    "bm25_brief_ndcg10": "model",
    "oracle_problem_ndcg10": "pipeline",  # bm25 on the true problem: the bound bm25's is under
    "grade_ceiling_kappa": "pipeline",
    "grade_ceiling_recall": "pipeline",
    "no_evidence_share": "pipeline",
    "injected_catch": "pipeline",
    "injected_clean_rejected": "pipeline",  # the control: a check that rejects all catches all
    "distinct_problem_share": "model",
    "distinct_problem_ceiling": "pipeline",
}
KEYS = tuple(OWNERS)


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
    """Each brief the endpoint wrote and the pipeline kept a row of, with its verdict and the
    checks that failed it (the findings' own column, and the length rule)."""
    plants = {str(b["text"]): frozenset(b["plants"]) for b in written}
    rows = con.execute(
        'SELECT b.text, b.status, list(f."check") FILTER (WHERE NOT f.passed) '
        "FROM briefs b LEFT JOIN audit_findings f USING (brief_id) WHERE b.text <> '' "
        "GROUP BY b.brief_id, b.text, b.status"
    ).fetchall()
    return [
        validity.BriefOutcome(
            plants[text],
            status == "rejected",
            frozenset(failed or [])
            | ({"length"} if not MIN_WORDS <= len(text.split()) <= MAX_WORDS else set()),
        )
        for text, status, failed in rows
        if text in plants
    ]


@dataclasses.dataclass
class Graded:
    """The version's graded references against the truth."""

    pairs: list[tuple[int, int]] = dataclasses.field(default_factory=list)  # (true, given)
    gold: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    true: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    evidence: list[tuple[validity.Evidence, int]] = dataclasses.field(default_factory=list)
    bare: int = 0  # references shown with no context and no intent


def graded(
    con: duckdb.DuckDBPyConnection,
    version: str,
    ids: Mapping[str, world.Record],
    truth: Any,
    evidence: str = "full",
) -> Graded:
    """Every graded reference of the version's instances, against its true tier, with the
    evidence the grade template renders of it (:func:`validity.shown_evidence`): under
    ``--grade-evidence none`` nothing (its ceiling is then chance, and every reference counts as
    shown no evidence)."""
    prompt = load_prompts()["grade"]  # the checkout's, as the build rendered it
    rows = con.execute(
        "SELECT g.target_id, g.paper_id, g.tier FROM grades g JOIN instances i "
        "ON i.target_id = g.target_id AND i.version_id = ? ORDER BY 1, 2",
        [version],
    ).fetchall()
    found, shown = Graded(), dict[str, dict[str, Any]]()
    for target_id, paper_id, tier in rows:
        target, cited = ids.get(str(target_id)), ids.get(str(paper_id))
        if target is None or cited is None:
            continue
        if target_id not in shown:
            inputs = gold.load_inputs(con, str(target_id))
            shown[target_id] = {str(a["id"]): a for a in inputs.antecedents}
        reference = shown[target_id].get(str(paper_id), {"id": paper_id})
        if evidence == "none":
            reference = grading.withheld({"id": paper_id})
        actual = int(truth[target.key]["tiers"].get(cited.work, 0))
        found.pairs.append((actual, int(tier)))
        found.true.setdefault(target.work, {})[cited.work] = actual
        if int(tier) > 0:
            found.gold.setdefault(target.work, set()).add(cited.work)
        seen = validity.shown_evidence(prompt, reference, cited.topic == target.topic)
        found.evidence.append((seen, actual))
        found.bare += seen.bare
    return found


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
        store.write_corpus(con, world_corpus.from_world(generated.records), "sandbox-world")
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


def _facts(target: world.Record, antecedents: list[world.Record]) -> leaks.Facts:
    return leaks.Facts(
        target.method_name,
        target.acronym,
        target.title,
        tuple(target.result_numbers),
        tuple(target.mechanism),
        antecedents[0].title if antecedents else None,
    )


def injected(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    version: str,
    ids: Mapping[str, world.Record],
    found: Graded,
) -> dict[str, dict[str, Any]]:
    """Form -> {"n", "caught", and per check the count that failed}: each leak form inserted
    in every accepted brief of the version and run through the build's five checks
    (:func:`gold.audit_text`, as ``inspire audit brief`` runs them)."""
    llm, client = gold.make_llm(settings, con), make_client(settings, con)
    by_work = {r.work: r for r in ids.values()}
    tally: dict[str, dict[str, Any]] = {f: {"n": 0, "caught": 0, "by": {}} for f in leaks.FORMS}
    tally["clean"] = {"n": 0, "caught": 0, "by": {}}
    for iid, target_id, brief in versions.briefs(con, version):
        target = ids.get(target_id)
        if target is None:
            continue
        truth = found.true.get(target.work, {})
        cited = sorted((w for w, t in truth.items() if t > 0), key=lambda w: -truth[w])
        facts = _facts(target, [by_work[w] for w in cited if w in by_work])
        rng = random.Random(iid)
        for form in ("clean", *leaks.FORMS):
            leak = None if form == "clean" else leaks.sentence(form, facts, rng)
            if form != "clean" and leak is None:
                continue
            text = brief if leak is None else leaks.inject(brief, leak)
            try:
                checks = gold.audit_text(llm, client, con, settings, version, iid, text)
            except LLMError:  # a refusal: this form of this brief is not judged
                tally[form]["refused"] = tally[form].get("refused", 0) + 1
                continue
            failed = sorted(c.check.value for c in checks if not c.passed)
            entry = tally[form]
            entry["n"] += 1
            entry["caught"] += bool(failed)
            for check in failed:
                entry["by"][check] = entry["by"].get(check, 0) + 1
    return tally


def _sandbox_config(args: argparse.Namespace) -> sandbox.SandboxConfig:
    rates = TruthRates()
    if args.rates == "raised":
        rates = rates.scaled(RAISED)
    elif args.rates != "default":
        pairs = dict(part.split("=", 1) for part in args.rates.split(","))
        rates = TruthRates.from_mapping({k.strip(): float(v) for k, v in pairs.items()})
    model = OpenAIConfig(seed=args.seed, truth=rates, brief_scope=args.brief_scope)
    return sandbox.SandboxConfig(time_scale=1000, openai=model)


def _settings(base: str, path: Path, args: argparse.Namespace) -> Settings:
    llm: dict[str, object] = {"llm_model": args.llm_model or SANDBOX_MODEL}
    if args.llm_base_url:
        llm["llm_base_url"] = args.llm_base_url
        key = os.environ.get(args.llm_api_key_env) if args.llm_api_key_env else None
        if args.llm_api_key_env and not key:
            raise SystemExit(f"--llm-api-key-env names {args.llm_api_key_env}, which is not set")
        llm["llm_api_key"] = key
    return sandbox.settings_for(
        base,
        warehouse=path,
        llm_backend="openai",
        instance_key=INSTANCE_KEY,  # the keyed cutoffs, and so the figures, repeat
        grade_readings=args.grade_readings,
        grade_evidence=args.grade_evidence,
        **llm,
    )


def measure(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Build an eval split and score it against the truth."""
    generated = world.generate(
        world.WorldConfig(seed=args.seed, papers=args.papers, window_density=args.window_density)
    )
    truth = {str(t["key"]): t for t in world.ground_truth(generated)}
    ids = world_ids(generated)
    path = root / "w.duckdb"
    with sandbox.running(generated, _sandbox_config(args)) as base:
        settings = _settings(base, path, args)
        with warehouse.open_warehouse(path) as con:
            started = time.perf_counter()
            row = pipeline.build_split(
                con, make_client(settings, con), settings, "eval", args.targets
            )
            print(f"built in {time.perf_counter() - started:.0f} s: {row['counts']}", flush=True)
            version = splits.latest_version(con, "eval")
            written = requests.get(f"{base}/_sandbox/llm/briefs", timeout=30).json()
            own_model = not args.llm_base_url
            briefs = brief_outcomes(con, written) if own_model else []
            found = graded(con, version, ids, truth, settings.grade_evidence)
            tally = injected(con, settings, version, ids, found)
            made = versions.briefs(con, version)
            problems = [b.partition("\n\n")[0] for _, _, b in made]
            # the ceiling: the targets' own problem statements, as their abstracts give them
            own = [" ".join(split_abstract(ids[t].abstract)[0]) for _, t, _ in made if t in ids]
            [grade_calls] = con.execute(
                "SELECT count(*) FROM llm_calls WHERE prompt_name = 'grade'"
            ).fetchone() or [0]
    # A build that kept no instance has no brief to search with: no figure, not a zero.
    bm25, oracle = retrieval(path, generated, ids, version) if found.pairs else (None, None)
    return figures(
        row, briefs, found, tally, (problems, own), int(grade_calls), (bm25, oracle), args
    )


def figures(
    row: Mapping[str, Any],
    briefs: list[validity.BriefOutcome],
    found: Graded,
    tally: Mapping[str, Mapping[str, Any]],
    problems: tuple[list[str], list[str]],  # the briefs' and their targets' own
    grade_calls: int,
    ndcg: tuple[float | None, float | None],
    args: argparse.Namespace,
) -> dict[str, Any]:
    counts = row["counts"]
    scored = validity.gold_scores(found.gold, found.true)
    identity = validity.caught(briefs, validity.IDENTITY_PLANTS)
    mechanism = validity.caught(briefs, validity.MECHANISM_PLANTS)
    wrong = validity.false_rejection(briefs)
    top = validity.ceiling(found.evidence)
    share = {f: t["caught"] / t["n"] if t["n"] else None for f, t in tally.items()}
    graded = bool(found.pairs)  # no instance, no grade: no figure, rather than a perfect one
    return {
        "identity_leak_catch": identity.share if identity.planted else None,
        "identity_leaks_planted": identity.planted,
        "mechanism_leak_catch": mechanism.share if mechanism.planted else None,
        "mechanism_leaks_planted": mechanism.planted,
        "false_rejection": wrong.share if wrong.planted else None,
        "clean_briefs": wrong.planted,
        "clean_rejected_by": validity.rejected_by(briefs),
        "instances_per_target": int(counts["instances"]) / args.targets,
        "instances": int(counts["instances"]),
        "selected_targets": args.targets,
        "grade_kappa": kappa.quadratic_kappa(found.pairs) if graded else None,
        "grade_exact": kappa.exact(found.pairs) if graded else None,
        "graded_references": len(found.pairs),
        "grade_calls": grade_calls,
        "antecedent_precision": scored.precision if scored.gold else None,
        "antecedent_recall": scored.recall if graded else None,
        "bm25_brief_ndcg10": ndcg[0],
        "oracle_problem_ndcg10": ndcg[1],
        "grade_ceiling_kappa": top.kappa if graded else None,
        "grade_ceiling_recall": top.recall if graded else None,
        "no_evidence_share": found.bare / len(found.pairs) if graded else None,
        "injected_catch": {f: s for f, s in share.items() if f != "clean"},
        "injected_clean_rejected": share["clean"],
        "injected_by_check": {f: dict(t["by"]) for f, t in tally.items()},
        "injected_n": {f: t["n"] for f, t in tally.items()},
        "distinct_problem_share": validity.distinct_share(problems[0]) if problems[0] else None,
        "distinct_problem_ceiling": validity.distinct_share(problems[1]) if problems[1] else None,
    }


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def report(figures: Mapping[str, Any], seconds: float) -> None:
    f = figures
    print(f"== validity ({seconds:.0f} s) ==")
    print(
        f"  model's own leaks caught  identity {_share(f['identity_leak_catch'])} of "
        f"{f['identity_leaks_planted']}, mechanism {_share(f['mechanism_leak_catch'])} of "
        f"{f['mechanism_leaks_planted']}; clean rejected {_share(f['false_rejection'])} of "
        f"{f['clean_briefs']} ({f['clean_rejected_by']})"
    )
    print(
        f"  instances per target      {f['instances_per_target']:.3f} "
        f"({f['instances']} of {f['selected_targets']}); distinct problems "
        f"{_share(f['distinct_problem_share'])} (the targets' own: "
        f"{_share(f['distinct_problem_ceiling'])})"
    )
    print("  injected leaks caught (share, n, by check):")
    for form, share in f["injected_catch"].items():
        print(
            f"    {form:<18} {_share(share)}  n={f['injected_n'][form]:<4} "
            f"{f['injected_by_check'][form]}"
        )
    print(f"    {'(no leak)':<18} {_share(f['injected_clean_rejected'])} rejected")
    print("    (the paraphrases hold no word of any paper: only an audit that reads meaning can")
    print("    catch them; the sandbox's model does not, a real one may: --llm-base-url)")
    print(
        f"  grades vs truth           kappa {_share(f['grade_kappa'])} (ceiling "
        f"{_share(f['grade_ceiling_kappa'])}), exact {_share(f['grade_exact'])} over "
        f"{f['graded_references']} references, {f['grade_calls']} grade calls; no evidence "
        f"{_share(f['no_evidence_share'])}"
    )
    print(
        f"  gold vs antecedents       precision {_share(f['antecedent_precision'])}, recall "
        f"{_share(f['antecedent_recall'])} (ceiling {_share(f['grade_ceiling_recall'])})"
    )
    brief, oracle = f["bm25_brief_ndcg10"], f["oracle_problem_ndcg10"]
    ratio = f": ratio {brief / max(oracle, 1e-9):.2f}" if brief is not None else ""
    print(
        f"  nDCG@10 bm25 of brief     {_share(brief)} vs oracle (true problem) "
        f"{_share(oracle)}{ratio}"
    )


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--papers", type=int, default=2000)
    parser.add_argument(
        "--window-density", type=float, default=1.0, help="as `inspire sandbox world`"
    )
    parser.add_argument("--targets", type=int, default=80, help="eval candidates to select")
    parser.add_argument(
        "--rates",
        default="default",
        help="the sandbox model's failure rates: default, raised, or name=rate,...",
    )
    parser.add_argument("--grade-evidence", choices=("full", "none"), default="full")
    parser.add_argument(
        "--brief-scope",
        choices=("own", "field"),
        default="own",
        help="the sandbox model's briefs: the target's own problem, or only its field's",
    )
    parser.add_argument("--grade-readings", type=int, default=2)
    parser.add_argument("--llm-base-url", help="an OpenAI-compatible endpoint (default: sandbox)")
    parser.add_argument("--llm-model", help=f"its model (default: {SANDBOX_MODEL})")
    parser.add_argument("--llm-api-key-env", help="the environment variable holding its key")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        results = measure(Path(folder), args)
    report(results, time.perf_counter() - started)
    line = {key: _rounded(results[key]) for key in KEYS}
    run = {
        "seed": args.seed,
        "grade_evidence": args.grade_evidence,
        "brief_scope": args.brief_scope,
        "window_density": args.window_density,
    }
    print(json.dumps({**line, "owners": OWNERS, **run}))


if __name__ == "__main__":
    main()
