"""Hindsight demonstrations: search trajectories built from a train instance's graded antecedents.

A demonstration is what a good agent could have done, built by someone who knows the answers,
using only what the agent would have had:

1. **Candidate queries** are the brief's keyphrases (the ``multi-query`` baseline's RAKE-style
   candidates, :func:`~inspire_build.env.agents.candidate_phrases`), plus the keyphrases of the
   abstracts the demonstration has *read* so far. A query therefore holds only the brief's words
   and words read earlier in the same trajectory; no title is ever pasted in.
2. **Weights**: a candidate's weight is its gain-weighted overlap with the antecedents' titles and
   abstracts, ``w(c) = Σ_a g(a) · |words(c) ∩ words(a)| / |words(c)|`` over ``Σ_a g(a)``. Only
   the ``SHORTLIST`` heaviest are tried, which bounds the hindsight probes.
3. **Greedy choice**: each next search is the candidate that most raises the Exposed gain
   (DCG@10 of the antecedents exposed so far, in ideal order, over IDCG@10), then the raw gain
   newly exposed, then the weight. It stops when no candidate exposes a new antecedent, or at
   the budget.
4. **Reads**: after each search, the best newly exposed antecedent (highest tier, first shown)
   is read, which adds its abstract's keyphrases to the candidates.
5. **Ranking**: every antecedent found, by tier, then by when it was first exposed.

Probing candidates needs the search backend, so construction takes ``search``/``read`` callables
(a SearchEnv over the instance, see :func:`probe`); the rest is pure, apart from the
warehouse and file edges at the end. A demonstration is kept only if a fresh replay through
:class:`SearchEnv` exposes exactly what it claims (see :func:`check`), and then only if the
transcript it is exported as, read back from its text, is in OpenAI's fine-tuning format and
replays call by call, every tool answer the environment's (see :func:`check_transcript`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import duckdb

from inspire_build.env import transcript
from inspire_build.env.agents import candidate_phrases
from inspire_build.env.core import (
    DEFAULT_BUDGET,
    Backend,
    Found,
    PaperView,
    SearchEnv,
    Status,
    Task,
    Verdict,
    verdict,
)
from inspire_build.errors import InputError
from inspire_build.evaluation.funnel import Trajectory, oracle_gain
from inspire_build.evaluation.score import Scores, score
from inspire_build.tables import versions

DEPTH = 20  # the multi-query baseline's search depth
SHORTLIST = 20
NGRAM = 5  # a query may not hold a title 5-gram that the agent had not seen
FUNNEL = ("exposed_gain", "selected_gain", "ndcg@10")
_WORD = re.compile(r"[a-z0-9]+")


@dataclasses.dataclass(frozen=True)
class Antecedent:
    paper_id: str
    tier: int
    title: str | None
    abstract: str | None


@dataclasses.dataclass(frozen=True)
class GoldInstance:
    """A train instance with its gold: the builder's input, never shown to an agent."""

    task: Task
    antecedents: tuple[Antecedent, ...]

    @property
    def gains(self) -> dict[str, float]:
        return {a.paper_id: float(a.tier) for a in self.antecedents}


@dataclasses.dataclass(frozen=True)
class SearchCall:
    query: str
    k: int
    results: tuple[Found, ...]

    @property
    def exposed(self) -> tuple[str, ...]:
        return tuple(found.paper_id for found in self.results)


@dataclasses.dataclass(frozen=True)
class ReadCall:
    paper_id: str
    paper: PaperView


Action = SearchCall | ReadCall


@dataclasses.dataclass(frozen=True)
class Demonstration:
    instance_id: str
    brief: str
    cutoff: dt.date
    budget: int
    actions: tuple[Action, ...]
    ranking: tuple[str, ...]

    @property
    def queries(self) -> tuple[str, ...]:
        return tuple(a.query for a in self.actions if isinstance(a, SearchCall))

    def steps(self) -> tuple[tuple[str, ...], ...]:
        """The IDs each call exposed, as the funnel reads a trajectory."""
        return tuple(
            a.exposed if isinstance(a, SearchCall) else (a.paper.paper_id,) for a in self.actions
        )


