"""grading.py and the grade step in gold.py: parts under a token budget, references addressed by
index, the repair of a part that drops or invents one, and tier 0 kept out of the gold."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import random
import threading
import types
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import duckdb
import pydantic
import pytest

from inspire_build import gold, grading, splits, warehouse
from inspire_build.config import Settings
from inspire_build.llm import LLM, InvalidOutput
from inspire_build.llm_rules import RULES
from inspire_build.models import AntecedentGrade, Brief, BriefStatus, GradeSheet, Role, Tier
from inspire_build.templates import Prompt, load_prompts
from tests.in_flight import InFlight

PROMPT = load_prompts()["grade"]
TITLE = "Sharded indexes for long documents"
ABSTRACT = "Retrieval over long documents is slow when the index cannot fit in memory. " * 3
WORDS = ("index", "memory", "recall", "shard", "graph", "token", "query", "cache")


def references(count: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "id": f"openalex:W{1000 + i}",
            "title": f"Reference {i} on {rng.choice(WORDS)} structures",
            "abstract": " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 220))),
            "contexts": [f"As in [{i}], the {rng.choice(WORDS)} helps." for _ in range(i % 4)],
            "intents": sorted(rng.sample(["methodology", "background", "result"], i % 3)),
            "influential": i % 17 == 0,
        }
        for i in range(count)
    ]


def recording_llm(con: duckdb.DuckDBPyConnection) -> tuple[LLM, list[dict[str, Any]]]:
    """The rules backend, keeping every grade context it was asked."""
    asked: list[dict[str, Any]] = []

    def grade(context: Mapping[str, Any]) -> pydantic.BaseModel:
        asked.append(dict(context))
        return RULES["grade"](context)

    return LLM(Settings(), con, rules={**RULES, "grade": grade}), asked


def test_estimate_tokens_by_hand() -> None:
    assert grading.estimate_tokens("one two three") == 4  # ceil(3 x 1.3) = 4 = ceil(13 / 4)
    assert grading.estimate_tokens("a" * 400) == 100  # one word, but 400 characters
    assert grading.estimate_tokens("ten words " * 10) == 26  # 20 words x 1.3 > 100 / 4


def test_a_300_reference_target_is_graded_in_parts_under_the_budget_each_once(
    con: duckdb.DuckDBPyConnection,
) -> None:
    budget = 6000
    refs = references(300)
    llm, asked = recording_llm(con)
    graded = grading.grade_references(llm, TITLE, ABSTRACT, refs, budget)
    assert len(asked) > 1 and llm.calls_made == len(asked)
    sizes = [grading.estimate_tokens(PROMPT.render(c)) for c in asked]
    print(f"{len(asked)} parts of {[len(c['references']) for c in asked]}; tokens {sizes}")
    assert max(sizes) <= budget
    # Every reference once: the parts' titles, in order, are the bibliography's.
    shown = [r["title"] for c in asked for r in c["references"]]
    assert shown == [r["title"] for r in refs]
    assert sorted(graded) == sorted(r["id"] for r in refs)
    # Greedy: no part could have taken the next part's first reference, up to the estimate's
    # own slack (the larger of a word and a character count is not additive: the sum of the
    # references' sizes may run a few tokens over their size together).
    for this, after in zip(asked, asked[1:], strict=False):
        grown = grading.part_context(
            TITLE, ABSTRACT, [*this["references"], after["references"][0]], 99, 99
        )
        assert grading.estimate_tokens(PROMPT.render(grown)) > budget * 0.99


def test_every_part_repeats_the_rubric_and_target_and_indexes_from_one() -> None:
    parts = grading.plan_parts(PROMPT, TITLE, ABSTRACT, references(120), 3000)
    assert len(parts) > 2
    for number, part in enumerate(parts, 1):
        text = PROMPT.render(grading.part_context(TITLE, ABSTRACT, part, number, len(parts)))
        assert text.startswith(PROMPT.source.splitlines()[1])  # the rubric
        assert f"Title: {TITLE}" in text and f"part {number} of {len(parts)}" in text
        assert text.count('<reference index="') == len(part)
        assert f'<reference index="{len(part)}">' in text and "openalex:" not in text
        assert "Influential: " in text and "Intents: " in text and "Contexts:" in text


def test_a_reference_too_long_for_a_part_of_its_own_is_trimmed_to_fit() -> None:
    giant = {
        "id": "openalex:W1",
        "title": "A giant",
        "abstract": "word " * 3000,
        "contexts": [f"context number {i} says a lot" for i in range(400)],
        "intents": [],
        "influential": False,
    }
    [[item]] = grading.plan_parts(PROMPT, TITLE, ABSTRACT, [giant], 2000)
    context = grading.part_context(TITLE, ABSTRACT, [item], 1, 1)
    assert grading.estimate_tokens(PROMPT.render(context)) <= 2000
    assert context["references"][0]["mentions"] == 400 and len(item["contexts"]) < 400


class CountingPrompt:
    """The grade prompt, counting its renders."""

    def __init__(self) -> None:
        self.renders = 0

    def render(self, context: Mapping[str, Any]) -> str:
        self.renders += 1
        return PROMPT.render(context)


def test_a_targets_readings_size_each_reference_once_and_part_it_the_same() -> None:
    refs, budget = references(40), 2500
    orders = [grading.reading_order(refs, reading) for reading in range(3)]
    alone = [grading.plan_parts(PROMPT, TITLE, ABSTRACT, order, budget) for order in orders]
    prompt, sized = CountingPrompt(), dict[str, tuple[dict[str, Any], int]]()
    shared = [
        grading.plan_parts(prompt, TITLE, ABSTRACT, order, budget, sized)  # type: ignore[arg-type]
        for order in orders
    ]
    assert shared == alone  # the same parts as a reading sized on its own
    assert sorted(sized) == sorted(r["id"] for r in refs)
    parts = sum(map(len, alone))
    # The references sized together in one rendering (and the first alone, to cut it by), plus
    # each reading's empty prompt and its parts' checks; sizing each reference in a rendering of
    # its own took one per reference, and sizing every reading anew two a reading.
    assert prompt.renders <= 2 + 3 + parts < len(refs)


def sized_one_by_one(prompt: Any, refs: list[dict[str, Any]]) -> list[int]:
    """Each reference's prompt tokens as the only reference of a part, rendered on its own."""
    sizes = []
    for ref in refs:
        context = grading.part_context(TITLE, ABSTRACT, [], 9999, 9999)
        item = {**ref, "mentions": len(ref.get("contexts") or [])}
        context["references"] = [grading.shown(item, 9999)]
        sizes.append(grading.estimate_tokens(prompt.render(context)))
    return sizes


