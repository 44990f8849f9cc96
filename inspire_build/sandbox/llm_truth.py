"""The sandbox's emulated model: answers to the pipeline's five prompts, read from each
request's own text, never from the world's hidden truth.

The emulated OpenAI endpoint asks :meth:`Truth.answer` first; it recognises a prompt by the
first line of its template in ``prompts/`` and answers it as a reader of that
prompt would (the module named for each says how):

- ``brief``: :mod:`~inspire_build.sandbox.emulated_brief`, from the title, abstract,
  instructions, listed terms and feedback the prompt shows;
- ``audit_identity``, ``audit_mechanism_guess``, ``audit_mechanism``:
  :mod:`~inspire_build.sandbox.emulated_audit`; identity knows only the world's papers first
  public before the model's training cutoff (``knowledge_cutoff``), as a real model's training
  does;
- ``grade``: :mod:`~inspire_build.sandbox.emulated_grade`, from the prompt's rubric and each
  reference block's evidence.

So the validity bench measures what the pipeline gives a model: a sabotaged prompt, stripped
evidence or a leak the checks miss moves its figures. Failures are planted at the seeded rates
of :class:`TruthRates`. Every choice comes from ``(seed, sha256 of the whole conversation)``
(lasting grade slips from the target's and the reference's titles): a repeat gets the same
answer, a redraft or a repair rolls new dice. A prompt it does not recognise gets ``None``: the
caller falls back to schema-driven answers.

The world is read only to keep the bench's log (which target a logged brief was written for).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import html
import random
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from inspire_build.lineage import normalise_title
from inspire_build.sandbox import emulated_audit, emulated_brief, emulated_grade
from inspire_build.sandbox.world import EVAL_START, Record, World
from inspire_build.templates import PROMPTS_DIR

PROMPT_KINDS = ("brief", "audit_identity", "audit_mechanism_guess", "audit_mechanism", "grade")
BRIEF_PLANTS = (*emulated_brief.PLANTS, "bad_length")
GRADE_PLANTS = ("demote", "slip", "shift", "overinclude", "drop")
KNOWLEDGE_CUTOFF = dt.date.fromisoformat(EVAL_START)


@dataclasses.dataclass(frozen=True)
class TruthRates:
    """Seeded rates of the failures the emulated model plants.

    Brief leaks and ``bad_length`` are per brief, each rolled on its own; ``refusal`` and
    ``invalid_json`` per answer of any of the five prompts; ``drop_grade`` per grade sheet;
    ``grade_slip`` (one tier off) and ``grade_demote`` (an antecedent read as tier 0) per
    reference, the same on every reading of it; ``grade_shift`` per antecedent and
    ``grade_overinclude`` per tier-0 reference, per reading. A refusal ends a target (the
    pipeline does not retry it) and a target makes about ten calls, so its default is the
    smallest; invalid JSON gets a repair retry.
    """

    leak_name: float = 0.05
    leak_acronym: float = 0.05
    leak_title: float = 0.05
    leak_mechanism: float = 0.05
    leak_numbers: float = 0.05
    bad_length: float = 0.03
    refusal: float = 0.005
    invalid_json: float = 0.02
    drop_grade: float = 0.03
    grade_shift: float = 0.08
    grade_overinclude: float = 0.04
    grade_slip: float = 0.06
    grade_demote: float = 0.03

    def __post_init__(self) -> None:
        for name, rate in dataclasses.asdict(self).items():
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {rate}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, float]) -> TruthRates:
        """Rates by name; refuses a name it does not know, listing the valid ones."""
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            raise ValueError(f"Unknown rates {unknown}; valid rates: {', '.join(cls.names())}")
        return cls(**{k: float(v) for k, v in values.items()})

    def scaled(self, factor: float) -> TruthRates:
        """Every rate times ``factor``, capped at 1: the raised-failure builds of a benchmark."""
        return TruthRates(**{k: min(1.0, v * factor) for k, v in dataclasses.asdict(self).items()})


@dataclasses.dataclass(frozen=True)
class Answer:
    """An emulated answer; ``fault`` ("refusal" or "invalid_json") spoils it when set."""

    kind: str
    value: dict[str, Any]
    fault: str | None = None
    target: Record | None = None  # for the log only: which world record the prompt was about
    plants: tuple[str, ...] = ()
    grades: tuple[emulated_grade.Read, ...] = ()
    prompt: str = ""  # a brief's prompt, logged: what the writer was shown


# --- prompts ----------------------------------------------------------------------------------


@functools.cache
def signatures() -> dict[str, str]:
    """Each prompt's first line after its version header: how a request is recognised."""
    found: dict[str, str] = {}
    for name in PROMPT_KINDS:
        path = PROMPTS_DIR / f"{name}.md"
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        if len(lines) > 1 and lines[1].strip():
            found[name] = lines[1].strip()
    return found


