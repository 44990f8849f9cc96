"""Pure: curators' decisions (``reviews`` rows) and what they do to a split version's records.

A decision is about a target: accept or reject it, regrade one of its graded references, mark
its brief leaking, or replace its brief. Rows are never rewritten; per target the latest row of
each kind stands (per reference, for a grade), whichever version it was made on, so a decision
holds in every later version of the split until another replaces it.

:func:`apply` makes a new version's records from a version's records and the standing
decisions: a rejected instance is dropped, a regrade changes the reference's tier and role (a
tier above 0 makes it a qrel, tier 0 takes it out), an edited brief replaces the brief and its
findings (the re-audit made when it was edited). A leak mark changes nothing in the records: it
holds while the brief it was made on is the instance's brief, and :func:`leak_failures` makes
each such instance fail the audit.

Integrity (what a page may record): a rewritten brief that breaks the build's own length or
lexical rule (:func:`brief_failures`) is kept as a *draft*, which ``--apply-reviews`` refuses;
each decision names the standing decision of its kind it was made over
(:meth:`Standing.latest`), so one made over an older one is refused; a curator's name is
checked by :func:`check_curator`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any

from inspire_build import audit
from inspire_build.briefs import MAX_WORDS, MIN_WORDS
from inspire_build.models import Role

MAX_NOTE = 2_000  # characters of a reason or a note
MAX_BRIEF = 20_000  # characters of an edited brief
MAX_CURATOR = 80  # characters of a curator's name


class Action(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"
    GRADE = "grade"  # after: tier, role, note
    LEAK = "leak"  # after: leaking, note, brief (the text it was marked on)
    BRIEF = "brief"  # after: text, words, findings (its re-audit), failed (a draft's rules)


class State(StrEnum):
    """An instance's review state on the version page."""

    UNREVIEWED = "unreviewed"
    REVIEWED = "reviewed"  # a decision, but neither accepted nor rejected
    ACCEPTED = "accepted"
    REJECTED = "rejected"


@dataclasses.dataclass(frozen=True)
class Review:
    """One ``reviews`` row."""

    review_id: int
    target_id: str
    action: Action
    after: Mapping[str, Any]
    paper_id: str | None = None
    curator: str = ""
    before: Mapping[str, Any] | None = None
    instance_id: str = ""
    version_id: str = ""
    created_at: dt.datetime | None = None
    based_on: int | None = None  # the standing review of its kind the curator saw (None: none)
    draft: bool = False  # a rewritten brief that breaks a build rule: never applied


@dataclasses.dataclass(frozen=True)
class Standing:
    """A target's standing decisions: the latest of each kind."""

    verdict: Review | None = None  # the latest accept or reject
    grades: Mapping[str, Review] = dataclasses.field(default_factory=dict)  # paper -> latest
    leak: Review | None = None
    brief: Review | None = None

    @property
    def state(self) -> State:
        if self.verdict is not None:
            return _VERDICTS[self.verdict.action]
        return State.REVIEWED if self.reviews else State.UNREVIEWED

    @property
    def rejected(self) -> bool:
        return self.verdict is not None and self.verdict.action is Action.REJECT

    @property
    def corrected(self) -> bool:
        """A regrade or an edited brief stands (not a draft, nor the version's own put back)."""
        brief = self.brief
        edited = brief is not None and not brief.draft and not brief.after.get("restored")
        return bool(self.grades) or edited

    @property
    def drafted(self) -> bool:
        """The standing brief is a draft: ``--apply-reviews`` refuses while it stands."""
        return self.brief is not None and self.brief.draft

    def latest(self, action: Action, paper_id: str | None = None) -> Review | None:
        """The standing review a new ``action`` (on ``paper_id``, for a grade) would replace:
        the verdict, the reference's grade, the leak mark or the brief."""
        if action in _VERDICTS:
            return self.verdict
        if action is Action.GRADE:
            return self.grades.get(paper_id or "")
        return self.leak if action is Action.LEAK else self.brief

    @property
    def leaking(self) -> bool:
        return self.leak is not None and self.leak.after.get("leaking") is True

    @property
    def reviews(self) -> list[Review]:
        """Every standing review, by ID."""
        found = [self.verdict, self.leak, self.brief, *self.grades.values()]
        return sorted((r for r in found if r is not None), key=lambda r: r.review_id)


_VERDICTS = {Action.ACCEPT: State.ACCEPTED, Action.REJECT: State.REJECTED}
NOT_REVIEWED = Standing()


