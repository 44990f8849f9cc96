"""Curator review against the warehouse: what the version page and an instance page show of a
split version, and each decision recorded as a ``reviews`` row under the name of the curator who
took it. A rewritten brief that keeps the build's length and lexical rules is re-audited at once
by the build's own five checks; one that breaks them is kept as a draft. A decision made over an
older standing decision of its kind than the one that stands now is refused (:class:`Stale`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

import duckdb

from inspire_build import audit, audit_checks, gold
from inspire_build.briefs import MAX_WORDS, MIN_WORDS, mentioned
from inspire_build.config import Settings
from inspire_build.errors import InputError
from inspire_build.llm import LLM
from inspire_build.models import AuditCheck, Role
from inspire_build.review import decisions, highlight
from inspire_build.review.decisions import Action, Review, Standing, State
from inspire_build.sources import make_client
from inspire_build.tables import reviews as table
from inspire_build.tables import search as search_table

CHECKS = tuple(c.value for c in AuditCheck)
# The version page's filters: by review state, and by a check's outcome ("any" check too).
STATES = ("unreviewed", "reviewed", "accepted", "rejected", "corrected", "leaking", "draft")
OUTCOMES = ("failed", "partial", "passed")
ROLES = tuple(r.value for r in Role)


class UnknownInstance(InputError):
    """No instance of the served version has this ID."""


class Stale(InputError):
    """A decision made over another standing decision of its kind than the one that stands now
    (``newer``; None: none stands): another curator, or another tab, decided in between."""

    def __init__(self, message: str, newer: Review | None) -> None:
        super().__init__(message)
        self.newer = newer


def json_value(value: object) -> Any:
    """A JSON column as DuckDB gives it (text, or already decoded), decoded."""
    return json.loads(value) if isinstance(value, str) else value


def review_of(row: Mapping[str, Any]) -> Review:
    """A ``reviews`` row as a :class:`Review`."""
    return Review(
        review_id=int(row["review_id"]),
        target_id=str(row["target_id"]),
        action=Action(row["action"]),
        after=json_value(row["after"]) or {},
        paper_id=row["paper_id"],
        curator=str(row["curator"]),
        before=json_value(row["before"]),
        instance_id=str(row["instance_id"]),
        version_id=str(row["version_id"]),
        created_at=_utc(row["created_at"]),
        based_on=row["based_on"],
        draft=bool(row["draft"]),
    )


def _utc(value: Any) -> Any:
    """A time from the warehouse (DuckDB gives it in the local zone) in UTC, as pages show it."""
    return value.astimezone(dt.UTC) if isinstance(value, dt.datetime) else value


def standing_of(con: duckdb.DuckDBPyConnection, split: str) -> dict[str, Standing]:
    """target -> its standing decisions, from every review made on a version of ``split``."""
    return decisions.standing(review_of(row) for row in table.of_split(con, split))


@dataclasses.dataclass(frozen=True)
class Row:
    """One instance on the version page."""

    number: int
    instance_id: str
    outcome: str | None  # the target's outcome in the split
    antecedents: int
    tiers: Mapping[int, int]
    findings: Mapping[str, Mapping[str, Any]]  # check -> its finding
    decided: Standing

    def result(self, check: str) -> str:
        """``failed``, ``partial`` (passed, partial leakage) or ``passed``; ``-`` if none."""
        found = self.findings.get(check)
        if found is None:
            return "-"
        if not found["passed"]:
            return "failed"
        return "partial" if found["level"] == "partial" else "passed"

    def shown(self, state: str, finding: str) -> bool:
        """Whether the version page's filters (empty: any) let this row through."""
        if state == "corrected" and not self.decided.corrected:
            return False
        if state == "leaking" and not self.decided.leaking:
            return False
        if state == "draft" and not self.decided.drafted:
            return False
        if state == "reviewed" and self.decided.state is State.UNREVIEWED:
            return False
        if state in ("unreviewed", "accepted", "rejected") and self.decided.state.value != state:
            return False
        if not finding:
            return True
        check, _, outcome = finding.partition(":")
        checks = CHECKS if check == "any" else (check,)
        return any(self.result(c) == outcome for c in checks)


