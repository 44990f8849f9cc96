"""The bootstrap over groups of items, by hand: which resamples exist, and where their 2.5th and
97.5th percentiles must fall."""

from __future__ import annotations

from inspire_build.evaluation import bootstrap


def _share(items: list[bool]) -> float:
    return sum(items) / len(items)


def test_groups_that_all_agree_give_a_point_interval() -> None:
    groups = [[True, True], [True], [True, True, True]]
    assert bootstrap.grouped_interval(groups, _share, samples=200, seed=1) == (1.0, 1.0)


def test_groups_are_resampled_whole_and_their_items_pooled() -> None:
    """Two groups: A (three items, all true) and B (one, false). A resample of two groups is
    AA (share 1), AB or BA (3 of 4: 0.75) or BB (0), each of AA and BB with chance 1/4: over
    1,000 resamples both ends carry far more than 2.5%, so the interval is exactly (0, 1), and
    no resample ever gives 0.5, as drawing the four items one by one would."""
    groups = [[True, True, True], [False]]
    assert bootstrap.grouped_interval(groups, _share, samples=1000, seed=7) == (0.0, 1.0)
    seen: set[float] = set()

    def recorded(items: list[bool]) -> float:
        seen.add(_share(items))
        return 0.0

    bootstrap.grouped_interval(groups, recorded, samples=50, seed=7)
    assert seen == {0.0, 0.75, 1.0}


def test_the_interval_is_seeded_and_no_group_gives_zeros() -> None:
    groups = [[True], [False], [True], [True], [False, True]]
    first = bootstrap.grouped_interval(groups, _share, samples=300, seed=3)
    assert first == bootstrap.grouped_interval(groups, _share, samples=300, seed=3)
    assert bootstrap.grouped_interval([], _share) == (0.0, 0.0)


def test_a_resample_with_no_denominator_has_no_ratio_and_is_left_out() -> None:
    # Only the first instance exposed any gain, and kept all of it: every resample that holds it
    # keeps 1.0; one that does not has no ratio (0/0), which is no evidence of 0.
    assert bootstrap.ratio_interval([1.0, 0.0, 0.0], [1.0, 0.0, 0.0], samples=200) == (1.0, 1.0)
    assert bootstrap.ratio_interval([0.0, 0.0], [0.0, 0.0], samples=50) is None  # undefined
    low, high = bootstrap.ratio_interval([1.0, 1.0, 0.0], [2.0, 1.0, 1.0], samples=500)
    assert 0.0 <= low <= 0.5 <= high <= 1.0  # the estimate, 2/4, inside its interval