def standing(reviews: Iterable[Review]) -> dict[str, Standing]:
    """target -> its standing decisions: of each kind, the review with the highest ID."""
    found: dict[str, Standing] = {}
    for review in sorted(reviews, key=lambda r: r.review_id):
        now = found.get(review.target_id, NOT_REVIEWED)
        if review.action in _VERDICTS:
            now = dataclasses.replace(now, verdict=review)
        elif review.action is Action.GRADE and review.paper_id is not None:
            now = dataclasses.replace(now, grades={**now.grades, review.paper_id: review})
        elif review.action is Action.LEAK:
            now = dataclasses.replace(now, leak=review)
        elif review.action is Action.BRIEF:
            now = dataclasses.replace(now, brief=review)
        found[review.target_id] = now
    return found


def check_grade(tier: int, role: str | None) -> str | None:
    """The role a grade keeps: none at tier 0, one of :class:`Role` above it. Raises ValueError
    naming what is wrong."""
    if tier not in (0, 1, 2, 3):
        raise ValueError(f"tier must be 0, 1, 2 or 3, not {tier}")
    if tier == 0:
        return None
    if role not in {r.value for r in Role}:
        raise ValueError(
            f"a tier-{tier} antecedent needs a role, one of: {', '.join(r.value for r in Role)}"
        )
    return role


def check_curator(name: str) -> str:
    """A curator's name as it is recorded: trimmed, not empty, at most ``MAX_CURATOR``
    characters, and with no control or format character (no line break, no bidi override).
    Raises ValueError naming what is wrong."""
    trimmed = name.strip()
    if not trimmed:
        raise ValueError("a curator needs a name")
    if len(trimmed) > MAX_CURATOR:
        raise ValueError(f"a curator's name has at most {MAX_CURATOR} characters")
    if any(unicodedata.category(c)[0] == "C" or c in "\u2028\u2029" for c in trimmed):
        raise ValueError("a curator's name may not hold a control character or line break")
    return trimmed


def brief_failures(text: str, terms: Sequence[str], numbers: Sequence[str]) -> list[str]:
    """The build's own rules a brief ``text`` breaks, in the words a build's brief records
    them: its length (``briefs.MIN_WORDS``-``briefs.MAX_WORDS`` words, counted as
    ``gold.brief_and_audit`` counts them) and the lexical audit (``audit.lexical``) under the
    target's redaction ``terms`` and result ``numbers``. Empty: it passes both."""
    failed = []
    words = len(text.split())
    if not MIN_WORDS <= words <= MAX_WORDS:
        failed.append(f"length: {words} words, outside {MIN_WORDS}-{MAX_WORDS}")
    lexical = audit.lexical("", text, terms, numbers)
    if not lexical.passed:
        failed.append(f"lexical: {lexical.detail}")
    return failed


@dataclasses.dataclass(frozen=True)
class Graded:
    """One graded reference of a target, as a version keeps it (tier 0 included)."""

    paper_id: str
    tier: int
    role: str | None
    rationale: str


@dataclasses.dataclass(frozen=True)
class Stored:
    """An instance as a version stores it: its target, cutoff and brief, every grade of its
    target, and its brief's findings (``check``, ``passed``, ``level``, ``detail``)."""

    target_id: str
    cutoff: dt.date
    brief_id: str
    brief: str
    grades: tuple[Graded, ...]
    findings: tuple[Mapping[str, Any], ...]

    @property
    def antecedents(self) -> list[tuple[str, int, str]]:
        """(paper, tier, role) of tiers 1-3, by paper: what becomes its qrels."""
        return sorted((g.paper_id, g.tier, g.role or "") for g in self.grades if g.tier > 0)


@dataclasses.dataclass(frozen=True)
class Figures:
    """What a version made by :func:`apply` reports of the review (on its card)."""

    reviewed: int = 0  # instances of the base with a standing decision
    accepted: int = 0
    rejected: int = 0  # dropped
    corrected: int = 0  # kept, with a regrade or an edited brief that changed them
    tier_changes: int = 0  # references whose tier a curator changed
    role_changes: int = 0  # antecedents whose role alone a curator changed
    briefs_edited: int = 0
    marked_leaking: int = 0  # kept instances whose brief a curator marked leaking
    emptied: int = 0  # instances whose every antecedent a curator took out: dropped

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def edited_brief_id(target_id: str, text: str) -> str:
    """The brief ID of a curator's brief (it has no ``briefs`` row)."""
    return "review-" + hashlib.sha256(f"{target_id}\0{text}".encode()).hexdigest()[:20]


def _regraded(grade: Graded, review: Review | None) -> Graded:
    if review is None:
        return grade
    tier = int(review.after["tier"])
    role = check_grade(tier, review.after.get("role"))
    note = str(review.after.get("note") or "").strip()
    said = f" | curator {review.curator} (review {review.review_id}): T{grade.tier} -> T{tier}"
    return Graded(
        grade.paper_id, tier, role, grade.rationale + said + (f": {note}" if note else "")
    )