def test_references_sized_together_are_sized_as_each_rendered_alone() -> None:
    refs = references(30)
    refs[3]["abstract"] = 'Ends with a tag <reference index="9999"> and "quotes" & more'
    refs[4] = {**grading.withheld(refs[4]), "id": refs[4]["id"]}  # the withheld block
    refs[5]["title"], refs[5]["contexts"] = "Ünïcödé títle 9999", ["x" * 500]
    refs[6]["abstract"] = ""
    prompt = CountingPrompt()
    items = [{**r, "mentions": len(r.get("contexts") or [])} for r in refs]
    together = grading._sizes_alone(prompt, TITLE, ABSTRACT, items)  # type: ignore[arg-type]
    assert together == sized_one_by_one(PROMPT, refs)
    assert prompt.renders == 2
    assert grading._sizes_alone(PROMPT, TITLE, ABSTRACT, items[:1]) == together[:1]
    assert grading._sizes_alone(PROMPT, TITLE, ABSTRACT, []) == []


def test_a_prompt_that_cannot_be_cut_by_reference_is_sized_one_by_one() -> None:
    # text after the references: no reference's block ends the prompt as it does alone
    footer = Prompt("grade", "9", PROMPT.source + "Answer for {{ references | length }} now.\n")
    refs = references(6)
    items = [{**r, "mentions": len(r.get("contexts") or [])} for r in refs]
    assert grading._sizes_alone(footer, TITLE, ABSTRACT, items) == sized_one_by_one(footer, refs)


