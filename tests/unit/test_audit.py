"""audit.py's blind mechanism audit: a guess from the brief alone, then the guess against the
abstract, both recorded in the finding."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import duckdb
import pydantic
import pytest

from inspire_build import audit, audit_checks, warehouse
from inspire_build.config import Settings
from inspire_build.gold import make_llm
from inspire_build.models import AuditCheck, LeakLevel, MechanismGuess, MechanismOverlap
from inspire_build.templates import load_prompts

ABSTRACT = (
    "Retrieval over long documents remains slow when the index cannot fit in memory. "
    "We propose ShardNet, a sharded index that reaches 92.3% recall with 15% of the memory."
)
PROMPTS = load_prompts()


class Recorder:
    """An LLM stand-in that records each rendered prompt and answers from a script."""

    def __init__(self, answers: Mapping[str, dict[str, Any]]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str]] = []

    def complete(
        self, name: str, context: Mapping[str, Any], model: type[pydantic.BaseModel]
    ) -> pydantic.BaseModel:
        self.sent.append((name, PROMPTS[name].render(context)))
        return model.model_validate(self.answers[name])


def test_the_guess_is_made_from_the_brief_alone_and_then_compared_with_the_abstract() -> None:
    llm = Recorder(
        {
            "audit_mechanism_guess": {"mechanism": "a sharded index"},
            "audit_mechanism": {"overlap": "full", "rationale": "both shard the index"},
        }
    )
    finding = audit_checks.mechanism(
        llm, "b1", "Indexes of long documents outgrow memory.", ABSTRACT
    )  # type: ignore[arg-type]
    (first, guess_text), (second, compare_text) = llm.sent
    assert (first, second) == ("audit_mechanism_guess", "audit_mechanism")
    assert "Indexes of long documents outgrow memory." in guess_text
    assert "ShardNet" not in guess_text and "Retrieval over long documents" not in guess_text
    assert "a sharded index" in compare_text and "We propose ShardNet" in compare_text
    assert "outgrow" not in compare_text  # the comparison sees the guess, not the brief
    assert not finding.passed and finding.level is LeakLevel.FULL
    assert finding.detail == (
        "full: the guess 'a sharded index' against the abstract: both shard the index"
    )


def test_partial_overlap_passes_and_is_recorded() -> None:
    llm = Recorder(
        {
            "audit_mechanism_guess": {"mechanism": "some index"},
            "audit_mechanism": {"overlap": "partial", "rationale": "an index"},
        }
    )
    finding = audit_checks.mechanism(llm, "b2", "A brief.", ABSTRACT)  # type: ignore[arg-type]
    assert finding.passed and finding.level is LeakLevel.PARTIAL


def test_the_rules_backend_logs_both_calls() -> None:
    con = duckdb.connect(":memory:")
    warehouse.migrate(con)
    llm = make_llm(Settings(llm_backend="rules"), con)
    leaky = audit_checks.mechanism(
        llm, "b3", "A sharded index reaches recall with memory.", ABSTRACT
    )
    clean = audit_checks.mechanism(llm, "b4", "Long documents are hard to search.", ABSTRACT)
    assert not leaky.passed and "'sharded, index, reaches, recall, memory'" in leaky.detail
    assert clean.passed and clean.level is LeakLevel.NONE
    names = con.execute("SELECT prompt_name FROM llm_calls ORDER BY prompt_name").fetchall()
    assert [n for (n,) in names] == ["audit_mechanism"] * 2 + ["audit_mechanism_guess"] * 2
    con.close()


def test_both_answers_are_their_own_models() -> None:
    assert set(MechanismGuess.model_fields) == {"mechanism"}
    assert set(MechanismOverlap.model_fields) == {"overlap", "rationale"}


def test_retrieval_leaks_only_when_the_brief_singles_the_target_out() -> None:
    # Top 3 of 4 results; the 4th is the first paper outside the top k.
    singled = [("t", 12.0), ("a", 6.0), ("b", 5.9), ("c", 5.5)]
    leaked, detail = audit.retrieval_verdict(singled, "t", 3, 0.1)
    assert leaked and "ranks 1 of the top 3, 118% above" in detail  # 12 / 5.5 - 1
    tied = [("a", 7.72), ("b", 7.33), ("t", 7.32), ("c", 7.0)]
    leaked, detail = audit.retrieval_verdict(tied, "t", 3, 0.1)
    assert not leaked and "only 5% above" in detail  # 7.32 / 7.0 - 1 = 4.6%
    assert audit.retrieval_verdict(tied, "t", 3, 0.0)[0]  # margin 0: the top k is a leak
    assert audit.retrieval_verdict(tied, "z", 3, 0.1) == (False, "target not in the top 3")
    assert audit.retrieval_verdict([("t", 1.0)], "t", 3, 0.1)[0]  # nothing else matches at all


def test_the_pure_verdicts_of_identity_and_mechanism() -> None:
    title = "Sharded Indexes for Long Documents"
    near = audit.identity_finding("b", "Sharded indexes for long documents", title)
    far = audit.identity_finding("b", "Graph neural networks for chemistry", title)
    assert not near.passed and near.detail.endswith("scores 100 against the title")
    assert far.passed and far.level is LeakLevel.NONE
    graded = MechanismOverlap(overlap=LeakLevel.PARTIAL, rationale="the shards, not the router")
    partial = audit.mechanism_finding("b", "shard the index", graded)
    assert partial.passed and partial.level is LeakLevel.PARTIAL
    assert partial.detail == (
        "partial: the guess 'shard the index' against the abstract: the shards, not the router"
    )
    full = audit.mechanism_finding("b", "x", graded.model_copy(update={"overlap": LeakLevel.FULL}))
    assert not full.passed


def test_result_numbers_come_from_the_solution_sentences_only() -> None:
    abstract = (
        "Indexes of 10 million documents outgrow memory. "
        "We propose sharding, which reaches 92.3 recall and cuts memory by 15%."
    )
    assert audit.result_numbers(abstract) == ["15%", "92.3"]  # not 10: a problem sentence
    found = audit.lexical("b", "Recall of 92.3 is the goal.", [], audit.result_numbers(abstract))
    assert not found.passed and found.detail == "contains: 92.3"
    assert audit.lexical("b", "Recall of 192.35 is the goal.", [], ["92.3"]).passed


def test_a_search_that_could_not_be_made_is_no_pass() -> None:
    window = (dt.date(2025, 4, 1), dt.date(2025, 5, 1))
    finding = audit.search_not_run("b1", window, "gave up after 7 attempts")
    assert finding.check is AuditCheck.SEARCH and not finding.passed
    assert finding.detail == (
        "not run: the search for works first public from 2025-04-01 failed: "
        "gave up after 7 attempts"
    )


@pytest.mark.parametrize(
    "quoted",
    [
        "arXiv:2008.00005",
        "2008.00005v2",
        "doi 10.5555/sandbox.451",
        "OpenAlex W4100000902",
        "CorpusId 250000902",
        "CorpusID:250000902",
        "hep-th/9901001",
    ],  # fmt: skip
)
def test_a_paper_identifier_fails_the_lexical_check(quoted: str) -> None:
    """A curator's rewrite quoting an antecedent's IDs passed every check and was published;
    no brief needs an identifier, and any one names a paper."""
    found = audit.lexical("b", f"Build on the method of {quoted}, under drift.", [], [])
    assert not found.passed and found.detail.startswith("contains: ")


def test_numbers_and_years_are_no_identifiers() -> None:
    for text in ("Recall rose 12.5 points over 2019-2021.", "It scales to 10,000 users.",
                 "The W3C standard, version 2.0."):  # fmt: skip
        assert audit.lexical("b", text, [], []).passed, text