def prompt_kind(text: str) -> str | None:
    start = text.lstrip()
    return next((k for k, line in signatures().items() if start.startswith(line)), None)


def _block(text: str, pattern: str) -> str | None:
    match = re.search(pattern, text, re.DOTALL)
    return html.unescape(match.group(1)) if match else None


def dice(seed: int, prompt: str) -> random.Random:
    return random.Random(f"{seed}:{hashlib.sha256(prompt.encode()).hexdigest()}")


# --- answering --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Ask:
    """One recognised request, with what answering it may read."""

    memory: emulated_audit.Memory
    rates: TruthRates
    seed: int
    rng: random.Random
    prompt: str
    schema: Mapping[str, Any]
    scope: emulated_brief.Scope = "own"


def _fits(value: Mapping[str, Any], schema: Mapping[str, Any]) -> bool:
    """The answer's keys are the schema's properties: the request is the pipeline's own."""
    return set(value) == set(schema.get("properties", {}))


def answer(
    memory: emulated_audit.Memory,
    rates: TruthRates,
    seed: int,
    prompt: str,
    schema: Mapping[str, Any] | None,
    *,
    dice_text: str | None = None,
    scope: emulated_brief.Scope = "own",
) -> Answer | None:
    """The emulated answer to one request, or None when the prompt is not the pipeline's.

    ``prompt`` is the rendered template (the first user message); ``dice_text`` is the whole
    conversation, whose hash seeds every choice (default: the prompt). ``scope``: what a
    brief states (:data:`~inspire_build.sandbox.emulated_brief.Scope`).
    """
    kind = prompt_kind(prompt)
    if kind is None or schema is None:
        return None
    rng = dice(seed, dice_text if dice_text is not None else prompt)
    fault = "refusal" if rng.random() < rates.refusal else None
    fault = fault or ("invalid_json" if rng.random() < rates.invalid_json else None)
    found = _ANSWERERS[kind](_Ask(memory, rates, seed, rng, prompt, schema, scope))
    if found is None or not _fits(found.value, schema):
        return None
    return dataclasses.replace(found, fault=fault)


def _brief_answer(ask: _Ask) -> Answer | None:
    request = emulated_brief.parse(ask.prompt)
    if request is None:
        return None
    text, plants = emulated_brief.write(ask.rng, ask.rates, request, ask.scope)
    return Answer("brief", {"brief": text}, plants=tuple(plants))


def _identity_answer(ask: _Ask) -> Answer | None:
    brief = _block(ask.prompt, r"<data>\n(.*)\n</data>")
    if brief is None:
        return None
    known = ask.memory.recall(brief)
    title = known.title if known is not None else "(no paper I know of)"
    return Answer("audit_identity", {"title": title})


def _guess_answer(ask: _Ask) -> Answer | None:
    brief = _block(ask.prompt, r"<brief>\n(.*?)\n</brief>")
    if brief is None:
        return None
    return Answer("audit_mechanism_guess", {"mechanism": emulated_audit.mechanism_guess(brief)})


def _mechanism_answer(ask: _Ask) -> Answer | None:
    guess = _block(ask.prompt, r"<guess>\n(.*?)\n</guess>")
    abstract = _block(ask.prompt, r"<abstract>\n(.*?)\n</abstract>")
    if guess is None or abstract is None:
        return None
    level, shown = emulated_audit.mechanism_overlap(guess, abstract)
    rationale = (
        f"The guess shares {', '.join(shown)} with the method."
        if shown
        else "The guess shares nothing specific with the method."
    )
    return Answer("audit_mechanism", {"overlap": level, "rationale": rationale})


def _grade_answer(ask: _Ask) -> Answer | None:
    if '<reference index="' not in ask.prompt:
        return None
    tiers = _choices(ask.schema, "grades", "[]", "tier")[0] or [1, 2, 3]
    roles, null_role = _choices(ask.schema, "grades", "[]", "role")
    schema = emulated_grade.Schema([int(t) for t in tiers], roles, null_role)
    items = emulated_grade.read_sheet(ask.prompt, schema, ask.rates, ask.seed, ask.rng)
    return Answer("grade", emulated_grade.sheet(items), grades=tuple(items))


_ANSWERERS = {
    "brief": _brief_answer,
    "audit_identity": _identity_answer,
    "audit_mechanism_guess": _guess_answer,
    "audit_mechanism": _mechanism_answer,
    "grade": _grade_answer,
}


# --- the answer schema --------------------------------------------------------------------------