def sheet(*grades: tuple[int, int, str | None]) -> GradeSheet:
    return GradeSheet(
        grades=tuple(
            AntecedentGrade(index=i, tier=Tier(t), role=Role(r) if r else None, rationale="why")
            for i, t, r in grades
        )
    )


def test_check_sheet_names_what_is_wrong() -> None:
    grading.check_sheet(sheet((1, 3, "component"), (2, 0, None)), 2)
    grading.check_sheet(sheet((1, 0, "background")), 1)  # a role at tier 0 is ignored
    with pytest.raises(ValueError, match=r"missing \[2\], invented \[5\], repeated \[1\]"):
        grading.check_sheet(sheet((1, 1, "background"), (1, 1, "background"), (5, 0, None)), 2)
    with pytest.raises(ValueError, match=r"a tier above 0 needs a role: indexes \[1\]"):
        grading.check_sheet(sheet((1, 2, None)), 1)
    silent = GradeSheet(grades=(AntecedentGrade(index=1, tier=Tier.T0, role=None, rationale=" "),))
    with pytest.raises(ValueError, match="needs a rationale"):
        grading.check_sheet(silent, 1)


def test_the_schema_has_no_id_enum_and_no_count() -> None:
    schema = json.dumps(GradeSheet.model_json_schema())
    assert "minItems" not in schema and "maxItems" not in schema and '"id"' not in schema


class FakeOpenAI:
    """chat.completions.parse answering the queued sheets in turn, keeping each request."""

    def __init__(self, answers: list[list[dict[str, Any]]]) -> None:
        self.answers, self.requests = list(answers), []
        raw = types.SimpleNamespace(parse=self.raw_parse)  # what llm.py calls: headers, then parse
        completions = types.SimpleNamespace(parse=self.parse, with_raw_response=raw)
        self.chat = types.SimpleNamespace(completions=completions)

    def raw_parse(self, **request: Any) -> Any:
        answer = self.parse(**request)
        return types.SimpleNamespace(headers={}, parse=lambda: answer)

    def parse(self, **request: Any) -> Any:
        self.requests.append(request)
        value = {"grades": self.answers.pop(0)}
        message = types.SimpleNamespace(
            refusal=None,
            content=json.dumps(value),
            parsed=request["response_format"].model_validate(value),
        )
        usage = types.SimpleNamespace(prompt_tokens=10, completion_tokens=5)
        choice = types.SimpleNamespace(message=message)
        return types.SimpleNamespace(choices=[choice], usage=usage)


def _answer(*tiers: tuple[int, int]) -> list[dict[str, Any]]:
    return [
        {"index": i, "tier": t, "role": "component" if t else None, "rationale": "r"}
        for i, t in tiers
    ]


@pytest.mark.parametrize(
    ("first", "problem"),
    [
        (_answer((1, 2), (3, 0)), "missing [2]"),  # dropped
        (_answer((1, 2), (2, 1), (3, 0), (9, 1)), "invented [9]"),  # invented
        (_answer((1, 2), (2, 1), (2, 1), (3, 0)), "repeated [2]"),  # repeated
    ],
)
def test_a_part_that_drops_or_invents_an_index_is_repaired(
    con: duckdb.DuckDBPyConnection, first: list[dict[str, Any]], problem: str
) -> None:
    client = FakeOpenAI([first, _answer((1, 2), (2, 1), (3, 0))])
    settings = Settings(llm_backend="openai", llm_model="m")
    llm = LLM(settings, con, rules=RULES, client=client)  # type: ignore[arg-type]
    graded = grading.grade_references(llm, TITLE, ABSTRACT, references(3), 6000)
    assert [int(graded[f"openalex:W{1000 + i}"].tier) for i in range(3)] == [2, 1, 0]
    assert graded["openalex:W1002"].role is None and graded["openalex:W1002"].rationale == "r"
    repair = client.requests[1]["messages"]
    assert len(client.requests) == 2 and problem in repair[-1]["content"]


