"""Reading runs, qrels and trajectories: the pure parsers fed hand-made bytes, and the capped read.

Each refusal is an InputError naming the file and line; nothing else may escape a parser.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from inspire_build.errors import InputError
from inspire_build.evaluation import inputs, report
from inspire_build.evaluation.evaluate import require_overlap
from inspire_build.evaluation.score import score

SAME = inputs.normaliser()


def lines(text: str) -> list[tuple[int, str]]:
    return inputs.decode(text.encode(), "f")


def refused(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        call()
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


# --- decode: encodings and odd bytes -----------------------------------------------------------


def test_a_utf8_bom_crlf_and_blank_lines_are_accepted() -> None:
    data = b"\xef\xbb\xbfi1 0 a 1\r\n\n   \ni1 0 b 2"
    assert inputs.decode(data, "f") == [(1, "i1 0 a 1"), (4, "i1 0 b 2")]
    assert inputs.parse_qrels(inputs.decode(data, "f"), SAME, "f") == {"i1": {"a": 1, "b": 2}}


def test_utf16_latin1_and_binary_are_refused() -> None:
    refused(lambda: inputs.decode("i1 0 a 1\n".encode("utf-16"), "f"), "f: UTF-16 or UTF-32")
    refused(lambda: inputs.decode("i1 0 a 1\n".encode("utf-16-le"), "f"), "f:1: a NUL byte")
    refused(
        lambda: inputs.decode("i1 0 a 1\ni1 0 café 1\n".encode("latin-1"), "f"),
        "f:2: not UTF-8 (byte 0xe9 at column 9)",
    )
    refused(lambda: inputs.decode(b"\x89PNG\r\n\x1a\n", "f"), "f:1: not UTF-8 (byte 0x89")
    refused(lambda: inputs.decode(b"PNG\n\x1a\x00\x00", "f"), "f:2: a NUL byte")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_no_bytes_make_a_parser_raise_anything_but_an_input_error(data: bytes) -> None:
    for parse in (inputs.parse_run, inputs.parse_qrels, inputs.parse_trajectories):
        try:
            parse(inputs.decode(data, "f"), SAME, "f")
        except InputError as error:
            assert str(error).startswith("f") and "\n" not in str(error)


# --- qrels -------------------------------------------------------------------------------------


def test_conflicting_grades_name_both_lines_and_agreeing_ones_pass() -> None:
    text = "i1 0 arXiv:2301.00001v2 3\ni1 0 x 1\ni1 0 https://arxiv.org/abs/2301.00001 2\n"
    refused(
        lambda: inputs.parse_qrels(lines(text), SAME, "f"),
        "f:3: query 'i1', document 'arxiv:2301.00001' graded 2, but 3 on line 1",
    )
    agreeing = "i1 0 a 3\ni2 0 a 1\ni1 0 a 3\n"
    assert inputs.parse_qrels(lines(agreeing), SAME, "f") == {"i1": {"a": 3}, "i2": {"a": 1}}


@pytest.mark.parametrize("line", ["i1 0 a ²", "i1 0 a 4", "i1 0 a -1", "i1 0 a 1.0", "i1 0 a"])
def test_a_relevance_other_than_0_to_3_is_refused(line: str) -> None:
    refused(lambda: inputs.parse_qrels(lines(f"i1 0 b 1\n{line}\n"), SAME, "f"), "f:2: expected")


# --- runs --------------------------------------------------------------------------------------


def test_a_jsonl_run_keeps_list_order_and_refuses_a_second_line_per_instance() -> None:
    run = [{"instance_id": "i1", "ranking": ["b", "a"]}, {"instance_id": 7, "ranking": []}]
    text = "".join(json.dumps(r) + "\n" for r in run)
    assert inputs.parse_run(lines(text), SAME, "f") == {"i1": ["b", "a"], "7": []}
    again = text + "\n" + json.dumps({"instance_id": "i1", "ranking": ["c"]})
    refused(
        lambda: inputs.parse_run(lines(again), SAME, "f"),
        "f:4: instance 'i1' again (first on line 1)",
    )


def test_a_trec_run_sorts_by_score_with_ties_as_trec_eval_breaks_them() -> None:
    """Ties go by document ID as written, the greater first (trec_eval's rule: pytrec_eval
    ranks 'c' above 'a' and 'a' above 'B' at one score), whatever the file's order."""
    text = "q Q0 a 1 0.5 t\nq Q0 b 2 0.9 t\nq Q0 c 3 0.5 t\nq Q0 B 4 0.5 t\nr Q0 d 1 -2e3 t\n"
    assert inputs.parse_run(lines(text), SAME, "f") == {"q": ["b", "c", "a", "B"], "r": ["d"]}
    judged = {"q": {"a": 1}}
    for first in ("a", "c"):  # either order in the file: MRR as pytrec_eval's
        tied = f"q Q0 {first} 1 1.0 t\nq Q0 {'c' if first == 'a' else 'a'} 2 1.0 t\n"
        ranking = inputs.parse_run(lines(tied), SAME, "f")["q"]
        evaluator = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"})
        expected = evaluator.evaluate({"q": {"a": 1.0, "c": 1.0}})["q"]["recip_rank"]
        assert 1 / (ranking.index("a") + 1) == expected == 0.5


