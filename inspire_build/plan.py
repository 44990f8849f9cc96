"""Pure: what a build will ask and spend, before it starts (``inspire plan``, and the plan a
build prints first).

From the candidates the listing gave (in the order the build walks them, each with its listed
reference count and its text's size), the walk the build will take (:mod:`instances`), the
prompts' sizes and a :class:`Profile` of per-target rates (priors, or an earlier build's
measured figures), it counts the HTTP calls per source, the LLM calls and tokens per step, the
cost from the price map, and the wall time from the rate limits and the LLM concurrency.

The request counts follow the code's batching (resolve.lower_bound): per lineage chunk, one
OpenAlex call per 100 referenced works, one S2 batch per 500, one arXiv call per 100 (every
reference counted as on arXiv: an upper bound); per target, one S2 reference page per 1,000
references; per brief, one OpenAlex search (the identity check). References shared between
targets are counted each time, so on a corpus where they overlap the plan is high.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from inspire_build.instances import Walk

OPENALEX_PER_CALL, S2_BATCH, S2_REFERENCE_PAGE, ARXIV_PER_CALL = 100, 500, 1000, 100
PRIOR_LATENCY_S = 4.0  # a hosted model's mean latency per call, before any is measured
STEPS = ("brief", "audit_identity", "audit_mechanism_guess", "audit_mechanism", "grade")


@dataclasses.dataclass(frozen=True)
class Candidate:
    references: int  # as the listing counts them
    text_tokens: int  # its title and abstract


@dataclasses.dataclass(frozen=True)
class Profile:
    """Per-target rates. The priors assume a model that leaks now and then; an earlier build's
    measured figures replace them (:func:`inspire_build.tables.plan_inputs.measured_profile`)."""

    instance_yield: float = 0.5  # instances per candidate reached
    to_llm: float = 0.9  # reached candidates whose lineage leaves them to the LLM steps
    brief_attempts: float = 2.0  # briefs per target (up to Settings.brief_attempts)
    mechanism: float = 0.7  # briefs the mechanism audit reads (those the cheaper checks pass)
    graded: float = 0.75  # targets whose brief passed, and so are graded
    eligible: float = 0.9  # eligible references per listed reference
    deciding: float = 1.0  # deciding grade calls per graded target (where readings split)
    brief_out: int = 220  # tokens of a brief
    audit_out: int = 15  # tokens of an audit's answer
    grade_out_per_reference: int = 25  # tokens of a reference's grade in the answer
    reference_extra: int = 40  # tokens a reference shows beside its text: contexts, intents
    origin: str = "prior"  # or what it was measured on


@dataclasses.dataclass(frozen=True)
class Limits:
    """The settings a plan reads."""

    chunk_size: int
    first_chunk: int | None  # pipeline.lineage_chunks: the openai backend's growing chunks
    brief_attempts: int
    grade_readings: int
    grade_part_tokens: int
    searches: bool  # briefs are searched on OpenAlex (a client is given)
    rates: Mapping[str, float]  # calls per second: openalex, s2, arxiv
    llm_concurrency: int
    llm_latency_s: float  # a call's mean latency (measured, else a prior)
    llm_rpm: int | None
    llm_tpm: int | None
    price: tuple[float, float] | None  # USD per million tokens in, out


@dataclasses.dataclass(frozen=True)
class Plan:
    candidates: int
    reached: int  # candidates the walk is expected to build
    instances: int  # expected
    http_calls: dict[str, int]
    llm_calls: dict[str, int]
    llm_tokens_in: int
    llm_tokens_out: int
    llm_cost_usd: float | None  # None: the model has no price
    wall_s: float
    profile: str

    def figures(self) -> dict[str, object]:
        """The plan as ``inspire plan --json`` prints it."""
        fields = dataclasses.asdict(self)
        return {
            **fields,
            "http_calls": sum(self.http_calls.values()),
            "http_by_source": self.http_calls,
            "llm_calls": sum(self.llm_calls.values()),
            "llm_by_step": self.llm_calls,
        }


def reached(count: int, wanted: int | None, profile: Profile) -> int:
    """Candidates the walk builds if each round yields as the profile says."""
    walk = Walk(range(count), wanted, profile.instance_yield)  # type: ignore[arg-type]
    while part := walk.next_round():  # a round yields at least one, so the walk moves on
        walk.record([], [""] * max(1, math.floor(len(part) * profile.instance_yield + 1e-9)))
    return walk.taken


def estimate(
    candidates: Sequence[Candidate],
    wanted: int | None,
    prompt_tokens: Mapping[str, int],
    limits: Limits,
    profile: Profile = Profile(),
) -> Plan:
    """The plan for building towards ``wanted`` instances (None: every candidate)."""
    built = list(candidates[: reached(len(candidates), wanted, profile)])
    http = http_calls(built, limits, profile)
    calls, tokens_in, tokens_out = llm_figures(built, prompt_tokens, limits, profile)
    cost = None
    if limits.price is not None:
        cost = (tokens_in * limits.price[0] + tokens_out * limits.price[1]) / 1_000_000
    instances = min(len(built), round(len(built) * profile.instance_yield))
    return Plan(
        candidates=len(candidates),
        reached=len(built),
        instances=instances if wanted is None else min(wanted, instances),
        http_calls=http,
        llm_calls=calls,
        llm_tokens_in=tokens_in,
        llm_tokens_out=tokens_out,
        llm_cost_usd=None if cost is None else round(cost, 4),
        wall_s=round(wall_seconds(http, sum(calls.values()), tokens_in, limits), 1),
        profile=profile.origin,
    )


def chunk_sizes(count: int, limits: Limits) -> list[int]:
    """pipeline.chunks' sizes for ``count`` targets."""
    sizes, length = [], min(limits.first_chunk or limits.chunk_size, limits.chunk_size)
    while count > 0:
        sizes.append(min(length, count))
        count, length = count - length, min(2 * length, limits.chunk_size)
    return sizes