def test_a_part_still_wrong_after_the_repair_fails(con: duckdb.DuckDBPyConnection) -> None:
    client = FakeOpenAI([_answer((1, 2)), _answer((1, 2), (2, 2))])
    llm = LLM(Settings(llm_backend="openai", llm_model="m"), con, client=client)  # type: ignore[arg-type]
    with pytest.raises(InvalidOutput, match=r"missing \[3\]"):
        grading.grade_references(llm, TITLE, ABSTRACT, references(3), 6000)


# --- the grade step in gold.py: tier 0 stays out of the gold -----------------------------------

NOW = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
# (paper, contexts, intents, influential) -> the rules' tier: 3, 1, 0, 0
SIGNALS = {
    "openalex:W11": (2, ["methodology"], True),
    "openalex:W12": (2, ["background"], False),
    "openalex:W13": (1, ["background"], False),
    "openalex:W14": (0, [], False),
}


def _target(con: duckdb.DuckDBPyConnection, target: str, signals: Mapping[str, Any]) -> None:
    papers = [
        {"paper_id": p, "title": f"Title of {p}", "abstract": ABSTRACT, "sources": ["openalex"]}
        for p in [target, *signals]
    ]
    warehouse.upsert(con, "papers", [{**p, "updated_at": NOW} for p in papers], ["paper_id"])
    rows = [
        {
            "target_id": target,
            "ref_key": f"r{i}",
            "paper_id": paper,
            "ids": {},
            "sources": ["s2"],
            "contexts": [f"context {n}" for n in range(mentions)],
            "intents": intents,
            "is_influential": influential,
            "status": "eligible",
        }
        for i, (paper, (mentions, intents, influential)) in enumerate(signals.items())
    ]
    warehouse.upsert(con, "references", rows, ["target_id", "ref_key"])
    counts = dict.fromkeys(
        ("after_cutoff", "dated_after_target", "no_date", "unresolved", "self"), 0
    )
    n = len(signals)
    completeness = {
        "target_id": target,
        "references_seen": n,
        "resolved": n,
        "dated": n,
        "eligible": n,
        **counts,
        "sources": ["openalex", "s2"],
        "updated_at": NOW,
    }
    warehouse.upsert(con, "gold_completeness", [completeness], ["target_id"])
    warehouse.upsert(
        con,
        "targets",
        [
            {
                "split": "eval",
                "paper_id": target,
                "title": f"Title of {target}",
                "first_public_date": dt.date(2025, 5, 1),
                "cutoff_date": dt.date(2025, 2, 1),
                "status": "candidate",
                "updated_at": NOW,
            }
        ],
        ["split", "paper_id"],
    )


def _accepted_brief(
    llm: LLM,
    con: duckdb.DuckDBPyConnection,
    inputs: gold.Inputs,
    settings: Settings,
    *_: Any,
    **__: Any,
) -> gold.Drafts:
    text = f"A brief for {inputs.target_id} about slow retrieval."
    brief = Brief(
        brief_id=f"b-{inputs.target_id}",
        target_id=inputs.target_id,
        attempt=1,
        text=text,
        prompt_name="brief",
        prompt_hash="h",
        backend="rules",
        model="rules-v1",
        status=BriefStatus.ACCEPTED,
        reason="passed all four leakage checks",
        created_at=NOW,
    )
    return gold.Drafts([brief], [], accepted=True)