def _applied(record: Stored, decided: Standing) -> tuple[Stored, Figures]:
    """One kept instance with its decisions applied, and what changed in it."""
    grades = tuple(_regraded(g, decided.grades.get(g.paper_id)) for g in record.grades)
    changed = [(old, new) for old, new in zip(record.grades, grades, strict=True) if old != new]
    tiers = sum(old.tier != new.tier for old, new in changed)
    roles = sum(old.tier == new.tier and old.role != new.role for old, new in changed)
    applied = dataclasses.replace(record, grades=grades)
    edited = decided.brief is not None and decided.brief.after["text"] != record.brief
    if decided.brief is not None and edited:
        text = str(decided.brief.after["text"])
        findings = tuple(dict(f) for f in decided.brief.after.get("findings", ()))
        brief_id = edited_brief_id(record.target_id, text)
        applied = dataclasses.replace(applied, brief=text, brief_id=brief_id, findings=findings)
    corrected = applied.antecedents != record.antecedents or edited
    return applied, Figures(
        corrected=int(corrected),
        tier_changes=tiers,
        role_changes=roles,
        briefs_edited=int(edited),
    )


def apply(
    records: Sequence[Stored], decisions: Mapping[str, Standing]
) -> tuple[list[Stored], Figures, list[int]]:
    """A new version's records: ``records`` (a version's) with the standing ``decisions``
    applied; the review's figures; and the IDs of the standing reviews of these records'
    targets (which the new version's hash covers)."""
    kept: list[Stored] = []
    totals = Figures()
    applied_ids: list[int] = []
    for record in records:
        decided = decisions.get(record.target_id, NOT_REVIEWED)
        applied_ids += [r.review_id for r in decided.reviews]
        counts = Figures(
            reviewed=int(bool(decided.reviews)),
            accepted=int(decided.state is State.ACCEPTED),
            rejected=int(decided.rejected),
        )
        if not decided.rejected:
            made, changes = _applied(record, decided)
            if made.antecedents:
                kept.append(made)
                leaking = leak_holds(decided, made.brief)
                counts = _sum(counts, dataclasses.replace(changes, marked_leaking=int(leaking)))
            else:  # its regrades took every antecedent out: counted, and dropped
                emptied = Figures(emptied=1, tier_changes=changes.tier_changes)
                counts = _sum(counts, emptied)
        totals = _sum(totals, counts)
    return kept, totals, sorted(applied_ids)


def _sum(a: Figures, b: Figures) -> Figures:
    return Figures(**{k: v + getattr(b, k) for k, v in a.as_dict().items()})


def leak_holds(decided: Standing, brief: str) -> bool:
    """Whether a curator's leak mark stands on ``brief``: the latest mark says leaking and was
    made on this very text (an edited brief is a new text, audited afresh)."""
    return decided.leaking and decided.leak is not None and decided.leak.after.get("brief") == brief


def leak_failures(
    instances: Iterable[tuple[str, str, str]], decisions: Mapping[str, Standing]
) -> list[tuple[str, str]]:
    """(instance ID, what failed) for each of ``instances`` (instance ID, target, brief) whose
    brief a curator marked leaking, in the audit report's words."""
    failed = []
    for iid, target_id, brief in instances:
        decided = decisions.get(target_id, NOT_REVIEWED)
        if decided.leak is not None and leak_holds(decided, brief):
            note = str(decided.leak.after.get("note") or "").strip()
            failed.append(
                (
                    iid,
                    f"curator: marked leaking by {decided.leak.curator}"
                    + (f": {note}" if note else ""),
                )
            )
    return failed


def describe(review: Review) -> str:
    """One line for a review's history: what the curator saw and what they decided."""
    before, after = review.before or {}, review.after
    note = str(after.get("note") or after.get("reason") or "").strip()
    said = f": {note}" if note else ""
    if review.action is Action.GRADE:
        return f"{_grade(before)} -> {_grade(after)}{said}"
    if review.action is Action.LEAK:
        return (
            "marked the brief leaking" if after.get("leaking") else "took the leak mark back"
        ) + said
    if review.action is Action.BRIEF:
        words = len(str(before.get("text", "")).split()), len(str(after.get("text", "")).split())
        if review.draft:
            broken = "; ".join(after.get("failed", ())) or "a build rule"
            return f"kept a draft of the brief ({words[0]} -> {words[1]} words; breaks {broken})"
        if after.get("restored"):
            return f"put the version's own brief back ({words[0]} -> {words[1]} words)"
        failed = [f["check"] for f in after.get("findings", ()) if not f.get("passed")]
        said = f"re-audit failed {', '.join(failed)}" if failed else "re-audit passed"
        return f"rewrote the brief ({words[0]} -> {words[1]} words; {said})"
    was = before.get("state")
    return f"{review.action.value}ed" + (f" (was {was})" if was else "") + said


def _grade(values: Mapping[str, Any]) -> str:
    tier = values.get("tier")
    if tier is None:
        return "?"
    return f"T{tier}" + (f" {values['role']}" if values.get("role") else "")
