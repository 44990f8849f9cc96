"""The walk of a build counted in instances: round sizes, the version's targets, the rest."""

import pytest

from inspire_build.instances import Walk

ORDER = [f"t{i}" for i in range(10)]


def test_rounds_are_sized_from_the_prior_then_from_the_measured_yield() -> None:
    walk = Walk(ORDER, wanted=3, prior=0.5)
    # 3 / ((0 + 0.5 * 4) / (0 + 4)) = 6
    assert walk.next_round() == ORDER[:6]
    walk.record(["t0", "t2", "t3", "t5"], ["t3"])
    # yield (1 + 2) / (6 + 4) = 0.3; ceil(2 / 0.3) = 7, but 4 are left
    assert walk.next_round() == ORDER[6:]
    walk.record(["t7", "t8", "t9"], ["t7", "t9"])
    assert walk.next_round() == []
    assert walk.kept == ["t0", "t2", "t3", "t5", "t7", "t8", "t9"]
    assert (walk.surplus, walk.unreached, walk.short) == ([], [], 0)


def test_the_version_stops_at_the_wanted_instance() -> None:
    walk = Walk(ORDER, wanted=2, prior=0.9)
    assert walk.next_round() == ORDER[:3]  # ceil(2 / 0.9) = 3
    walk.record(["t0", "t1", "t2"], ["t0", "t1", "t2"])
    assert walk.next_round() == []
    assert walk.kept == ["t0", "t1"]
    assert walk.surplus == ["t2"]
    assert walk.unreached == ORDER[3:]


def test_candidates_running_out_leave_the_walk_short() -> None:
    walk = Walk(ORDER[:4], wanted=5, prior=0.9)
    assert walk.next_round() == ORDER[:4]
    walk.record(["t0", "t1"], ["t1"])
    assert walk.next_round() == []
    assert walk.short == 4
    assert walk.kept == ["t0", "t1"]


def test_without_a_count_one_round_takes_every_candidate() -> None:
    walk = Walk(ORDER, wanted=None)
    assert walk.next_round() == ORDER
    walk.record(ORDER[:6], ORDER[:2])
    assert walk.next_round() == []
    assert (walk.kept, walk.surplus, walk.short) == (ORDER[:6], [], 0)


def test_a_walk_that_accepts_nothing_asks_for_bounded_rounds() -> None:
    walk = Walk([f"t{i}" for i in range(1000)], wanted=2, prior=0.5)
    assert len(walk.next_round()) == 4  # 2 / 0.5
    walk.record([], [])
    # yield (0 + 2) / (4 + 4) = 0.25: 2 / 0.25 = 8
    assert len(walk.next_round()) == 8


def test_a_build_from_the_real_openalex_needs_a_size() -> None:
    from pydantic import SecretStr

    from inspire_build.config import Settings
    from inspire_build.errors import InputError
    from inspire_build.pipeline import check_sources

    keyed = Settings(openalex_api_key=SecretStr("k" * 20))
    with pytest.raises(InputError, match=r"needs a size.*--instances N.*inspire plan"):
        check_sources(keyed, "eval")
    check_sources(keyed.overridden("eval", instances=25), "eval")
    check_sources(keyed.overridden("eval", limit=80), "eval")
    check_sources(keyed.overridden(source_mode="replay"), "eval")  # replay asks nothing
    sandboxed = Settings(openalex_url="http://127.0.0.1:9")
    check_sources(sandboxed, "eval")  # a sandbox's whole window is the user's choice
