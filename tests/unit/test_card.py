"""The card's figures beside the paper's Table 5, hand-computed."""

from __future__ import annotations

import random

import pytest
import yaml

from inspire_build import card
from inspire_build.text import content_words


def test_beside_the_papers_eval_row() -> None:
    lines = card.beside_paper("eval", [4, 10, 12], {3: 1, 2: 7, 1: 12}, [170, 190], 6)
    table = "\n".join(lines)
    assert "| antecedents per instance, median | 10 | 10 |" in table
    # ours: 26 / 3 = 8.67; the paper's: 3,574 / 476 = 7.51
    assert "| antecedents per instance, mean | 8.67 | 7.51 |" in table
    # ours: 1/20, 7/20, 12/20; the paper's: 179, 1,244, 2,151 of 3,574
    assert "| share of T3 / T2 / T1 | 5.0% / 35.0% / 60.0% | 5.0% / 34.8% / 60.2% |" in table
    assert "| brief words, mean | 180.0 | 179.3 |" in table
    assert "| instances per selected target | 0.50 (3 of 6) | not reported |" in table


def test_distinct_problems_counts_problems_no_other_brief_restates() -> None:
    frame = "frameone frametwo framethree framefour framefive framesix frameseven frameeight "
    frame += "framenine"  # nine words every problem holds: the shared frame, not counted
    own = ["alpha beta gamma delta", "alpha beta gamma delta", "alpha beta gamma epsilon"]
    own += ["kappa lambda", "kappa lambda omicron", "omega", "sigma upsilon"]
    problems = [f"{frame} {words}" for words in own]
    # Less the frame: 1 and 2 are one problem; 3 holds 3 of its 4 words in 1 (0.75 < 0.9): its
    # own; 4's 2 words are all in 5 (not its own), 5 holds 2 of 3 in 4 (its own); 6 and 7 share
    # nothing. Own: 3, 5, 6, 7.
    assert card.distinct_problems(problems) == 4
    # Counting the frame: 3 holds 12 of 13 words in 1, 5 11 of 12 in 4, 6 9 of 10 in 7 (all at
    # least 0.9); only 7 (9 of 11 in 6) is its own.
    assert card.distinct_problems(problems, frame=1.0) == 1
    assert card.distinct_problems([]) == 0


def _brute_force(bags: list[set[str]], overlap: float) -> int:
    return sum(
        bool(bag) and all(len(bag & o) < overlap * len(bag) for j, o in enumerate(bags) if j != i)
        for i, bag in enumerate(bags)
    )


@pytest.mark.parametrize("seed", range(20))
def test_distinct_problems_compares_only_holders_of_rare_words_and_misses_none(seed: int) -> None:
    rng = random.Random(seed)
    letters = "bcdfghjklmnpqrstvwxz"
    vocabulary = ["".join(rng.choices(letters, k=4)) + "ora" for _ in range(rng.randint(5, 40))]
    bags = [set(rng.sample(vocabulary, rng.randint(0, 5))) for _ in range(rng.randint(1, 60))]
    bags += [set(rng.choice(bags)) | {rng.choice(vocabulary)} for _ in range(10)]  # near copies
    problems = [" ".join(sorted(bag)) for bag in bags]
    assert [set(content_words(p)) for p in problems] == bags  # each word a content word
    for overlap in (0.5, 0.75, 0.9, 1.0):
        # frame=1.0: no word is left out, so the bags are the statements' words as drawn
        assert card.distinct_problems(problems, overlap, frame=1.0) == _brute_force(bags, overlap)


def test_the_card_counts_briefs_by_their_first_paragraph() -> None:
    field = "Problem: Ranking of lumen corpora stays fragile when tessel and orvi interact."
    briefs = [
        f"{field}\n\nContext: {framing}"
        for framing in ("Earlier efforts differ.", "Evidence should come from data.")
    ]
    briefs += [f"{field} Current ranking breaks down under {s}.\n\nGoal: x." for s in SETTINGS]
    assert card.problem_statement(briefs[0]) == field
    table = "\n".join(card.beside_paper("eval", [1] * 5, {1: 5}, [150] * 5, 5, briefs))
    # two briefs of the field's problem restate each other, whatever their context says; the
    # three that name their own setting are their own
    row = "| briefs stating a problem no other brief restates | 60.0% (3 of 5) | not reported |"
    assert row in table


SETTINGS = ("noisy labels", "limited memory", "privacy rules")


def test_an_empty_build_and_an_unknown_split_print_dashes() -> None:
    table = "\n".join(card.beside_paper("dev", [], {}, [], 0))
    assert "| antecedents per instance, median | - | - |" in table
    assert "| share of T3 / T2 / T1 | - / - / - | - |" in table


def test_instances_per_month_of_their_published_cutoff() -> None:
    lines = card.per_month_table({"2025-02": 1, "2025-01": 2})
    assert lines[0] == "## Instances per month of the published cutoff"
    assert lines[4:] == ["| 2025-01 | 2 |", "| 2025-02 | 1 |", ""]


def test_the_sources_section_says_which_side_served_what() -> None:
    api = card.sources_section([("api", "api", 12, 0)])
    assert api[4:] == ["| api | api | 12 | 0 |", ""]
    bulk = "\n".join(card.sources_section([("bulk 2027-01-01", "bulk 2027-01-01", 3, 7)]))
    assert "| bulk 2027-01-01 | bulk 2027-01-01 | 3 | 7 |" in bulk
    assert "give no title for a citation without a cited corpus ID" in bulk