def http_calls(built: Sequence[Candidate], limits: Limits, profile: Profile) -> dict[str, int]:
    openalex = s2 = arxiv = 0
    start = 0
    for size in chunk_sizes(len(built), limits):
        chunk = built[start : start + size]
        start += size
        references = sum(c.references for c in chunk) + len(chunk)  # and the targets
        openalex += math.ceil(references / OPENALEX_PER_CALL)
        s2 += math.ceil(references / S2_BATCH)
        s2 += sum(max(1, math.ceil(c.references / S2_REFERENCE_PAGE)) for c in chunk)
        arxiv += math.ceil(references / ARXIV_PER_CALL)
    if limits.searches:
        openalex += round(len(built) * profile.to_llm * profile.brief_attempts)
    return {"openalex": openalex, "s2": s2, "arxiv": arxiv}


def llm_figures(
    built: Sequence[Candidate],
    prompt_tokens: Mapping[str, int],
    limits: Limits,
    profile: Profile,
) -> tuple[dict[str, int], int, int]:
    """LLM calls per step, and tokens in and out, for the targets ``built``."""
    calls = dict.fromkeys(STEPS, 0.0)
    tokens_in = tokens_out = 0.0
    attempts = min(profile.brief_attempts, limits.brief_attempts)
    reference_text = sum(c.text_tokens for c in built) / max(1, len(built))
    for target in built:
        briefs, text = profile.to_llm * attempts, target.text_tokens
        per_brief = {
            "brief": (1.0, prompt_tokens["brief"] + text, profile.brief_out),
            "audit_identity": (1.0, prompt_tokens["audit_identity"], 0),
            "audit_mechanism_guess": (1.0, prompt_tokens["audit_mechanism_guess"], 0),
            "audit_mechanism": (profile.mechanism, prompt_tokens["audit_mechanism"] + text, 0),
        }
        for step, (share, asked, answered) in per_brief.items():
            if step.startswith("audit"):  # an audit reads the brief, answers in a line
                asked, answered = asked + profile.brief_out, profile.audit_out
            calls[step] += briefs * share
            tokens_in += briefs * share * asked
            tokens_out += briefs * share * answered
        grade = grade_figures(target, prompt_tokens["grade"], reference_text, limits, profile)
        graded = profile.to_llm * profile.graded
        calls["grade"] += graded * grade[0]
        tokens_in += graded * grade[1]
        tokens_out += graded * grade[2]
    return {k: round(v) for k, v in calls.items()}, round(tokens_in), round(tokens_out)


def grade_figures(
    target: Candidate, prompt: int, reference_text: float, limits: Limits, profile: Profile
) -> tuple[float, float, float]:
    """A graded target's grade calls, tokens in and out: each reading packs the eligible
    references into parts of at most grade_part_tokens (grading.plan_parts); a deciding
    reading rereads the split ones in a part of its own."""
    eligible = profile.eligible * target.references
    shown = eligible * (reference_text + profile.reference_extra)
    frame = prompt + target.text_tokens
    parts = max(1, math.ceil(shown / max(1, limits.grade_part_tokens - frame)))
    readings = limits.grade_readings
    calls = readings * parts + profile.deciding
    tokens_in = readings * (parts * frame + shown) + profile.deciding * frame
    tokens_out = readings * eligible * profile.grade_out_per_reference
    return calls, tokens_in, tokens_out