def test_instance_ids_are_stripped_and_hexadecimal_ones_lower_cased() -> None:
    assert inputs.instance_key(" 0BC30A92EC846C4B ") == "0bc30a92ec846c4b"
    assert inputs.instance_key("Query-7") == "Query-7"  # another benchmark's IDs stay as written
    run = '{"instance_id": " 0BC30A92EC846C4B ", "ranking": ["a"]}\n'
    assert inputs.parse_run(lines(run), SAME, "f") == {"0bc30a92ec846c4b": ["a"]}
    assert set(inputs.parse_run(lines("0BC30A92 Q0 a 1 1 t\n"), SAME, "f")) == {"0bc30a92"}
    qrels = inputs.parse_qrels(lines("0BC30A92 0 a 1\n"), SAME, "f")
    assert qrels == {"0bc30a92": {"a": 1}}
    twice = (
        '{"instance_id": "abcdef12", "ranking": []}\n{"instance_id": "ABCDEF12", "ranking": []}\n'
    )
    with pytest.raises(InputError, match="f:2: instance 'abcdef12' again \\(first on line 1\\)"):
        inputs.parse_run(lines(twice), SAME, "f")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("q Q0 d 2 nan t", "f:2: the score 'nan' is not a finite number"),
        ("q Q0 d 2 inf t", "f:2: the score 'inf' is not a finite number"),
        ("q Q0 d 2 -Infinity t", "is not a finite number"),
        ("q Q0 d 2 1e999 t", "is not a finite number"),
        ("q Q0 d 2 high t", "f:2: the score 'high' is not a number"),
        ("q XX d 2 0.5 t", "f:2: the second column is 'XX', not 'Q0'"),
        ("q Q0 d 2 0.5", "f:2: no run tag (the sixth column)"),
        ("q Q0 d 2 0.5 t extra", "f:2: 7 column(s)"),
        ("q Q0 d two 0.5 t", "f:2: the rank 'two' is not a whole number"),
        ('{"instance_id": "q", "ranking": []}', "f:2: a JSON object, but line 1 is TREC"),
    ],
)
def test_bad_trec_lines_are_refused(line: str, message: str) -> None:
    refused(lambda: inputs.parse_run(lines(f"q Q0 a 1 1.0 t\n{line}\n"), SAME, "f"), message)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("q Q0 d 2 0.5 t", "f:2: not a JSON object, but line 1 is one"),
        ('["q", []]', "f:2: not a JSON object, but line 1 is one"),
        ('{"instance_id": "q", "ranking": "abc"}', 'f:2: malformed run line ("ranking" is not'),
        (
            '{"ranking": []}',
            'f:2: malformed run line ("instance_id" is missing or null, not an ID)',
        ),
        ('{"instance_id": 1.5, "ranking": []}', '("instance_id" is float 1.5, not an ID)'),
        ('{"instance_id": true, "ranking": []}', '("instance_id" is bool true, not an ID)'),
        ('{"instance_id": " ", "ranking": []}', '("instance_id" is str'),
        (
            '{"instance_id": "q", "ranking": [null]}',
            "(a ranking entry is missing or null, not an ID)",
        ),
        ('{"instance_id": "q", "ranking": [["a"]]}', "(a ranking entry is list"),
        ('{"instance_id": "q", "ranking": [' + "[" * 100_000, "f:2: malformed run line (not JSON"),
    ],
)
def test_bad_jsonl_lines_are_refused(line: str, message: str) -> None:
    first = '{"instance_id": "p", "ranking": ["a"]}'
    refused(lambda: inputs.parse_run(lines(f"{first}\n{line}\n"), SAME, "f"), message)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"instance_id": "q", "ranking": ["a"], "ranking": ["b"]}', 'the key "ranking" appears'),
        ('{"instance_id": "q", "instance_id": "p", "ranking": []}', 'the key "instance_id" appe'),
    ],
)
def test_a_key_given_twice_is_refused_with_its_line(line: str, message: str) -> None:
    first = '{"instance_id": "p", "ranking": ["a"]}'
    refused(
        lambda: inputs.parse_run(lines(f"{first}\n{line}\n"), SAME, "f"),
        f"f:2: malformed run line ({message}",
    )


def test_an_empty_run_is_empty() -> None:
    assert inputs.parse_run(lines("\n  \n"), SAME, "f") == {}