def words(text: str | None) -> list[str]:
    return _WORD.findall((text or "").lower())


def candidate_weights(
    candidates: Sequence[str], antecedents: Sequence[Antecedent]
) -> dict[str, float]:
    """w(c) = Σ_a g(a)·|words(c) ∩ words(a)|/|words(c)| / Σ_a g(a), over titles and abstracts."""
    total = sum(a.tier for a in antecedents)
    vocab = [(a.tier, set(words(a.title)) | set(words(a.abstract))) for a in antecedents]
    weights = {}
    for phrase in candidates:
        mine = set(words(phrase))
        if not mine or not total:
            weights[phrase] = 0.0
            continue
        weights[phrase] = sum(t * len(mine & seen) / len(mine) for t, seen in vocab) / total
    return weights


def build(
    instance: GoldInstance,
    search: Callable[[str, int], Sequence[Found]],
    read: Callable[[str], PaperView | None],
    budget: int = DEFAULT_BUDGET,
    depth: int = DEPTH,
) -> Demonstration:
    """The greedy demonstration of the module docstring; ``search``/``read`` are hindsight
    probes (results are cached, so each candidate is probed once)."""
    gains = instance.gains
    pool = list(candidate_phrases(instance.task.brief))
    probed: dict[str, tuple[Found, ...]] = {}
    actions: list[Action] = []
    exposed: dict[str, int] = {}  # ID -> the call that first exposed it
    tried: set[str] = set()
    while len(actions) < budget:
        weights = candidate_weights([c for c in pool if c not in tried], instance.antecedents)
        shortlist = sorted(weights, key=lambda c: -weights[c])[:SHORTLIST]
        if not shortlist:
            break
        now, seen = oracle_gain(set(exposed), gains), set(exposed)
        values = {}
        for candidate in shortlist:
            if candidate not in probed:
                probed[candidate] = tuple(search(candidate, depth))
            new = {f.paper_id for f in probed[candidate]} - seen
            raw = sum(gains.get(d, 0.0) for d in new)
            values[candidate] = (oracle_gain(seen | new, gains) - now, raw, weights[candidate])
        best = max(shortlist, key=values.__getitem__)  # max keeps the first of equals
        if values[best][1] <= 0:
            break
        tried.add(best)
        call = SearchCall(best, depth, probed[best])
        actions.append(call)
        fresh = [d for d in call.exposed if d not in exposed]
        for d in fresh:
            exposed[d] = len(actions) - 1
        promising = sorted((d for d in fresh if d in gains), key=lambda d: -gains[d])
        if promising and len(actions) < budget:
            paper = read(promising[0])
            if paper is not None:
                actions.append(ReadCall(promising[0], paper))
                pool += [c for c in candidate_phrases(paper.abstract or "") if c not in pool]
    found = [d for d in exposed if d in gains]
    ranking = sorted(found, key=lambda d: (-gains[d], exposed[d]))
    task = instance.task
    return Demonstration(
        task.instance_id, task.brief, task.cutoff, budget, tuple(actions), tuple(ranking)
    )


def probe(
    instance: GoldInstance, backend: Backend
) -> tuple[Callable[[str, int], Sequence[Found]], Callable[[str], PaperView | None]]:
    """Hindsight probes through a SearchEnv (so its cutoff and target rules apply), unbudgeted."""
    env = SearchEnv(instance.task, 10**9, backend)
    return (lambda q, k: env.search(q, k).results), (lambda pid: env.read(pid).paper)


