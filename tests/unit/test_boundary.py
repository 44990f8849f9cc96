"""The information boundary's pure parts: keyed IDs, cutoff offsets, windows, the normal form of
the leak scan, and the hash attack (which must find the old format and nothing keyed)."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspire_build import boundary
from inspire_build.cutoff import cutoff_date
from inspire_build.errors import InputError

KEY = bytes(range(32))
OTHER = bytes(range(1, 33))


def test_an_instance_id_is_an_hmac_under_the_key() -> None:
    expected = hmac.new(KEY, b"instance:eval-abc:arxiv:2501.00001", hashlib.sha256).hexdigest()
    assert boundary.instance_id(KEY, "eval-abc", "arxiv:2501.00001") == expected[:16]
    assert boundary.instance_id(OTHER, "eval-abc", "arxiv:2501.00001") != expected[:16]
    old = hashlib.sha256(b"inspire:eval-abc:arxiv:2501.00001").hexdigest()[:16]
    assert boundary.instance_id(KEY, "eval-abc", "arxiv:2501.00001") != old


def test_keys_parse_from_64_hex_digits_only() -> None:
    assert boundary.parse_key(KEY.hex().upper() + "\n") == KEY
    for bad in ("", "zz" * 32, KEY.hex()[:-2], KEY.hex() + "00"):
        with pytest.raises(InputError, match="64 hex digits"):
            boundary.parse_key(bad)
    assert len(boundary.new_key()) == 32 and boundary.new_key() != boundary.new_key()


def test_published_cutoffs_by_hand() -> None:
    assert boundary.published_cutoff(dt.date(2025, 5, 31), 0) == dt.date(2025, 2, 28)
    assert boundary.published_cutoff(dt.date(2025, 5, 31), 10) == dt.date(2025, 2, 18)
    assert boundary.published_cutoff(dt.date(2025, 3, 15), 30) == dt.date(2024, 11, 15)


def test_offsets_stay_in_range_and_rarely_give_the_exact_cutoff() -> None:
    assert {boundary.cutoff_offset(KEY, f"arxiv:{i}", 0) for i in range(200)} == {0}
    offsets = [boundary.cutoff_offset(KEY, f"arxiv:2501.{i:05d}", 30) for i in range(10_000)]
    assert min(offsets) == 0 and max(offsets) == 30
    exact = offsets.count(0) / len(offsets)
    assert exact < 0.10  # 1/31 expected: about 3%
    assert offsets != [
        boundary.cutoff_offset(OTHER, f"arxiv:2501.{i:05d}", 30) for i in range(10_000)
    ]


def test_consistent_dates_by_hand() -> None:
    # cutoff_date(d) = 2025-02-28 for d in 28..31 May (the months' end clamps)
    assert boundary.consistent_dates(dt.date(2025, 2, 28), 0) == (
        dt.date(2025, 5, 28),
        dt.date(2025, 5, 31),
    )
    assert boundary.consistent_dates(dt.date(2025, 1, 10), 0) == (
        dt.date(2025, 4, 10),
        dt.date(2025, 4, 10),
    )
    assert boundary.consistent_dates(dt.date(2025, 1, 10), 30) == (
        dt.date(2025, 4, 10),
        dt.date(2025, 5, 9),
    )


@given(
    st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2030, 12, 31)),
    st.integers(min_value=0, max_value=60),
    st.data(),
)
def test_the_window_of_a_published_cutoff_holds_the_target(
    day: dt.date, jitter: int, data: st.DataObject
) -> None:
    offset = data.draw(st.integers(min_value=0, max_value=jitter))
    first, last = boundary.consistent_dates(boundary.published_cutoff(day, offset), jitter)
    assert first <= day <= last
    assert cutoff_date(first - dt.timedelta(days=1)) < boundary.published_cutoff(day, offset)
    assert cutoff_date(last + dt.timedelta(days=1)) > cutoff_date(day) + dt.timedelta(
        days=jitter - offset
    )


def test_the_normal_form_folds_case_accents_compatibility_and_punctuation() -> None:
    assert (
        boundary.normal_text("  Résumé  ﬁne-Tuning\tfor\nLLMs! ") == " resume fine tuning for llms "
    )
    assert boundary.normal_text("10.48550/arXiv.2310.00826") == " 10 48550 arxiv 2310 00826 "
    normal = boundary.normal_text("We build on Café Attention — Networks, as before.")
    assert boundary.found_in(["cafe attention networks", "attention net"], normal) == [
        "cafe attention networks"
    ]


def test_the_hash_attack_finds_the_old_format_and_nothing_keyed() -> None:
    version, targets = "eval-0123456789ab", ["arxiv:2501.00001", "openalex:W42", "arxiv:2502.7"]
    old = [hashlib.sha256(f"inspire:{version}:{t}".encode()).hexdigest()[:16] for t in targets]
    keyed = [boundary.instance_id(KEY, version, t) for t in targets]
    publics = [version, "eval", "0123456789ab", ""]
    candidates = [*targets, "arxiv:1999.00001", "W42"]
    found = boundary.hash_attack([*old, *keyed], candidates, publics, version)
    assert set(found.recovered) == set(old)
    assert "arxiv:2501.00001 under sha256(inspire:" in found.recovered[old[0]]
    assert found.tried == len(boundary.HASH_FORMATS) * len(publics) * len(candidates)
    # our HMAC format keyed by a public string (no secret) is tried, and falls
    weak = [boundary.instance_id(b"eval", version, t) for t in targets]
    assert set(boundary.hash_attack(weak, candidates, publics, version).recovered) == set(weak)


def test_chance_is_the_uniform_guess_over_each_window() -> None:
    # windows of 2, 4 and 20: top-1 (1/2 + 1/4 + 1/20) / 3 = 0.8 / 3; top-10 (1 + 1 + 0.5) / 3
    assert boundary.chance([2, 4, 20]) == pytest.approx((0.8 / 3, 2.5 / 3))
    assert boundary.chance([]) == (0.0, 0.0)
    ranked = boundary.ranked_attacker("bm25", [1, 3, None, 12], [10, 10, 10, 40])
    assert (ranked.n, ranked.top1, ranked.top10) == (4, 0.25, 0.5)
    assert ranked.chance1 == pytest.approx((0.1 * 3 + 0.025) / 4)


def _attacker(top1: float, name: str = "bm25") -> boundary.Attacker:
    return boundary.Attacker(name, 40, top1, 0.5, 0.02, 0.2)


def test_the_verdict_gates_on_the_strongest_attacker_and_the_smallest_anonymity_set() -> None:
    sets = [25] * 40
    judged = boundary.judge([_attacker(0.05), _attacker(0.01, "guess")], sets, 0, 0.05, 20)
    assert judged == boundary.Judgement(boundary.Verdict.PASSED, ())  # 5% is within the limit
    judged = boundary.judge([_attacker(0.01), _attacker(0.075, "guess")], sets, 0, 0.05, 20)
    assert judged.verdict is boundary.Verdict.FAILED
    assert judged.reasons == ("guess ranks 7.5% of targets first (limit 5%, chance 2.0%)",)
    judged = boundary.judge([_attacker(0.0)], [*sets[:-1], 3], 1, 0.05, 20)
    assert judged.reasons == (
        "the hash attack recovered 1 instance ID(s)",
        "1 of 40 window(s) hold fewer than 20 selectable papers (smallest 3)",
    )


def test_a_version_too_small_to_show_the_limit_is_too_sparse_to_judge() -> None:
    # 19 instances: one hit would be 5.3%, so a top-1 share of 0 cannot show 5% holds
    judged = boundary.judge([_attacker(0.0)], [30] * 19, 0, 0.05, 20)
    assert judged.verdict is boundary.Verdict.TOO_SPARSE
    assert judged.line("boundary of v") == (
        "boundary of v: TOO SPARSE TO JUDGE: 19 instance(s): a top-1 share under 5% needs 20"
    )
    assert boundary.judge([_attacker(0.0)], [30] * 20, 0, 0.05, 20).verdict.value == "passed"


def test_a_rank_counts_the_papers_scoring_above_alone() -> None:
    scores = {"b": 2.0, "a": 1.0, "z": 2.0, "c": 0.5}
    assert boundary.rank_of("z", scores) == 1 == boundary.rank_of("b", scores)  # a tie: both 1
    assert boundary.rank_of("a", scores) == 3 and boundary.rank_of("c", scores) == 4
    assert boundary.rank_of("q", scores) is None


def test_bm25_ranks_by_the_window_statistics_alone() -> None:
    docs = {"x": Counter(["a", "c", "c"]), "y": Counter(["a", "b"]), "z": Counter(["d"])}
    # n 3, avg length 2; idf(a) = ln(1 + 1.5/2.5), idf(b) = ln(1 + 2.5/1.5). y holds both.
    scores = boundary.bm25_scores(["a", "b"], docs)
    assert sorted(scores, key=lambda p: -scores[p]) == ["y", "x"]
    assert boundary.bm25_scores(["q"], docs) == {} and boundary.bm25_scores(["a"], {}) == {}
