"""Domain records: frozen pydantic models for everything that crosses a module boundary.

Past the parsing boundary (``sources/*.parse``) the pipeline passes these, never raw dicts.
``schemas/models/*.json`` holds their JSON Schemas; ``make schemas`` regenerates them and a
test checks they are current.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from enum import IntEnum, StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    computed_field,
    field_validator,
    model_validator,
)

from inspire_build import ids


class Record(BaseModel):
    """Base for every domain record: immutable, and strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Source(StrEnum):
    OPENALEX = "openalex"
    S2 = "s2"
    ARXIV = "arxiv"


class DatePrecision(StrEnum):
    """How much of a date a source actually gave: year-only dates are common in S2."""

    DAY = "day"
    MONTH = "month"
    YEAR = "year"


class MatchRule(StrEnum):
    """How a reference from one source was matched to another, in the order they are tried."""

    DOI = "doi"
    ARXIV = "arxiv"
    OPENALEX = "openalex"
    S2 = "s2"
    TITLE_YEAR = "title_year"


class TargetStatus(StrEnum):
    CANDIDATE = "candidate"
    ACCEPTED = "accepted"
    EXCLUDED = "excluded"


class TargetOutcome(StrEnum):
    """Why a target has its status, as ``targets.outcome``: the reason's kind, for queries and
    for code, which never parses a reason string."""

    SELECTED = "selected"  # awaiting lineage
    OVER_LIMIT = "over_limit"
    NO_DATE = "no_date"  # no first public date in any source
    OUTSIDE_WINDOW = "outside_window"  # first public outside the split's window
    NO_REFERENCES = "no_references"  # no source lists any reference
    NO_ELIGIBLE = "no_eligible_reference"  # none strictly before the cutoff
    THIN_WINDOW = "thin_window"  # its cutoff's window holds too few look-alikes to hide it
    RESOLVED = "lineage_resolved"  # a candidate for the LLM steps
    LLM_FAILED = "llm_failed"  # the model refused or answered invalidly, even after repair
    EVERY_BRIEF_LEAKED = "every_brief_leaked"
    GRADING_FAILED = "grading_failed"
    NO_ANTECEDENT = "no_graded_antecedent"  # the grader found none among the eligible
    ACCEPTED = "accepted"


class ReferenceStatus(StrEnum):
    """Exactly one per reference; see cutoff.reference_status for the order they are tested."""

    ELIGIBLE = "eligible"  # strictly before the cutoff: an antecedent
    AFTER_CUTOFF = "after_cutoff"
    DATED_AFTER_TARGET = "dated_after_target"
    NO_DATE = "no_date"
    UNRESOLVED = "unresolved"  # no usable identifier
    SELF = "self"  # the same work as the target


class VersionStatus(StrEnum):
    """``split_versions.status``: a version is written in one transaction, so a stored one is
    complete; ``building`` is kept for the rows of versions that predate that."""

    BUILDING = "building"
    COMPLETE = "complete"