def check_filters(state: str, finding: str) -> None:
    if state and state not in STATES:
        raise InputError(f"unknown review state {state!r}; known: {', '.join(STATES)}")
    check, _, outcome = finding.partition(":")
    if finding and (check not in ("any", *CHECKS) or outcome not in OUTCOMES):
        raise InputError(f"unknown finding filter {finding!r}; e.g. mechanism:partial, any:failed")


def progress(rows: list[Row]) -> dict[str, int]:
    """How many instances are reviewed, accepted, rejected, corrected, marked leaking, and hold
    a draft brief."""
    states = Counter(r.decided.state for r in rows)
    return {
        "instances": len(rows),
        "reviewed": len(rows) - states[State.UNREVIEWED],
        "accepted": states[State.ACCEPTED],
        "rejected": states[State.REJECTED],
        "corrected": sum(r.decided.corrected for r in rows),
        "leaking": sum(r.decided.leaking for r in rows),
        "drafts": sum(r.decided.drafted for r in rows),
    }


def brief_rules(con: duckdb.DuckDBPyConnection, target_id: str, text: str) -> list[str]:
    """The build's length and lexical rules that ``text``, as the brief of ``target_id``, breaks
    (:func:`decisions.brief_failures`, under the target's redaction terms and result numbers);
    empty: it keeps them."""
    inputs = gold.load_inputs(con, target_id)
    terms, numbers = gold.redaction_terms(inputs), audit.result_numbers(inputs.abstract)
    return decisions.brief_failures(text, terms, numbers)


@dataclasses.dataclass(frozen=True)
class _Made:
    """What a decision records besides who, when and where."""

    paper: str | None
    before: dict[str, Any]
    after: dict[str, Any]
    draft: bool = False