def ngrams(tokens: Sequence[str], n: int = NGRAM) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def copied_title_ngrams(
    demo: Demonstration, titles: Sequence[str | None], n: int = NGRAM
) -> list[tuple[str, tuple[str, ...]]]:
    """(query, n-gram) for each title n-gram a query holds that the agent had not seen: neither
    in the brief nor in the title or abstract of a paper read earlier in the trajectory."""
    title_grams = set().union(*(ngrams(words(t), n) for t in titles)) if titles else set()
    seen = ngrams(words(demo.brief), n)
    copied = []
    for action in demo.actions:
        if isinstance(action, ReadCall):
            seen |= ngrams(words(action.paper.title), n)
            seen |= ngrams(words(action.paper.abstract), n)
            continue
        for gram in sorted((ngrams(words(action.query), n) & title_grams) - seen):
            copied.append((action.query, gram))
    return copied


class Drop:
    """Why a demonstration was dropped (a demonstration may have several reasons)."""

    NO_GAIN = "no_antecedent_found"
    OVER_BUDGET = "over_budget"
    MISMATCH = "replay_exposure_mismatch"
    NOT_AVAILABLE = "read_not_available"
    WITHHELD = "touches_target_or_post_cutoff"
    UNEXPOSED = "submits_unexposed"
    TITLE_COPY = "copies_title_ngram"
    # Of the exported transcript itself (:func:`check_transcript`):
    SFT_FORMAT = "sft_format_invalid"
    TRANSCRIPT = "transcript_replay_mismatch"


def check(
    demo: Demonstration, instance: GoldInstance, backend: Backend
) -> tuple[list[str], SearchEnv]:
    """Replay ``demo`` through a fresh SearchEnv with the instance's cutoff and the demo's
    budget; the drop reasons (empty: keep it) and the replayed env."""
    task = instance.task
    env = SearchEnv(task, demo.budget, backend)
    reasons: list[str] = []
    for action in demo.actions:
        if isinstance(action, SearchCall):
            result = env.search(action.query, action.k)
            status, shown = result.status, tuple(f.paper_id for f in result.results)
            claimed = action.exposed
        else:
            answer = env.read(action.paper_id)
            status = answer.status
            shown = (answer.paper.paper_id,) if answer.paper else ()
            claimed = (action.paper.paper_id,)
        if status is Status.BUDGET_EXHAUSTED:
            reasons.append(Drop.OVER_BUDGET)
        elif status is Status.NOT_AVAILABLE:
            reasons.append(Drop.NOT_AVAILABLE)
        elif shown != claimed:
            reasons.append(Drop.MISMATCH)
    touched = {d for step in demo.steps() for d in step} | set(demo.ranking)
    for paper_id in sorted(touched):
        work = backend.read(paper_id)
        if work is None or verdict(work, task) is not Verdict.SHOWN:
            reasons.append(Drop.WITHHELD)
            break
    replayed = {d for step in env.steps for d in step.exposed}
    if not set(demo.ranking) <= replayed:
        reasons.append(Drop.UNEXPOSED)
    if copied_title_ngrams(demo, [a.title for a in instance.antecedents]):
        reasons.append(Drop.TITLE_COPY)
    if not set(demo.ranking) & set(instance.gains):
        reasons.append(Drop.NO_GAIN)
    return list(dict.fromkeys(reasons)), env


def chat_record(demo: Demonstration) -> dict[str, object]:
    """One line of OpenAI fine-tuning chat JSONL, in the LLM agent's own format
    (:mod:`inspire_build.env.transcript`): the brief, every tool call with its result as the
    environment answered it, the submission, and a closing assistant message."""
    messages = transcript.opening(demo.cutoff, demo.budget, demo.brief)
    left = demo.budget
    for number, action in enumerate(demo.actions, 1):
        left -= 1
        call = transcript.call_id(number)
        if isinstance(action, SearchCall):
            asked: dict[str, object] = {"query": action.query, "k": action.k}
            messages.append(transcript.tool_call(number, "search", asked))
            body = transcript.search_body("ok", action.results, left)
        else:
            messages.append(transcript.tool_call(number, "read", {"paper_id": action.paper_id}))
            body = transcript.read_body("ok", action.paper, left)
        messages.append(transcript.tool_answer(call, body))
    last = len(demo.actions) + 1
    messages.append(transcript.tool_call(last, "submit", {"ranking": list(demo.ranking)}))
    messages.append(
        transcript.tool_answer(transcript.call_id(last), transcript.submit_body("ok", demo.ranking))
    )
    messages.append(transcript.closing(len(demo.ranking)))
    return {"messages": messages, "tools": transcript.TOOLS}