def test_the_card_explains_the_rubric_tier_zero_and_the_redaction_rules() -> None:
    text = "\n".join(card.method_section())
    assert "**T3**" in text and "**0** if it is not an antecedent" in text
    assert "coined names and acronyms" in text and "may name the problem's field" in text


def test_the_card_names_the_audits_that_ran() -> None:
    assert "passed five audits" in card.audits_line((3, 3))
    assert "identity by search (the brief" in card.audits_line((3, 3))
    assert "identity by search (2 of 3 instances)" in card.audits_line((2, 3))
    for none in (None, (0, 3)):
        assert "four audits" in card.audits_line(none) and "did not run" in card.audits_line(none)
    assert card.audits_line((3, 3)) in card.method_section(None, (3, 3))
    assert "retrieval (bm25 over the warehouse's papers)" in card.audits_line((3, 3))
    windowed = card.method_section(None, (3, 3), "window")
    assert any(
        "retrieval (bm25 over the papers its published cutoff's window" in x for x in windowed
    )


def test_the_card_says_how_many_readings_graded_each_reference() -> None:
    assert "graded in 2 readings" in "\n".join(card.method_section(2))
    assert "one reading" in card.readings_line(1)
    assert card.readings_line(None) == "- Each reference was graded once."


def test_the_review_section_reports_the_applied_figures_or_says_there_were_none() -> None:
    from inspire_build.card import review_section

    none = review_section(None)
    assert none[0] == "## Curator review" and "No curator review was applied" in none[2]
    applied = {
        "base_version": "eval-abc",
        "review_ids": [1, 4, 7],
        "figures": {"reviewed": 3, "rejected": 1, "tier_changes": 2},
    }
    lines = review_section(applied)
    assert "`eval-abc` with 3 standing curator decisions applied" in lines[2]
    assert "| rejected by a curator (dropped) | 1 |" in lines
    assert "| references whose tier a curator changed | 2 |" in lines
    assert "| briefs a curator rewrote (re-audited) | 0 |" in lines  # absent: 0


def test_the_agreement_section_says_plainly_when_there_is_no_sample_or_no_review() -> None:
    from inspire_build.card import agreement_section
    from inspire_build.review.agreement import Agreement, Estimate, Share

    none = agreement_section(None, 0, None)
    assert none[0] == "## Curator agreement" and "No review sample was drawn" in none[2]
    unread = Agreement(3, 0, None, None, None, None)
    assert "No sampled instance has been reviewed yet" in "\n".join(
        agreement_section("eval-abc", 4, unread)
    )
    found = Agreement(
        sampled=3,
        reviewed=2,
        kappa=Estimate(0.5, 0.25, 0.75, 2, 9),
        exact=Estimate(0.8, 0.7, 0.9, 2, 9),
        leaking=Share(0, 2, 0.0, 0.0),
        rejected=Share(1, 2, 0.0, 1.0),
    )
    lines = agreement_section("eval-abc", 4, found)
    assert "seeded sample of 3 instances of `eval-abc` (seed 4)" in lines[2]
    assert (
        "| tiers, quadratic-weighted kappa | 0.500 (95% CI 0.250 to 0.750; n = 9 references of "
        "2 instances) |" in lines
    )
    assert (
        "| instances rejected | 1 of 2: 50.0% (95% CI 0.0% to 100.0%; n = 2 instances) |" in lines
    )


def test_the_hub_size_category_by_hand() -> None:
    sizes = [card.size_category(n) for n in (0, 999, 1_000, 9_999, 10_000, 2_025, 10**12)]
    assert sizes == ["n<1K", "n<1K", "1K<n<10K", "1K<n<10K", "10K<n<100K", "1K<n<10K", "n>1T"]
    assert card.size_category(10**12 - 1) == "100B<n<1T"


def _front_matter(text: str) -> dict[str, object]:
    head, meta, _body = text.split("---\n", 2)
    assert head == ""  # the block opens the file, as a hub reads it
    found = yaml.safe_load(meta)
    assert isinstance(found, dict)
    return found


def test_the_hub_card_declares_the_public_instances_as_the_split() -> None:
    text = card.hub_readme("eval", "eval-0123", 1_234, "instances.parquet", "instances.jsonl")
    meta = _front_matter(text)
    assert meta["license"] == card.HUB_LICENSE
    assert meta["task_categories"] == ["text-retrieval"]
    assert meta["size_categories"] == ["1K<n<10K"]
    assert meta["pretty_name"] == "inspire-build eval (eval-0123)"
    [config] = meta["configs"]  # type: ignore[misc]
    assert config["data_files"] == [{"split": "eval", "path": "instances.parquet"}]
    assert "1,234 instances, split `eval`, in `instances.parquet`" in text
    for private in ("qrels", "antecedents", "targets.parquet", "private", "tier", "T3"):
        assert private not in text, private


def test_a_split_name_a_hub_refuses_is_made_a_word() -> None:
    assert card.hub_split("eval-v2 new") == "eval_v2_new" and card.hub_split("eval.2") == "eval.2"
    meta = _front_matter(card.hub_readme("eval-v2", "v", 3, "i.parquet", "i.jsonl"))
    assert meta["configs"] == [  # the name stays in the title; the split is a word
        {"config_name": "default", "data_files": [{"split": "eval_v2", "path": "i.parquet"}],
         "default": True}
    ]  # fmt: skip
