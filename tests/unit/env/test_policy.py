"""env/policy.py: the keyphrase features by hand, and a policy that learns which keyphrases the
hindsight demonstrations choose."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from inspire_build.env.policy import FEATURES, Policy, features, train
from inspire_build.errors import InputError


def test_policy_features_by_hand() -> None:
    brief = "Problem. Robust estimation matters. Goal. Fast robust estimation."
    candidates, x = features(brief, {"robust": 1, "estimation": 2}, 3)
    assert candidates == ["problem", "robust estimation matters", "goal", "fast robust estimation"]
    row = dict(zip(FEATURES, x[1], strict=True))
    assert row["position"] == pytest.approx(1 / 3)
    assert row["length"] == 1.0
    # idf: mean of log(4/2), log(4/3), log(4/1) over the three words
    assert row["idf"] == pytest.approx((0.6931472 + 0.2876821 + 1.3862944) / 3)
    assert row["suffix"] == pytest.approx(1 / 3)  # "estimation"
    assert row["section_problem"] == 1.0 and row["section_goal"] == 0.0
    assert dict(zip(FEATURES, x[3], strict=True))["section_goal"] == 1.0


def test_policy_learns_which_keyphrases_demonstrations_choose(tmp_path: Any) -> None:
    # Demonstrations always search the phrase of the Goal section: the policy must rank it first.
    examples = [
        (
            f"Problem. Word{i} alpha. Context. Some thing{i}. Goal. Target{i} aim{i}.",
            [f"target{i} aim{i}"],
        )
        for i in range(12)
    ]
    policy = train(examples)
    ranked = policy("Problem. Other words. Goal. Wanted phrase here.")
    assert ranked[0].phrase == "wanted phrase" and ranked[0].weight == 1.0
    assert all(0 < k.weight <= 1 for k in ranked)
    assert train(examples) == policy  # deterministic
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy.to_json()), encoding="utf-8")
    assert Policy.load(path) == policy


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"weights": [1.0]}, "weights is not a list of 9 numbers"),
        ({"weights": ["a"] * 9}, "weights holds a value that is not a finite number"),
        ({"weights": [[1.0]] * 9}, "weights holds a value that is not a finite number"),
        ({"weights": [True] * 9}, "weights holds a value that is not a finite number"),
        ({"weights": [float("nan")] * 9}, "weights holds a value that is not a finite number"),
        ({"bias": float("inf")}, "bias holds a value that is not a finite number"),
        ({"scale": [0.0] * 9}, "scale holds a value that is not above 0"),
        ({"n_briefs": -5}, "df and n_briefs are counts"),
        ({"df": {"x": -1}}, "df and n_briefs are counts"),
    ],
)
def test_a_policy_of_another_shape_is_refused_naming_what(
    tmp_path: Any, change: dict[str, Any], said: str
) -> None:
    good = train([(f"Problem. W{i} a. Goal. T{i} b{i}.", [f"t{i} b{i}"]) for i in range(4)])
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({**good.to_json(), **change}), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(said)):
        Policy.load(path)