class BriefStatus(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class AuditCheck(StrEnum):
    LEXICAL = "lexical"
    IDENTITY = "identity"
    RETRIEVAL = "retrieval"
    MECHANISM = "mechanism"
    SEARCH = "search"  # identity by search: OpenAlex, within the published cutoff's window


class LeakLevel(StrEnum):
    NONE = "none"
    PARTIAL = "partial"
    FULL = "full"


class Tier(IntEnum):
    """A reference's grade; the value is also the default linear gain (T3=3, T2=2, T1=1).

    T0 is a cited reference that is not an antecedent (a passing mention, a dataset used only
    for evaluation, a contrast): it stays in ``grades`` with its rationale, and is never a qrel,
    never gold, and has gain 0.
    """

    T0 = 0
    T1 = 1
    T2 = 2
    T3 = 3


class Role(StrEnum):
    PROBLEM = "problem"
    METHOD_FOUNDATION = "method-foundation"
    COMPONENT = "component"
    BASELINE = "baseline"
    DATASET_OR_BENCHMARK = "dataset-or-benchmark"
    BACKGROUND = "background"


class PaperIds(Record):
    """Every identifier one work is known by. Values are canonicalised on the way in."""

    openalex: str | None = None
    doi: str | None = None
    arxiv: str | None = None
    s2: str | None = None
    corpus_id: str | None = None

    @field_validator("openalex", "doi", "arxiv", "s2", "corpus_id")
    @classmethod
    def _canonical(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _CANONICAL[info.field_name](value)

    def typed(self) -> list[ids.PaperId]:
        """The IDs present, as typed identifiers (the rows this work adds to ``paper_ids``)."""
        pairs = (
            (ids.Scheme.OPENALEX, self.openalex),
            (ids.Scheme.DOI, self.doi),
            (ids.Scheme.ARXIV, self.arxiv),
            (ids.Scheme.S2, self.s2),
            (ids.Scheme.CORPUS_ID, self.corpus_id),
        )
        return [ids.PaperId(scheme, value) for scheme, value in pairs if value is not None]

    def is_empty(self) -> bool:
        return not self.typed()


# Each field of PaperIds (by the name pydantic gives the validator) -> its scheme's normaliser.
_CANONICAL: dict[str | None, Callable[[str], str]] = {
    "openalex": ids.normalize_openalex,
    "doi": ids.normalize_doi,
    "arxiv": ids.normalize_arxiv,
    "s2": ids.normalize_s2,
    "corpus_id": lambda value: ids.normalize_corpus_id(f"CorpusId:{value}"),
}


class Version(Record):
    """One arXiv version and the date it appeared."""

    version: int = Field(ge=1)
    date: dt.date


class Paper(Record):
    """One work as one source describes it.

    ``referenced_works`` holds canonical IDs (``openalex:W…``) where the source lists them;
    ``versions`` holds arXiv version dates where known; for arXiv, ``fields`` are its categories.
    A value the source did not give is None (or an empty tuple for list fields it may omit).
    """

    source: Source
    ids: PaperIds
    title: str | None = None
    abstract: str | None = None
    year: int | None = Field(default=None, ge=1000, le=2100)
    publication_date: dt.date | None = None
    date_precision: DatePrecision | None = None
    venue: str | None = None
    authors: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    reference_count: int | None = Field(default=None, ge=0)
    referenced_works: tuple[str, ...] | None = None  # None: the source does not list them
    versions: tuple[Version, ...] | None = None  # None: the source does not date versions
    # Fields the source gave with the wrong type, read as missing: "title: a list, not text".
    problems: tuple[str, ...] = ()


class Provenance(Record):
    """Which source listed a reference, and how it was matched to the merged entry."""

    source: Source
    match_rule: MatchRule | None = None
    match_score: float | None = Field(default=None, ge=0, le=100)


class Reference(Record):
    """One entry of a target's bibliography, merged across sources."""

    target_id: str
    ref_key: str
    ids: PaperIds
    title: str | None = None
    year: int | None = None
    publication_date: dt.date | None = None
    contexts: tuple[str, ...] | None = None  # None: the source gives no contexts
    intents: tuple[str, ...] | None = None
    is_influential: bool | None = None
    provenance: tuple[Provenance, ...] = ()
    status: ReferenceStatus | None = None
    reason: str | None = None


class Target(Record):
    """A candidate target paper of a split, with its terminal status and the reason for it: a
    row of ``targets``."""

    split: str
    paper_id: str
    title: str | None = None
    # every candidate's text: the audit's bm25 attacker ranks a window's candidates
    abstract: str | None = None
    first_public_date: dt.date | None = None
    cutoff_date: dt.date | None = None  # the published cutoff, once lineage has set it
    status: TargetStatus = TargetStatus.CANDIDATE
    reason: str | None = None
    outcome: TargetOutcome | None = None  # the reason's kind
    source_problems: str | None = None  # what the sources could not say about it
    updated_at: dt.datetime


class Brief(Record):
    """A solution-redacted research brief written from a target (one per attempt): a row of
    ``briefs``. An attempt the model failed for good has an empty text."""

    brief_id: str
    target_id: str
    attempt: int = Field(ge=1)
    text: str
    prompt_name: str
    prompt_hash: str
    backend: str
    model: str
    status: BriefStatus | None = None
    reason: str | None = None
    created_at: dt.datetime

    @computed_field  # type: ignore[prop-decorator]
    @property
    def word_count(self) -> int:
        return len(self.text.split())


class AuditFinding(Record):
    """The outcome of one leakage check on one brief."""

    brief_id: str
    check: AuditCheck
    passed: bool
    level: LeakLevel = LeakLevel.NONE
    detail: str = ""


class Grade(Record):
    """An eligible reference's tier for one target, with the grader's rationale; a role only
    above tier 0 (an antecedent), none at tier 0: a row of ``grades``."""

    target_id: str
    paper_id: str
    tier: Tier
    role: Role | None = None
    rationale: str = Field(min_length=1)
    backend: str
    model: str
    prompt_hash: str

    @model_validator(mode="after")
    def _role_only_above_tier_zero(self) -> Grade:
        if (self.role is None) != (self.tier is Tier.T0):
            raise ValueError("a grade has a role exactly when its tier is above 0")
        return self


class Instance(Record):
    """One benchmark item of a split version: what the agent sees, plus evaluator-only keys; a
    row of ``instances``. Its ID is an HMAC under the warehouse's secret instance key."""

    instance_id: str
    version_id: str
    target_id: str
    brief_id: str
    brief: str
    cutoff_date: dt.date
    n_antecedents: int = Field(ge=0)


class SplitVersion(Record):
    """An immutable, reproducible build of a split: a row of ``split_versions``, and, in
    ``notes``, what the write that returned it has to say (never stored)."""

    version_id: str
    split: str
    label: str | None = None
    config_hash: str
    code_version: str
    prompt_hashes: Mapping[str, str]
    models: Mapping[str, str | int]
    counts: Mapping[str, int]
    created_at: dt.datetime
    status: VersionStatus | None = None
    cutoff_jitter_days: int | None = None  # every cutoff lies 0 to this many days early
    written_at: dt.datetime | None = None  # the last write; the latest version is the newest
    # A reviewed version's base version, the reviews applied and the figures; None for a build.
    reviews: Mapping[str, Any] | None = None
    cutoff_jitter_setting: int | None = None  # INSPIRE_CUTOFF_JITTER_DAYS as the build set it
    cutoffs_kept: int | None = None  # cutoffs an earlier version published, kept as they were
    notes: tuple[str, ...] = Field(default=(), exclude=True)

    def as_dict(self) -> dict[str, Any]:
        """The version's row with its ``notes``, as a build reports it."""
        return {**self.model_dump(), "notes": list(self.notes)}


# --- what the LLM steps ask a model for (structured outputs) ---------------------------------


class BriefDraft(Record):
    """The ``brief`` prompt's answer."""

    brief: str

    # Checked here rather than by Field(min_length=1): the schema sent to the endpoint keeps to
    # the keywords every strict-schema server accepts (see LLM_OUTPUTS), and the check still holds.
    @field_validator("brief")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the brief is empty")
        return value


class IdentityGuess(Record):
    """The ``audit_identity`` prompt's answer: the paper the auditor thinks a brief is from."""

    title: str


class MechanismGuess(Record):
    """The ``audit_mechanism_guess`` prompt's answer: the mechanism guessed from a brief alone."""

    mechanism: str


class MechanismOverlap(Record):
    """The ``audit_mechanism`` prompt's answer: how much of the paper's method a guess has."""

    overlap: LeakLevel
    rationale: str


class AntecedentGrade(Record):
    """One reference's grade, as the ``grade`` prompt returns it, addressed by the reference's
    index in its part (1..n). ``role`` is null at tier 0.

    The schema carries no count, enum of IDs or length limit (providers cap enum sizes and some
    reject those keywords in strict mode): ``grading.check_sheet`` checks them instead.
    """

    index: int
    tier: Tier
    role: Role | None
    rationale: str


class GradeSheet(Record):
    """The ``grade`` prompt's answer: every reference of the part exactly once."""

    grades: tuple[AntecedentGrade, ...]


# The structured outputs the prompts ask for. Their JSON schemas keep to what OpenAI's strict
# mode and the OpenAI-compatible servers accept (types, properties, required, enums, anyOf,
# references): no minLength, minItems or maxItems, which some servers reject; our own
# validators check what those would have (tests/unit/test_models.py).
LLM_OUTPUTS: tuple[type[Record], ...] = (
    BriefDraft,
    IdentityGuess,
    MechanismGuess,
    MechanismOverlap,
    GradeSheet,
)

ALL_MODELS: tuple[type[Record], ...] = (
    PaperIds,
    Version,
    Paper,
    Provenance,
    Reference,
    Target,
    Brief,
    AuditFinding,
    Grade,
    Instance,
    SplitVersion,
    BriefDraft,
    IdentityGuess,
    MechanismGuess,
    MechanismOverlap,
    AntecedentGrade,
    GradeSheet,
)