class Curation:
    """One split version under review, over an open warehouse connection (the caller keeps it
    to one thread at a time). Each decision names its curator."""

    def __init__(self, con: duckdb.DuckDBPyConnection, settings: Settings, version_id: str) -> None:
        header = table.version(con, version_id)
        if header is None:
            raise InputError(f"unknown version {version_id!r}")
        self.con, self.settings = con, settings
        self.version, self.split = version_id, str(header["split"])
        self.header = {**header, "created_at": _utc(header["created_at"])}
        self._llm: LLM | None = None

    # --- what the pages read ----------------------------------------------------------------

    def instances(self) -> dict[str, dict[str, Any]]:
        return {str(r["instance_id"]): r for r in table.instances(self.con, self.version)}

    def rows(self) -> list[Row]:
        """Every instance of the version, in instance-ID order, with its review state."""
        tiers: dict[str, Counter[int]] = {}
        for qrel in table.qrels(self.con, self.version):
            tiers.setdefault(qrel["instance_id"], Counter())[int(qrel["tier"])] += 1
        found: dict[str, dict[str, Any]] = {}
        for finding in table.findings(self.con, self.version):
            found.setdefault(finding["instance_id"], {})[finding["check"]] = finding
        decided = standing_of(self.con, self.split)
        return [
            Row(
                number,
                iid,
                row["outcome"],
                int(row["n_antecedents"]),
                dict(tiers.get(iid, Counter())),
                found.get(iid, {}),
                decided.get(str(row["target_id"]), decisions.NOT_REVIEWED),
            )
            for number, (iid, row) in enumerate(self.instances().items(), start=1)
        ]

    def instance(self, instance_id: str) -> dict[str, Any]:
        found = table.instances(self.con, self.version, instance_id)
        if not found:
            raise UnknownInstance(f"no instance {instance_id!r} in version {self.version}")
        return found[0]

    def applied(self) -> dict[str, Any] | None:
        """For a version made by ``--apply-reviews``: its base, the reviews and the figures."""
        found = json_value(self.header.get("reviews"))
        return dict(found) if found else None

    def boundary(self) -> dict[str, Any]:
        """The attacks ``inspire audit`` played on this version's public side (empty: none)."""
        return table.boundary(self.con, self.version)

    def page(self, instance_id: str) -> dict[str, Any]:
        """Everything an instance page shows (see ``templates/instance.html``)."""
        row = self.instance(instance_id)
        target_id, brief = str(row["target_id"]), str(row["brief"])
        target = table.target(self.con, self.split, target_id)
        inputs = gold.load_inputs(self.con, target_id)
        terms = gold.redaction_terms(inputs)
        numbers = audit.result_numbers(inputs.abstract)
        decided = standing_of(self.con, self.split).get(target_id, decisions.NOT_REVIEWED)
        history = [review_of(r) for r in table.of_split(self.con, self.split, target_id)]
        return {
            "instance": row,
            "brief": highlight.segments(brief, terms, numbers),
            "terms": terms,
            "hits": [
                *mentioned(brief, terms),
                *(n for n in numbers if highlight.number_spans(brief, n)),
            ],
            "findings": table.findings(self.con, self.version, instance_id),
            "target": target,
            "graded": self._graded(target_id, decided),
            "excluded": [
                r for r in table.references(self.con, target_id) if r["status"] != "eligible"
            ],
            "completeness": table.completeness(self.con, target_id),
            "decided": decided,
            "based_on": {a.value: _id(decided.latest(a)) for a in Action if a is not Action.GRADE},
            "leak_holds": decisions.leak_holds(decided, brief),
            "edited": self._edited(decided, terms, numbers),
            "min_words": MIN_WORDS,
            "max_words": MAX_WORDS,
            "history": sorted(history, key=lambda r: -r.review_id),
        }

    def _graded(self, target_id: str, decided: Standing) -> dict[int, list[dict[str, Any]]]:
        """The target's grades in this version by tier (3 first, tier 0 last), each with its
        reference's contexts and intents and any standing regrade."""
        cited: dict[str, dict[str, Any]] = {}
        for ref in table.references(self.con, target_id):
            if ref["paper_id"] is not None:
                cited.setdefault(str(ref["paper_id"]), ref)
        by_tier: dict[int, list[dict[str, Any]]] = {3: [], 2: [], 1: [], 0: []}
        for grade in table.grades(self.con, self.version, target_id):
            ref = cited.get(str(grade["paper_id"]), {})
            regrade = decided.grades.get(str(grade["paper_id"]))
            by_tier[int(grade["tier"])].append(
                {
                    **grade,
                    "title": ref.get("title"),
                    "year": ref.get("year"),
                    "contexts": ref.get("contexts") or [],
                    "intents": ref.get("intents") or [],
                    "influential": ref.get("is_influential"),
                    "regrade": regrade.after if regrade is not None else None,
                    "based_on": _id(regrade),
                }
            )
        return by_tier

    @staticmethod
    def _edited(decided: Standing, terms: list[str], numbers: list[str]) -> dict[str, Any] | None:
        """The standing edited brief, highlighted, with its re-audit, or, for a draft, the
        build rules it breaks."""
        if decided.brief is None:
            return None
        text = str(decided.brief.after["text"])
        return {
            "review": decided.brief,
            "segments": highlight.segments(text, terms, numbers),
            "findings": decided.brief.after.get("findings", []),
            "words": len(text.split()),
            "fits": MIN_WORDS <= len(text.split()) <= MAX_WORDS,
            "draft": decided.brief.draft,
            "failed": decided.brief.after.get("failed", []),
        }

    def neighbours(
        self, instance_id: str, state: str, finding: str
    ) -> tuple[str | None, str | None]:
        """The previous and next instance among those the filters let through."""
        shown = [
            r.instance_id
            for r in self.rows()
            if r.shown(state, finding) or r.instance_id == instance_id
        ]
        at = shown.index(instance_id)
        return (shown[at - 1] if at > 0 else None, shown[at + 1] if at + 1 < len(shown) else None)

    # --- decisions --------------------------------------------------------------------------

    def record(self, instance_id: str, action: str, form: Mapping[str, str], curator: str) -> int:
        """Record one decision of ``curator`` on an instance; returns its review ID. The form's
        ``based_on`` names the standing decision of its kind the curator saw (0: none); when
        another stands now, raises :class:`Stale`. Raises InputError naming anything else that
        is wrong (an unknown action, a reject without a reason, a decision that changes
        nothing...). The check and the write are one step: the review app handles one request
        at a time."""
        row = self.instance(instance_id)
        try:
            chosen = Action(action)
        except ValueError:
            raise InputError(f"unknown action {action!r}") from None
        try:
            name = decisions.check_curator(curator)
        except ValueError as error:
            raise InputError(str(error)) from None
        target_id = str(row["target_id"])
        decided = standing_of(self.con, self.split).get(target_id, decisions.NOT_REVIEWED)
        based_on = _based_on(form, decided.latest(chosen, form.get("paper_id")))
        made = self._decision(chosen, row, form, decided)
        return table.add(
            self.con,
            {
                "split": self.split,
                "version_id": self.version,
                "instance_id": instance_id,
                "target_id": target_id,
                "paper_id": made.paper,
                "action": chosen.value,
                "curator": name,
                "created_at": dt.datetime.now(dt.UTC),
                "before": made.before,
                "after": made.after,
                "based_on": based_on,
                "draft": made.draft,
            },
        )

    def _decision(
        self, action: Action, row: Mapping[str, Any], form: Mapping[str, str], decided: Standing
    ) -> _Made:
        note = _note(form.get("note") or form.get("reason") or "")
        if action in (Action.ACCEPT, Action.REJECT):
            if action is Action.REJECT and not note:
                raise InputError("a rejection needs a reason")
            verdict = decided.verdict
            if verdict is not None and verdict.action is action:
                raise InputError(
                    f"already {action.value}ed (review #{verdict.review_id} by "
                    f"{verdict.curator}): nothing changes"
                )
            return _Made(None, {"state": decided.state.value}, {"reason": note})
        if action is Action.GRADE:
            return self._regrade(row, form, decided, note)
        if action is Action.LEAK:  # on the brief the page shows: a standing rewrite, if any
            return _leak(_shown_brief(row, decided), form, decided, note)
        return self._rewrite(row, form, decided)

    def _regrade(
        self, row: Mapping[str, Any], form: Mapping[str, str], decided: Standing, note: str
    ) -> _Made:
        paper = form.get("paper_id", "")
        target = str(row["target_id"])
        graded = {g["paper_id"]: g for g in table.grades(self.con, self.version, target)}
        if paper not in graded:
            raise InputError(f"{paper!r} is not a graded reference of this instance's target")
        try:
            tier = int(form.get("tier", ""))
            role = decisions.check_grade(tier, form.get("role") or None)
        except ValueError as error:
            raise InputError(str(error)) from None
        standing = decided.grades.get(paper)
        now = standing.after if standing is not None else graded[paper]
        before = {"tier": int(now["tier"]), "role": now["role"]}
        if (tier, role) == (before["tier"], before["role"]):
            raise InputError(f"T{tier} {role or ''} is already its grade: nothing changes")
        return _Made(paper, before, {"tier": tier, "role": role, "note": note})

    def _rewrite(self, row: Mapping[str, Any], form: Mapping[str, str], decided: Standing) -> _Made:
        """A rewritten brief: re-audited when it keeps the build's length and lexical rules,
        else kept as a draft (with the rules it breaks, not re-audited); the version's own brief
        saved back carries the version's own findings."""
        text = _paragraphs(form.get("text") or "")
        if not text:
            raise InputError("an edited brief needs its text")
        if len(text) > decisions.MAX_BRIEF:
            raise InputError(f"an edited brief has at most {decisions.MAX_BRIEF:,} characters")
        now = _shown_brief(row, decided)
        if text.split() == now.split():
            raise InputError("the brief is unchanged")
        iid, target_id = str(row["instance_id"]), str(row["target_id"])
        if text.split() == str(row["brief"]).split():  # the version's own, whatever its spacing
            text = str(row["brief"])  # back as its build wrote and judged it, paragraphs and all
        before, words = {"text": now}, len(text.split())
        if text == str(row["brief"]):
            own = [
                {k: v for k, v in f.items() if k != "instance_id"}
                for f in table.findings(self.con, self.version, iid)
            ]
            restored = {"text": text, "words": words, "findings": own, "restored": True}
            return _Made(None, before, restored)
        failed = brief_rules(self.con, target_id, text)
        if failed:
            return _Made(None, before, {"text": text, "words": words, "failed": failed}, True)
        findings = self.reaudit(target_id, text)
        return _Made(None, before, {"text": text, "findings": findings, "words": words})

    def reaudit(self, target_id: str, text: str) -> list[dict[str, Any]]:
        """The five checks a build runs on a brief, on ``text`` (cached calls and stored
        searches cost nothing; a search that cannot be made is reported as not run)."""
        inputs = gold.load_inputs(self.con, target_id)
        search_table.build_search_index(self.con)
        if self._llm is None:
            self._llm = gold.make_llm(self.settings, self.con)
        client = make_client(self.settings, self.con)
        jitter = self.settings.cutoff_jitter_days
        found = audit_checks.checks(
            self._llm,
            self.con,
            self.settings,
            decisions.edited_brief_id(target_id, text),
            text,
            (target_id, inputs.title, inputs.abstract),
            gold.redaction_terms(inputs),
            searching=audit_checks.search_for(client, self.con, target_id, jitter),
        )
        return [f.model_dump(mode="json", exclude={"brief_id"}) for f in found]