# --- trajectories ------------------------------------------------------------------------------


def _trajectory(instance: str, *exposed: Any) -> str:
    return json.dumps(
        {"instance_id": instance, "steps": [{"tool": "search", "exposed": e} for e in exposed]}
    )


def test_trajectories_parse_and_a_second_line_per_instance_is_refused() -> None:
    text = _trajectory("i1", ["a", "b"], []) + "\n" + _trajectory("i2") + "\n"
    found = inputs.parse_trajectories(lines(text), SAME, "f")
    assert {i: t.steps for i, t in found.items()} == {"i1": (("a", "b"), ()), "i2": ()}
    refused(
        lambda: inputs.parse_trajectories(lines(text + _trajectory("i1", ["c"])), SAME, "f"),
        "f:3: instance 'i1' again (first on line 1)",
    )


def test_a_session_told_its_scores_is_warned_of_and_counted() -> None:
    """The environment's debugging mode marks its trajectory lines; scored, such a run is
    named in a warning and counted in the JSON (it had an oracle for the gold)."""
    told = json.loads(_trajectory("i1", ["a"])) | {"scores_revealed": True}
    text = json.dumps(told) + "\n" + _trajectory("i2", ["c"]) + "\n"
    found = inputs.parse_trajectories(lines(text), SAME, "f")
    assert [found[i].revealed for i in ("i1", "i2")] == [True, False]
    scores = score({"i1": {"a": 1}, "i2": {"c": 2}}, {"i1": ["a"]}, found, samples=10)
    assert scores.revealed == ("i1",)
    assert report.as_json(scores)["scores_revealed_instances"] == 1
    [warning] = [n for n in report.notes(scores, "r.jsonl") if "told their scores" in n]
    assert warning.startswith("warning: 1 of the 2 instance(s) in r.jsonl's trajectories")
    not_bool = json.dumps(told | {"scores_revealed": "yes"})
    refused(lambda: inputs.parse_trajectories(lines(not_bool), SAME, "f"), "f:1: malformed")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (_trajectory("i1", ["a"], "abc"), 'f:1: malformed trajectory line (step 2: "exposed" is'),
        ('{"instance_id": "i1", "steps": [{"tool": "search"}]}', '(step 1: "exposed" is not'),
        ('{"instance_id": "i1", "steps": ["search"]}', '(step 1: "exposed" is not a list)'),
        ('{"instance_id": "i1", "steps": {}}', '("steps" is not a list)'),
        (_trajectory("i1", [3.5]), "(step 1: an exposed entry is float 3.5, not an ID)"),
        ("i1 search a", "f:1: malformed trajectory line (not JSON"),
        (
            '{"instance_id": "i1", "steps": [{"exposed": ["a"], "exposed": []}]}',
            'f:1: malformed trajectory line (the key "exposed" appears twice)',
        ),
    ],
)
def test_bad_trajectory_lines_are_refused(line: str, message: str) -> None:
    refused(lambda: inputs.parse_trajectories(lines(line), SAME, "f"), message)


# --- unknown instance IDs ----------------------------------------------------------------------


def test_a_submission_with_no_judged_instance_is_refused() -> None:
    judged = {"i1": {"a": 1}, "i2": {"b": 2}}
    refused(
        lambda: require_overlap(judged, {"x": [], "y": []}, "run r.jsonl", "version v1"),
        "none of the 2 instance ID(s) in run r.jsonl is among the 2 instance(s) of version v1",
    )
    refused(lambda: require_overlap(judged, {}, "run r.jsonl", "version v1"), "holds no instance")
    require_overlap(judged, {"i1": [], "x": []}, "run r.jsonl", "version v1")  # some match: fine


def test_unknown_instances_are_kept_aside_reported_and_counted() -> None:
    judged = {"i1": {"a": 1}}
    run = {"i1": ["a"], **{f"x{n}": ["a"] for n in range(7)}}
    scores = score(judged, run, samples=10)
    assert scores.unknown_instances == tuple(f"x{n}" for n in range(7))
    assert list(scores.per_instance) == ["i1"] and scores.aggregate["mrr"] == 1.0
    scored = dataclasses.replace(scores, version="eval-v1")
    assert report.notes(scored) == [
        "warning: 7 instance ID(s) in the run not in version eval-v1, not scored: "
        "x0, x1, x2, x3, x4, ..."
    ]
    assert report.lines(scored)[0] == "scored against version eval-v1: 1 instance(s)"
    shown = report.as_json(scored)
    assert shown["version"] == "eval-v1" and shown["unknown_instance_ids"] == 7
    intervals = shown["intervals"]
    assert isinstance(intervals, dict) and intervals["mrr"] == [1.0, 1.0]
    assert set(intervals) == set(scores.intervals)