def test_tier_zero_stays_in_grades_and_out_of_the_qrels(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gold, "brief_and_audit", _accepted_brief)
    _target(con, "openalex:W1", SIGNALS)
    _target(con, "openalex:W2", {"openalex:W21": (1, [], False), "openalex:W22": (0, [], False)})
    settings = Settings()
    outcomes = gold.run(gold.make_llm(settings, con), con, settings, ["openalex:W1", "openalex:W2"])
    assert [(o.status.value, o.reason, o.grades) for o in outcomes] == [
        ("accepted", "brief accepted on attempt 1; 2 antecedents among 4 graded references", 2),
        ("excluded", "the grader found no antecedent among 2 eligible references", 0),
    ]
    grades = con.execute(
        "SELECT paper_id, tier, role, rationale <> '' FROM grades WHERE target_id = 'openalex:W1' "
        "ORDER BY paper_id"
    ).fetchall()
    assert grades == [
        ("openalex:W11", 3, "method-foundation", True),
        ("openalex:W12", 1, "background", True),
        ("openalex:W13", 0, None, True),
        ("openalex:W14", 0, None, True),
    ]
    assert con.execute(
        "SELECT target_id, not_antecedents FROM gold_completeness ORDER BY 1"
    ).fetchall() == [("openalex:W1", 2), ("openalex:W2", 2)]
    version = splits.write_version(con, settings, "eval").version_id
    assert con.execute(
        "SELECT target_id, n_antecedents FROM instances WHERE version_id = ?", [version]
    ).fetchall() == [("openalex:W1", 2)]
    qrels = con.execute(
        "SELECT paper_id, tier FROM qrels WHERE version_id = ? ORDER BY 1", [version]
    ).fetchall()
    assert qrels == [("openalex:W11", 3), ("openalex:W12", 1)]
    assert Counter(t for _, t in qrels) == Counter({3: 1, 1: 1})


def test_a_failed_grading_leaves_no_grades_and_a_null_count(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gold, "brief_and_audit", _accepted_brief)
    _target(con, "openalex:W1", SIGNALS)
    settings = Settings()
    gold.run(gold.make_llm(settings, con), con, settings, ["openalex:W1"])

    def dropping(context: Mapping[str, Any]) -> pydantic.BaseModel:
        answer = RULES["grade"](context)
        assert isinstance(answer, GradeSheet)
        return answer.model_copy(update={"grades": answer.grades[:-1]})

    con.execute("DELETE FROM llm_calls")
    llm = LLM(settings, con, rules={**RULES, "grade": dropping})
    [outcome] = gold.run(llm, con, settings, ["openalex:W1"])
    assert outcome.status.value == "excluded" and "missing [4]" in outcome.reason
    assert con.execute("SELECT count(*) FROM grades").fetchone() == (0,)
    assert con.execute("SELECT not_antecedents FROM gold_completeness").fetchone() == (None,)


def test_the_steps_write_on_one_duckdb_thread_and_give_the_threads_back(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gold, "brief_and_audit", _accepted_brief)
    _target(con, "openalex:W1", SIGNALS)
    setting = "SELECT current_setting('threads')"
    con.execute("SET threads = 2")
    seen: list[Any] = []
    write = gold.write

    def watched(con: duckdb.DuckDBPyConnection, records: gold.Records) -> None:
        seen.append(con.execute(setting).fetchone())
        write(con, records)

    monkeypatch.setattr(gold, "write", watched)
    settings = Settings()
    [outcome] = gold.run(gold.make_llm(settings, con), con, settings, ["openalex:W1"])
    assert outcome.status.value == "accepted"
    assert seen == [(1,)] and con.execute(setting).fetchone() == (2,)


def g(tier: int) -> grading.Graded:
    return grading.Graded(Tier(tier), None if tier == 0 else Role.BACKGROUND, f"reading {tier}")


def test_the_readings_verdict_by_hand() -> None:
    assert grading.majority([g(1), g(1), g(0)]) is Tier.T1
    assert grading.majority([g(1), g(0)]) is None  # one each: no majority
    assert grading.majority([g(3), g(2), g(1)]) is None
    assert grading.decide([g(0), g(2), g(0)]).tier is Tier.T0
    assert grading.decide([g(3), g(1), g(2)]).tier is Tier.T2  # no majority: the median
    assert grading.decide([g(1), g(0)]).tier is Tier.T0  # a split on "antecedent or not": not
    assert grading.decide([g(2)]) == g(2)
    with pytest.raises(ValueError, match="no reading"):
        grading.decide([])