def _resolve(schema: Mapping[str, Any], node: Any) -> Any:
    defs = schema.get("$defs", schema.get("definitions", {}))
    while isinstance(node, dict) and "$ref" in node:
        node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
    return node


def _node(schema: Mapping[str, Any], *path: str) -> Any:
    """The schema node at ``path`` (object properties, then array items), ``$ref``s resolved."""
    node = _resolve(schema, schema)
    for step in path:
        if not isinstance(node, dict):
            return None
        child = node.get("items") if step == "[]" else node.get("properties", {}).get(step)
        node = _resolve(schema, child)
    return node


def _choices(schema: Mapping[str, Any], *path: str) -> tuple[list[Any] | None, bool]:
    """(the enum at ``path``, None when any value goes; whether null is allowed), ``anyOf``
    branches read one by one."""
    node = _node(schema, *path)
    branches = node.get("anyOf", [node]) if isinstance(node, dict) else []
    values: list[Any] | None = []
    nullable = False
    for branch in (_resolve(schema, b) for b in branches):
        if not isinstance(branch, dict):
            continue
        if branch.get("type") == "null":
            nullable = True
        elif isinstance(branch.get("enum"), list):
            nullable = nullable or None in branch["enum"]
            values = (
                None if values is None else values + [v for v in branch["enum"] if v is not None]
            )
        else:
            values = None  # a branch without an enum allows any value
    return (values or None), nullable


# --- the endpoint's memory --------------------------------------------------------------------


class Truth:
    """The emulated model (its training memory, rates and seed) and the log of the briefs and
    grades it delivered, for the bench."""

    def __init__(
        self,
        world: World,
        rates: TruthRates,
        seed: int = 0,
        knowledge_cutoff: dt.date = KNOWLEDGE_CUTOFF,
        scope: emulated_brief.Scope = "own",
    ) -> None:
        self.world, self.rates, self.seed = world, rates, seed
        self.knowledge_cutoff, self.scope = knowledge_cutoff, scope
        self._lock = threading.Lock()
        self._memory: emulated_audit.Memory | None = None  # built on the first chat
        self._abstracts: dict[str, Record] = {}
        self._briefs: dict[str, dict[str, Any]] = {}
        self._grades: dict[str, dict[str, Any]] = {}

    def answer(
        self, prompt: str, schema: Mapping[str, Any] | None, dice_text: str | None = None
    ) -> Answer | None:
        with self._lock:
            if self._memory is None:
                self._memory = emulated_audit.Memory(self.world.records, self.knowledge_cutoff)
                self._abstracts = {normalise_title(r.abstract): r for r in self.world.records}
            memory = self._memory
        found = answer(
            memory, self.rates, self.seed, prompt, schema, dice_text=dice_text, scope=self.scope
        )
        if found is None or found.kind not in ("brief", "grade"):
            return found
        abstract = _block(prompt, r"\nAbstract: (.*?)\n</(?:data|target)>") or ""
        target = self._abstracts.get(normalise_title(abstract))
        shown = prompt if found.kind == "brief" else ""
        return dataclasses.replace(found, target=target, prompt=shown)

    def record(self, answer: Answer, delivered: Mapping[str, Any], key: str) -> None:
        """Log what reached the client (``key`` names the request, so a replay logs once)."""
        if answer.target is None:
            return
        entry: dict[str, Any] = {"target": answer.target.key, "work": answer.target.work}
        if answer.kind == "brief":
            entry |= {
                "text": delivered.get("brief"),
                "plants": list(answer.plants),
                "prompt": answer.prompt,
            }
            with self._lock:
                self._briefs.setdefault(key, entry)
        elif answer.kind == "grade":
            entry |= _grade_log(answer.grades, delivered)
            with self._lock:
                self._grades.setdefault(key, entry)

    def briefs(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._briefs.values())

    def grades(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._grades.values())

    def clear(self) -> None:
        with self._lock:
            self._briefs.clear()
            self._grades.clear()


def _grade_log(
    items: Iterable[emulated_grade.Read], delivered: Mapping[str, Any]
) -> dict[str, Any]:
    """Per item, with indexes a fault removed after answering (``drop_item``) marked dropped;
    each slip's list names the titles (``#index`` where the evidence was withheld)."""
    given = {g.get("index") for g in delivered.get("grades", []) if isinstance(g, dict)}
    rows = [
        dataclasses.asdict(i)
        if i.index in given or i.tier is None
        else {**dataclasses.asdict(i), "tier": None, "role": None, "slip": "drop"}
        for i in items
    ]
    return {
        "items": rows,
        **{
            p: [r["title"] or f"#{r['index']}" for r in rows if r["slip"] == p]
            for p in GRADE_PLANTS
        },
    }
