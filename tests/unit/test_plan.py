"""The plan's arithmetic, by hand: chunks, HTTP calls, grading, the walk, wall time."""

import dataclasses

from inspire_build import plan

LIMITS = plan.Limits(
    chunk_size=20,
    first_chunk=None,
    brief_attempts=3,
    grade_readings=2,
    grade_part_tokens=6000,
    searches=False,
    rates={"openalex": 10.0, "s2": 1.0, "arxiv": 0.5},
    llm_concurrency=8,
    llm_latency_s=4.0,
    llm_rpm=None,
    llm_tpm=None,
    price=(1.0, 2.0),
)


def test_chunks_grow_as_the_build_chunks_them() -> None:
    small = dataclasses.replace(LIMITS, chunk_size=4)
    assert plan.chunk_sizes(10, small) == [4, 4, 2]
    assert plan.chunk_sizes(10, dataclasses.replace(small, first_chunk=1)) == [1, 2, 4, 3]


def test_http_calls_follow_the_batches() -> None:
    built = [plan.Candidate(150, 10), plan.Candidate(50, 10)]
    # 202 works (references and targets): OpenAlex 3 calls, S2 one batch and a page each,
    # arXiv 3 calls
    assert plan.http_calls(built, LIMITS, plan.Profile()) == {"openalex": 3, "s2": 3, "arxiv": 3}
    searched = dataclasses.replace(LIMITS, searches=True)
    profile = plan.Profile(to_llm=0.5, brief_attempts=2)
    assert plan.http_calls(built, searched, profile)["openalex"] == 3 + 2  # 2 x 0.5 x 2 briefs


def test_grading_packs_references_into_parts() -> None:
    profile = plan.Profile(eligible=0.5, reference_extra=40, deciding=1, grade_out_per_reference=25)
    calls, tokens_in, tokens_out = plan.grade_figures(
        plan.Candidate(100, 100), 600, 100, LIMITS, profile
    )
    # 50 eligible x 140 tokens = 7,000 over parts of 6,000 - 700: 2 parts, read twice, + 1
    assert calls == 5
    assert tokens_in == 2 * (2 * 700 + 7000) + 700
    assert tokens_out == 2 * 50 * 25


def test_the_walk_the_plan_expects() -> None:
    half = plan.Profile(instance_yield=0.5)
    assert plan.reached(100, 10, half) == 20  # one round of 10 / 0.5, yielding 10
    assert plan.reached(100, None, half) == 100
    assert plan.reached(15, 10, half) == 15  # the candidates run out


def test_wall_time_is_the_longer_of_lineage_and_the_llm_steps() -> None:
    http = {"openalex": 10, "s2": 5}
    assert plan.wall_seconds(http, 40, 1000, LIMITS) == 20.0  # 40 x 4 s / 8 against 1 + 5 s
    assert plan.wall_seconds(http, 40, 1000, dataclasses.replace(LIMITS, llm_rpm=60)) == 40.0
    assert plan.wall_seconds(http, 1, 1000, LIMITS) == 6.0


def test_a_measured_profile_reads_an_earlier_build() -> None:
    targets = {
        "reached": 20,
        "left_by_lineage": 4,
        "briefed": 16,
        "briefs": 40,
        "graded": 12,
        "accepted": 10,
        "references": 800,
        "eligible": 640,
    }
    steps = {"brief": (40, 500.0, 200.0, 3.0), "audit_mechanism": (20, 300.0, 10.0, 1.0)}
    profile = plan.measured(targets, steps, readings=2)
    assert profile is not None
    assert (profile.instance_yield, profile.to_llm, profile.brief_attempts) == (0.5, 0.8, 2.5)
    assert (profile.mechanism, profile.graded, profile.eligible) == (0.5, 0.75, 0.8)
    assert profile.brief_out == 200
    assert plan.measured({**targets, "briefed": 0}, steps, 2) is None
    assert plan.mean_latency(steps) == (40 * 3.0 + 20 * 1.0) / 60


def test_an_unpriced_model_has_no_cost() -> None:
    built = [plan.Candidate(40, 100)] * 4
    sizes = dict.fromkeys(plan.STEPS, 300)
    priced = plan.estimate(built, 2, sizes, LIMITS)
    assert priced.llm_cost_usd is not None and priced.llm_cost_usd > 0
    assert (
        plan.estimate(built, 2, sizes, dataclasses.replace(LIMITS, price=None)).llm_cost_usd is None
    )
    assert priced.reached == 4 and priced.candidates == 4
    unpriced = plan.estimate(built, 2, sizes, dataclasses.replace(LIMITS, price=None))
    # what the build's last lines say: an unknown cost, never "$0.0000 spent"
    assert plan.actual_lines(unpriced, {}, 12, 0.0)[-1] == (
        "LLM cost: unknown (the model has no price: INSPIRE_LLM_PRICES)"
    )
    assert plan.actual_lines(priced, {}, 12, 0.5)[-1].startswith("LLM cost: $0.5000 spent, $")