def test_each_reading_has_an_order_of_its_own_and_reading_0_keeps_the_given_one() -> None:
    refs = references(12)
    ids = [r["id"] for r in refs]
    assert [r["id"] for r in grading.reading_order(refs, 0)] == ids
    orders = [[r["id"] for r in grading.reading_order(refs, k)] for k in (1, 2, 3)]
    for order in orders:
        assert sorted(order) == sorted(ids) and order != ids
    assert len({tuple(o) for o in orders}) == 3
    assert orders[0] == [r["id"] for r in grading.reading_order(list(reversed(refs)), 1)]
    two = refs[:2]  # however the hash falls, a second reading never repeats the order
    assert [r["id"] for r in grading.reading_order(two, 1)] != [r["id"] for r in two]


def slipping_llm(
    con: duckdb.DuckDBPyConnection, slips: Mapping[int, set[str]]
) -> tuple[LLM, list[list[str]]]:
    """Grades every reference tier 0, except that the n-th call (from 0) over-includes the
    titles in ``slips[n]`` at tier 2; keeps the titles each call was shown."""
    shown: list[list[str]] = []

    def grade(context: Mapping[str, Any]) -> pydantic.BaseModel:
        titles = [r["title"] for r in context["references"]]
        slipped = slips.get(len(shown), set())
        shown.append(titles)
        grades = [
            (i, 2, "background") if t in slipped else (i, 0, None) for i, t in enumerate(titles, 1)
        ]
        return sheet(*grades)

    return LLM(Settings(), con, rules={**RULES, "grade": grade}), shown


def test_a_slip_in_one_reading_is_outvoted_and_agreement_costs_no_deciding_call(
    con: duckdb.DuckDBPyConnection,
) -> None:
    refs = references(6)
    titles = [r["title"] for r in refs]
    # The first reading over-includes references 1 and 4; the second agrees with it on 4.
    second = grading.reading_order(refs, 1)
    llm, shown = slipping_llm(con, {0: {titles[1], titles[4]}, 1: {titles[4]}})
    graded = grading.grade_references(llm, TITLE, ABSTRACT, refs, 6000, readings=2)
    assert shown[0] == titles and shown[1] == [r["title"] for r in second]
    assert shown[2] == [titles[1]]  # only the split reference is read a third time
    assert len(shown) == 3
    assert graded[refs[1]["id"]].tier is Tier.T0  # 1 of 3 readings: outvoted
    assert graded[refs[4]["id"]].tier is Tier.T2  # 2 of 2: kept
    assert {i for i, v in graded.items() if v.is_antecedent} == {refs[4]["id"]}

    llm, shown = slipping_llm(con, {0: {titles[1]}})  # another target: not the call log's answer
    once = grading.grade_references(llm, "Another title", ABSTRACT, refs, 6000, readings=1)
    assert len(shown) == 1 and once[refs[1]["id"]].tier is Tier.T2  # one reading keeps a slip


class RecordingSlots:
    """Slots that never make a call wait, keeping the urgency each call asked for one with."""

    def __init__(self) -> None:
        self.urgencies: list[tuple[int, ...]] = []

    @contextlib.contextmanager
    def held(self, urgency: tuple[int, ...] = ()) -> Iterator[None]:
        self.urgencies.append(urgency)
        yield


