"""models.py: records are frozen, strict, and canonicalise identifiers on the way in."""

from __future__ import annotations

import datetime as dt

import pydantic
import pytest

from inspire_build import models
from inspire_build.ids import PaperId, Scheme
from inspire_build.models import (
    Brief,
    Grade,
    Paper,
    PaperIds,
    Provenance,
    Reference,
    Role,
    Source,
    SplitVersion,
    Tier,
)


def test_paper_ids_are_canonicalised() -> None:
    paper_ids = PaperIds(
        openalex="https://openalex.org/w4385245566",
        doi="https://doi.org/10.1145/3383583.3398584",
        arxiv="arXiv:2310.00826v2",
        s2="204E3073870FAE3D05BCBC2F6A8E263D9B72E776",
        corpus_id="049313245",
    )
    assert paper_ids.typed() == [
        PaperId(Scheme.OPENALEX, "W4385245566"),
        PaperId(Scheme.DOI, "10.1145/3383583.3398584"),
        PaperId(Scheme.ARXIV, "2310.00826"),
        PaperId(Scheme.S2, "204e3073870fae3d05bcbc2f6a8e263d9b72e776"),
        PaperId(Scheme.CORPUS_ID, "49313245"),
    ]
    assert not paper_ids.is_empty()
    assert PaperIds().is_empty()


def test_junk_ids_are_refused_at_the_boundary() -> None:
    with pytest.raises(pydantic.ValidationError, match="not a DOI"):
        PaperIds(doi="not-a-doi")


def test_records_are_frozen_and_strict() -> None:
    paper = Paper(source=Source.OPENALEX, ids=PaperIds(openalex="W1"), title="A")
    with pytest.raises(pydantic.ValidationError):
        paper.title = "B"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="Extra inputs"):
        Paper(source=Source.OPENALEX, ids=PaperIds(), unknown_field=1)  # type: ignore[call-arg]


def test_reference_keeps_provenance() -> None:
    reference = Reference(
        target_id="openalex:W1",
        ref_key="0",
        ids=PaperIds(doi="10.1000/a"),
        provenance=(
            Provenance(source=Source.OPENALEX),
            Provenance(source=Source.S2, match_rule="doi", match_score=100.0),
        ),
    )
    assert [p.source for p in reference.provenance] == [Source.OPENALEX, Source.S2]
    with pytest.raises(pydantic.ValidationError):
        Provenance(source=Source.S2, match_score=101)


def test_tier_values_are_the_default_linear_gains() -> None:
    assert [int(t) for t in (Tier.T1, Tier.T2, Tier.T3)] == [1, 2, 3]
    grade = Grade(
        target_id="t",
        paper_id="p",
        tier=3,
        role="method-foundation",
        rationale="r",
        backend="rules",
        model="rules",
        prompt_hash="h",
    )
    assert grade.tier is Tier.T3 and grade.role is Role.METHOD_FOUNDATION
    with pytest.raises(pydantic.ValidationError):
        Grade.model_validate({**grade.model_dump(), "tier": 4})


def test_tier_zero_is_no_antecedent_with_no_role_but_a_rationale() -> None:
    assert int(Tier.T0) == 0
    fields = {"target_id": "t", "paper_id": "p", "backend": "b", "model": "m", "prompt_hash": "h"}
    passing = Grade(**fields, tier=0, rationale="cited in passing")
    assert passing.tier is Tier.T0 and passing.role is None
    for bad in (
        {"tier": 0, "role": "background", "rationale": "r"},  # a role only above 0
        {"tier": 2, "rationale": "r"},  # an antecedent needs a role
        {"tier": 0, "rationale": ""},  # every tier keeps a rationale
    ):
        with pytest.raises(pydantic.ValidationError):
            Grade.model_validate({**fields, **bad})


def test_brief_counts_its_words() -> None:
    brief = Brief(
        brief_id="b",
        target_id="t",
        attempt=1,
        text="one two  three\nfour",
        prompt_name="brief",
        prompt_hash="h",
        backend="rules",
        model="rules",
        created_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    )
    assert brief.word_count == 4
    assert brief.model_dump()["word_count"] == 4


def test_split_version_round_trips_through_json() -> None:
    version = SplitVersion(
        version_id="v1",
        split="eval",
        config_hash="c",
        code_version="0.1.0",
        prompt_hashes={"brief": "h"},
        models={"brief": "rules"},
        counts={"instances": 3},
        created_at=dt.datetime(2026, 12, 2, tzinfo=dt.UTC),
    )
    assert SplitVersion.model_validate_json(version.model_dump_json()) == version


# Keywords a strict JSON schema may use on every OpenAI-compatible server we document.
PORTABLE = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
    "$ref", "$defs", "description", "title", "const", "default",
}  # fmt: skip


def _keywords(schema: object) -> set[str]:
    if isinstance(schema, dict):
        found = set(schema) - {"properties", "$defs"}
        for key, value in schema.items():
            if key in ("properties", "$defs"):
                found |= set().union(*(_keywords(v) for v in value.values()))
            else:
                found |= _keywords(value)
        return found
    if isinstance(schema, list):
        return set().union(*(_keywords(v) for v in schema))
    return set()


@pytest.mark.parametrize("model", models.LLM_OUTPUTS, ids=lambda m: m.__name__)
def test_every_llm_output_schema_keeps_to_the_portable_strict_subset(
    model: type[models.Record],
) -> None:
    from openai.lib._pydantic import to_strict_json_schema

    assert _keywords(to_strict_json_schema(model)) <= PORTABLE


def test_the_portable_check_finds_min_length_and_an_empty_brief_is_still_refused() -> None:
    assert _keywords({"type": "string", "minLength": 1}) == {"type", "minLength"}
    with pytest.raises(pydantic.ValidationError, match="the brief is empty"):
        models.BriefDraft(brief="  ")