def _id(review: Review | None) -> int:
    """A standing review's ID as a form carries it (0: none stands)."""
    return review.review_id if review is not None else 0


def _based_on(form: Mapping[str, str], standing: Review | None) -> int | None:
    """The standing review the form was made over, checked against the one that stands now."""
    given = (form.get("based_on") or "").strip()
    if not (given.isascii() and given.isdigit()):
        raise InputError(
            "this form does not say which decision it was made over (based_on); reload the page"
        )
    if int(given) != _id(standing):
        seen = f"review #{given}" if int(given) else "no decision"
        if standing is None:
            raise Stale(f"not recorded: the page showed {seen}, and none stands now", None)
        raise Stale(
            f"not recorded: the page showed {seen}, but review #{standing.review_id} by "
            f"{standing.curator} stands now ({decisions.describe(standing)}); read it and "
            "decide again",
            standing,
        )
    return int(given) or None


def _shown_brief(row: Mapping[str, Any], decided: Standing) -> str:
    """The brief an instance's page shows: the standing rewrite (or draft), else the
    version's own."""
    return str(decided.brief.after["text"]) if decided.brief is not None else str(row["brief"])


def _leak(brief: str, form: Mapping[str, str], decided: Standing, note: str) -> _Made:
    """A leak mark on ``brief``, or the mark taken back; either must change what holds."""
    leaking = form.get("leaking", "true") == "true"
    if leaking and not note:
        raise InputError("a leak mark needs a note: what gives the target away")
    held = decisions.leak_holds(decided, brief)
    if leaking == held:
        said = "is already marked leaking" if held else "carries no leak mark"
        raise InputError(f"this brief {said}: nothing changes")
    return _Made(None, {"leaking": held}, {"leaking": leaking, "note": note, "brief": brief})


def _note(text: str) -> str:
    note = " ".join(text.split())
    if len(note) > decisions.MAX_NOTE:
        raise InputError(f"a reason or note has at most {decisions.MAX_NOTE:,} characters")
    return note


def _paragraphs(typed: str) -> str:
    """A brief as a form sends it: its line ends made one kind, each line's trailing spaces
    and the ends dropped; its paragraph breaks kept (the problem is the first paragraph)."""
    lines = typed.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()