def wall_seconds(http: Mapping[str, int], calls: int, tokens_in: int, limits: Limits) -> float:
    """Lineage's requests at each source's rate, beside the LLM calls at the concurrency's
    pace (or the provider's limits, when slower): the build takes the longer of the two."""
    http_s = sum(n / limits.rates[source] for source, n in http.items())
    llm_s = calls * limits.llm_latency_s / limits.llm_concurrency
    if limits.llm_rpm:
        llm_s = max(llm_s, 60 * calls / limits.llm_rpm)
    if limits.llm_tpm:
        llm_s = max(llm_s, 60 * tokens_in / limits.llm_tpm)
    return max(http_s, llm_s)


def measured(
    targets: Mapping[str, int], steps: Mapping[str, tuple[int, float, float, float]], readings: int
) -> Profile | None:
    """The profile an earlier build of the split measured (None: it briefed no target), from
    :func:`inspire_build.tables.plan_inputs.target_figures` and ``step_figures``."""
    reached, briefed = targets["reached"], targets["briefed"]
    if not reached or not briefed:
        return None
    prior, to_llm = Profile(), (reached - targets["left_by_lineage"]) / reached
    eligible_per_target = targets["eligible"] / max(1, reached - targets["left_by_lineage"])

    def mean_out(step: str, default: float) -> int:
        return round(steps[step][2]) if step in steps else round(default)

    grade_out = prior.grade_out_per_reference
    if "grade" in steps and targets["graded"] and eligible_per_target:
        total = steps["grade"][0] * steps["grade"][2] / targets["graded"]
        grade_out = round(total / (eligible_per_target * readings))
    briefs = steps.get("brief", (0, 0.0, 0.0, 0.0))[0]
    return Profile(
        instance_yield=targets["accepted"] / reached,
        to_llm=to_llm,
        brief_attempts=targets["briefs"] / briefed,
        mechanism=steps["audit_mechanism"][0] / briefs
        if briefs and "audit_mechanism" in steps
        else prior.mechanism,
        graded=targets["graded"] / briefed,
        eligible=targets["eligible"] / targets["references"]
        if targets["references"]
        else prior.eligible,
        brief_out=mean_out("brief", prior.brief_out),
        audit_out=mean_out("audit_identity", prior.audit_out),
        grade_out_per_reference=grade_out,
        origin=f"measured on {reached} targets an earlier build of the split reached",
    )


def mean_latency(steps: Mapping[str, tuple[int, float, float, float]]) -> float | None:
    """The model's mean latency per call over the call log (None: no call)."""
    calls = sum(n for n, *_ in steps.values())
    return sum(n * s for n, _, _, s in steps.values()) / calls if calls else None


def lines(planned: Plan, model: str) -> list[str]:
    """The plan as a person reads it."""
    cost = "unknown: no price for it in INSPIRE_LLM_PRICES"
    if planned.llm_cost_usd is not None:
        cost = f"${planned.llm_cost_usd:,.2f}"
    by_source = ", ".join(f"{n:,} {s}" for s, n in planned.http_calls.items())
    by_step = ", ".join(f"{n:,} {s}" for s, n in planned.llm_calls.items())
    return [
        f"candidates: {planned.candidates:,}; the build would reach {planned.reached:,} of them "
        f"for about {planned.instances:,} instances",
        f"HTTP calls: {sum(planned.http_calls.values()):,} ({by_source})",
        f"LLM calls ({model}): {sum(planned.llm_calls.values()):,} ({by_step})",
        f"LLM tokens: {planned.llm_tokens_in:,} in, {planned.llm_tokens_out:,} out; cost {cost}",
        f"wall time: about {planned.wall_s / 60:,.1f} min",
        f"rates: {planned.profile}",
    ]


def actual_lines(
    planned: Plan, http: Mapping[str, int], llm_calls: int, spent_usd: float
) -> list[str]:
    """What a build asked, beside what its plan said."""

    def beside(made: int, said: int) -> str:
        return f"{made:,} made, {said:,} planned" + (f" ({made / said:.2f}x)" if said else "")

    by_source = ", ".join(f"{s} {beside(n, planned.http_calls.get(s, 0))}" for s, n in http.items())
    return [
        f"HTTP calls: {beside(sum(http.values()), sum(planned.http_calls.values()))} ({by_source})",
        f"LLM calls: {beside(llm_calls, sum(planned.llm_calls.values()))}",
        f"LLM cost: ${spent_usd:,.4f} spent"
        + ("" if planned.llm_cost_usd is None else f", ${planned.llm_cost_usd:,.4f} planned")
        if planned.llm_cost_usd is not None or not llm_calls
        else "LLM cost: unknown (the model has no price: INSPIRE_LLM_PRICES)",
    ]