def check_transcript(demo: Demonstration, instance: GoldInstance, backend: Backend) -> list[str]:
    """The drop reasons of ``demo``'s exported line (empty: export it): it is read back from its
    JSON text, checked against OpenAI's fine-tuning format, and replayed, call by call, on a
    fresh SearchEnv (:mod:`~inspire_build.env.transcript_replay`)."""
    from inspire_build.env import sft_format, transcript_replay

    line = json.loads(json.dumps(chat_record(demo), ensure_ascii=False))
    reasons = [Drop.SFT_FORMAT] if sft_format.problems(line) else []
    if transcript_replay.replay(line, instance.task, demo.budget, backend):
        reasons.append(Drop.TRANSCRIPT)
    return reasons


# ---- the warehouse and file edges ----


@dataclasses.dataclass(frozen=True)
class DemoOutcome:
    """Every demonstration built, and each one's drop reasons (empty: kept)."""

    demonstrations: tuple[Demonstration, ...]
    reasons: Mapping[str, tuple[str, ...]]

    @property
    def kept(self) -> list[Demonstration]:
        return [d for d in self.demonstrations if not self.reasons[d.instance_id]]

    def drop_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for reasons in self.reasons.values():
            for reason in reasons:
                counts[reason] = counts.get(reason, 0) + 1
        return dict(sorted(counts.items()))


def version_info(con: duckdb.DuckDBPyConnection, version: str) -> dict[str, object]:
    """The split version's ID, split and config hash, for the manifest."""
    row = versions.header(con, version)
    if row is None:
        raise InputError(f"no split version {version!r}")
    if row["split"] == "eval":
        raise InputError(
            "demonstrations are built from gold; building them on the eval split would train "
            "on the test set"
        )
    keys = ("version_id", "split", "config_hash", "code_version")
    return {key: row[key] for key in keys}


def load_instances(con: duckdb.DuckDBPyConnection, version: str) -> list[GoldInstance]:
    """One split version's instances with their graded antecedents (title and abstract from
    the corpus, else the warehouse's papers). Reads nothing of any other version."""
    from inspire_build.env import store

    graded: dict[str, list[Antecedent]] = {}
    for iid, paper_id, tier, title, abstract in versions.graded_with_text(con, version):
        graded.setdefault(str(iid), []).append(
            Antecedent(str(paper_id), int(tier), title, abstract)
        )
    return [
        GoldInstance(task, tuple(graded.get(task.instance_id, ())))
        for task in store.load_tasks(con, version)
    ]


def build_all(
    instances: Sequence[GoldInstance],
    backend: Backend,
    budget: int = DEFAULT_BUDGET,
    advance: Callable[[], None] = lambda: None,
) -> DemoOutcome:
    """Build a demonstration per instance and replay-check each one; one that passes is then
    checked as the transcript it is exported as (:func:`check_transcript`)."""
    demos, reasons = [], {}
    for instance in instances:
        demo = build(instance, *probe(instance, backend), budget=budget)
        demos.append(demo)
        found = check(demo, instance, backend)[0] or check_transcript(demo, instance, backend)
        reasons[demo.instance_id] = tuple(found)
        advance()
    return DemoOutcome(tuple(demos), reasons)


def funnel(demos: Sequence[Demonstration], instances: Sequence[GoldInstance]) -> Scores:
    """The demonstrations' own scores (funnel included) over ``instances``, by the evaluation
    module: an instance without a kept demonstration scores 0."""
    qrels = {i.task.instance_id: {a.paper_id: a.tier for a in i.antecedents} for i in instances}
    run = {d.instance_id: list(d.ranking) for d in demos}
    paths = {d.instance_id: Trajectory(d.steps()) for d in demos}
    return score(qrels, run, paths)