def test_a_deciding_reading_asks_for_its_slot_after_every_first_reading(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # Reading 1 grades all three T2, reading 2 all T0: each reference is split, so one deciding
    # part follows. Its calls wait behind any target's first readings (a later target's
    # included), which have more of their chain ahead; and both behind every brief and audit.
    all_t2, all_t0 = _answer((1, 2), (2, 2), (3, 2)), _answer((1, 0), (2, 0), (3, 0))
    client = FakeOpenAI([all_t2, all_t0, _answer((1, 1), (2, 0), (3, 2))])
    slots = RecordingSlots()
    settings = Settings(llm_backend="openai", llm_model="m")
    llm = LLM(settings, con, client=client, urgency=gold.URGENCY, slots=slots)  # type: ignore[arg-type]
    reader = con.cursor()
    with llm.journal(reader, rank=7):
        grading.grade_references(llm, TITLE, ABSTRACT, references(3), 6000, readings=2)
    reader.close()
    first, deciding = gold.URGENCY["grade"], gold.URGENCY[grading.DECIDING]
    assert slots.urgencies == [(first, 7), (first, 7), (deciding, 7)]
    assert deciding > first > max(v for k, v in gold.URGENCY.items() if not k.startswith("grade"))
    assert (deciding, 0) > (first, 99)  # an earlier target's deciding part comes after


class SlowOpenAI(FakeOpenAI):
    """Grades every reference of a part T2, with the part's own rationale (a hash of its prompt),
    counting the calls in flight (:class:`InFlight`: the first wait for ``together``, then each
    takes ``delay``)."""

    def __init__(self, delay: float, together: int = 1) -> None:
        super().__init__([])
        self.flight, self.lock = InFlight(together, stay=delay), threading.Lock()

    @property
    def most(self) -> int:
        return self.flight.most

    def parse(self, **request: Any) -> Any:
        prompt = request["messages"][-1]["content"]
        why = hashlib.sha256(prompt.encode()).hexdigest()[:8]
        grades = [
            {"index": i, "tier": 2, "role": "component", "rationale": why}
            for i in range(1, prompt.count("<reference index=") + 1)
        ]
        with self.flight.inside(), self.lock:
            self.answers.append(grades)
            return super().parse(**request)


def _graded_at(
    con: duckdb.DuckDBPyConnection,
    concurrency: int,
    refs: list[dict[str, Any]],
    budget: int,
    together: int = 1,
) -> tuple[dict[str, grading.Graded], SlowOpenAI, list[dict[str, Any]]]:
    client = SlowOpenAI(delay=0.05, together=together)
    settings = Settings(llm_backend="openai", llm_model="m", llm_concurrency=concurrency)
    llm = LLM(settings, con, client=client)  # type: ignore[arg-type]
    reader = con.cursor()
    with llm.journal(reader) as calls:
        graded = grading.grade_references(llm, TITLE, ABSTRACT, refs, budget, readings=2)
    reader.close()
    return graded, client, calls


@pytest.mark.parametrize("concurrency", [3, 16])
def test_a_targets_parts_and_readings_are_asked_at_once_within_the_concurrency(
    con: duckdb.DuckDBPyConnection, concurrency: int
) -> None:
    refs, budget = references(40), 2500  # several parts a reading
    parts = len(grading.plan_parts(PROMPT, TITLE, ABSTRACT, refs, budget))
    assert parts >= 3
    one_by_one, client, _ = _graded_at(con, 1, refs, budget)
    assert client.most == 1
    together = min(concurrency, 2 * parts)  # the first calls wait for all of them
    graded, client, calls = _graded_at(con, concurrency, refs, budget, together=together)
    assert len(client.requests) == len(calls) == 2 * parts  # the readings agree: no deciding one
    assert client.most == min(concurrency, 2 * parts)  # at once, never past the concurrency
    # The votes in the order one call after another gives: each grade's rationale is that of
    # its first reading's part, which the second reading splits otherwise.
    assert graded == one_by_one
    assert len({g.rationale for g in graded.values()}) > 1


def test_targets_grading_at_once_share_the_calls_in_flight(con: duckdb.DuckDBPyConnection) -> None:
    client = SlowOpenAI(delay=0.05, together=3)
    settings = Settings(llm_backend="openai", llm_model="m", llm_concurrency=3)
    llm = LLM(settings, con, client=client)  # type: ignore[arg-type]

    def target(title: str) -> None:
        reader = con.cursor()
        with llm.journal(reader):
            grading.grade_references(llm, title, ABSTRACT, references(40), 2500, readings=2)
        reader.close()

    threads = [threading.Thread(target=target, args=(f"Target {n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(client.requests) >= 12 and client.most == 3  # each target alone would fly 3