OPENAI_FILE = "demonstrations.jsonl"  # OpenAI chat fine-tuning JSONL
TRL_FILE = "demonstrations_trl.jsonl"  # TRL conversational rows: load with datasets.Json columns
FILES = (OPENAI_FILE, TRL_FILE, "run.jsonl", "trajectories.jsonl")


def _trajectory(demo: Demonstration) -> dict[str, object]:
    steps = [
        {
            "tool": "search" if isinstance(a, SearchCall) else "read",
            "query": a.query if isinstance(a, SearchCall) else a.paper_id,
            "exposed": list(step),
        }
        for a, step in zip(demo.actions, demo.steps(), strict=True)
    ]
    return {"instance_id": demo.instance_id, "steps": steps}


def write(
    out: Path,
    outcome: DemoOutcome,
    version: Mapping[str, object],
    scores: Scores,
    notes: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """The kept demonstrations as chat transcripts (:data:`OPENAI_FILE`, :data:`TRL_FILE`),
    run.jsonl and trajectories.jsonl (for ``inspire eval``; line *i* of each is the same
    instance), and manifest.json with ``notes`` added; returns the manifest."""
    from inspire_build.env.run import write_jsonl
    from inspire_build.env.sft_format import trl_row

    kept = outcome.kept
    records = [chat_record(d) for d in kept]
    write_jsonl(out / OPENAI_FILE, records)
    write_jsonl(out / TRL_FILE, (trl_row(r) for r in records))
    write_jsonl(
        out / "run.jsonl",
        ({"instance_id": d.instance_id, "ranking": list(d.ranking)} for d in kept),
    )
    write_jsonl(out / "trajectories.jsonl", (_trajectory(d) for d in kept))
    built = len(outcome.demonstrations)
    manifest: dict[str, object] = {
        **version,
        "instances": built,
        "kept": len(kept),
        "kept_share": len(kept) / built if built else 0.0,
        "budget": outcome.demonstrations[0].budget if built else None,
        "dropped": outcome.drop_counts(),
        "funnel": {m: scores.aggregate[m] for m in FUNNEL},
        "funnel_intervals": {m: list(scores.intervals[m]) for m in FUNNEL},
        "files": {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in FILES},
        **(notes or {}),
    }
    tmp = out / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, out / "manifest.json")
    return manifest


def build_version(
    con: duckdb.DuckDBPyConnection,
    version: str,
    budget: int = DEFAULT_BUDGET,
    started: Callable[[int], Callable[[], None]] = lambda _n: lambda: None,
) -> tuple[DemoOutcome, dict[str, object], list[GoldInstance]]:
    """A replay-checked demonstration per instance of a train version, over the corpus.
    ``started(instances)`` returns what to call after each instance (progress)."""
    from inspire_build.env import backends, store

    info = version_info(con, version)
    if not store.corpus_size(con):
        raise InputError("the corpus is empty; fill it with `inspire corpus build`")
    instances = load_instances(con, version)
    advance = started(len(instances))
    return build_all(instances, backends.LocalBackend(con), budget, advance), info, instances


def export(
    out_dir: Path,
    outcome: DemoOutcome,
    info: Mapping[str, object],
    instances: Sequence[GoldInstance],
) -> dict[str, object]:
    """Write the demonstrations (:func:`write`) and the toy keyphrase policy trained on the kept
    ones (``policy.json``, labelled in the manifest); returns the manifest."""
    from inspire_build.env.policy import TOY, train

    kept = outcome.kept
    out_dir.mkdir(parents=True, exist_ok=True)
    if kept:
        policy = train([(d.brief, d.queries) for d in kept])
        (out_dir / "policy.json").write_text(json.dumps(policy.to_json()) + "\n", encoding="utf-8")
    notes = {"policy": TOY} if kept else {}
    return write(out_dir, outcome, dict(info), funnel(kept, instances), notes)
