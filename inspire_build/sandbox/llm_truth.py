"""Truthful answers to the pipeline's five prompts, read from the sandbox world's truth.

The emulated OpenAI endpoint asks :meth:`Truth.answer` first; it recognises a prompt by the
first line of its template in ``inspire_build/prompts/`` and answers from the world:

- ``brief``: a problem-only paraphrase of the target's ``problem`` (its lead sentence, the
  field's problem, and that sentence's terms in general field templates), framed as problem,
  context, constraints and goal, 120-250 words, free of the method name, acronym, mechanism
  words, result numbers, title 4-grams and the prompt's redaction terms;
- ``audit_identity``: the title of the record whose method name, acronym (a whole word) or
  title 4-grams (normalised, stop words removed) the brief carries, else the title of another,
  seeded, record;
- ``audit_mechanism_guess`` (the brief alone): a method built on what the brief reveals of any
  record's solution (method names, acronyms, numbers, mechanism words), else a generic wrong
  guess;
- ``audit_mechanism`` (the guess against the abstract): "full" when the guess names the
  target's method or acronym, states a result number or has two of its mechanism words;
  "partial" for one mechanism word; else "none";
- ``grade``: each reference of the part, by its index, with its true tier (0 included) and
  role, with noise. A reference is found by its normalised title among the target's cited
  works (a title the target does not cite gets a guess, ``unknown``); a schema whose tier enum
  lacks 0 forces a true tier 0 to tier 1 (``forced``); a schema whose role may be null gets
  null at tier 0. A grade prompt whose target is not in the world is still answered, each
  reference a guess: a schema-driven answer could not know the indexes.

Failures are planted at the seeded rates of :class:`TruthRates`. Every choice comes from
``(seed, sha256 of the whole prompt)``: a repeat gets the same answer, a redraft (its prompt
carries the failed checks) or a repair (its messages grow) rolls new dice. A prompt it does
not recognise, or whose paper is not in the world, gets ``None``: the caller falls back to
schema-driven answers.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import html
import random
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from inspire_build.lineage import normalise_title
from inspire_build.sandbox.world import Citation, Record, World
from inspire_build.templates import PROMPTS_DIR
from inspire_build.text import STOPWORDS

PROMPT_KINDS = ("brief", "audit_identity", "audit_mechanism_guess", "audit_mechanism", "grade")
BRIEF_PLANTS = (
    "leak_name",
    "leak_acronym",
    "leak_title",
    "leak_mechanism",
    "leak_numbers",
    "bad_length",
)
GRADE_PLANTS = ("shift", "overinclude", "forced", "drop", "unknown")
MIN_WORDS, MAX_WORDS = 120, 250
TITLE_NGRAM = 4
_TIER0_ROLE = "background"  # the role an over-included tier-0 reference is given
# General field words a brief may use beside the problem's own: what a solution may spend,
# what it must keep, and the conditions it meets.
_RESOURCES = ("data", "compute", "memory", "annotation", "supervision", "storage", "bandwidth")
_QUALITIES = ("reliability", "coverage", "interpretability", "throughput", "stability")
_CONDITIONS = ("drift", "noise", "heterogeneity", "scale", "sparsity")
# A paraphrase swaps these words (each 70% of the time), so the lead sentence is restated,
# not copied: a copied sentence is what the retrieval audit exists to catch.
_SYNONYMS = {
    "existing": "current",
    "current": "present",
    "approaches": "techniques",
    "methods": "techniques",
    "fail": "break down",
    "fails": "breaks down",
    "scarce": "limited",
    "study": "examine",
    "handle": "cope with",
    "jointly": "together",
    "reduce": "lower",
    "reduces": "lowers",
    "cost": "expense",
    "large": "big",
    "often": "frequently",
    "difficult": "hard",
    "problem": "difficulty",
    "remains": "stays",
    "important": "central",
    "however": "yet",
    "many": "numerous",
    "cannot": "can not",
    "must": "have to",
    "while": "whereas",
    "unreliable": "fragile",
    "pipelines": "systems",
    "unclear": "not known",
    "keep": "preserve",
    "losing": "sacrificing",
    "signals": "cues",
    "structure": "organisation",
    "meets": "coincides with",
}
_WHY = (
    "This matters because {a} underpins many downstream uses, and errors in it propagate.",
    "The stakes are practical: without progress on {b}, systems built around {a} stay brittle.",
    "Getting {a} right would remove a bottleneck that many groups face today.",
)
_CONTEXT = (
    "Work on {a} has mostly assumed little {n}, an assumption that rarely holds in practice.",
    "Current approaches treat {a} and {b} separately, which breaks down as {n} grows.",
    "Practitioners who depend on {a} report that available tools degrade under {n}.",
    "Much prior effort optimises {b} alone and ignores how {c} interacts with it.",
    "Standard pipelines for {a} were designed before {n} of this kind became common.",
    "Evaluations of {b} tend to use small, curated settings that hide how hard {c} is.",
    "The field lacks a shared view of how {a} should be judged when {n} varies.",
    "Known workarounds for {b} trade {q} for speed and satisfy neither need fully.",
)
_CONSTRAINTS = (
    "A solution must work with limited {r} and cannot assume labelled {a}.",
    "It has to respect tight {r} budgets, so costly tuning for each case is ruled out.",
    "It must stay reliable when the evidence about {b} is noisy or partly missing.",
    "It should not require changes to how {c} is collected.",
    "Any approach must scale to large collections of {a} without a loss of {q}.",
    "It must remain usable by teams without specialist knowledge of {b}.",
    "The approach should degrade gracefully rather than fail when {n} increases.",
)
_GOAL = (
    "The goal is a way to handle {a} and {b} together that holds up under realistic {n}.",
    "Success means dependable behaviour on {c} across settings, judged by {q} as well.",
    "A good solution would make {a} dependable enough for routine use.",
    "What is needed is an approach whose gains on {b} do not come at the cost of {q}.",
)
_SECTIONS = {"Problem": _WHY, "Context": _CONTEXT, "Constraints": _CONSTRAINTS, "Goal": _GOAL}
_PADDED = ("Context", "Constraints", "Goal")  # sections that take extra sentences


@dataclasses.dataclass(frozen=True)
class TruthRates:
    """Seeded rates of the failures the truthful endpoint plants.

    Brief leaks and ``bad_length`` are per brief, each rolled on its own; ``refusal`` and
    ``invalid_json`` per answer of any of the five prompts; ``drop_grade`` per grade sheet;
    ``grade_shift`` per graded antecedent of tier 1-3; ``grade_overinclude`` per true tier-0
    reference. A refusal ends a target (the pipeline does not retry it) and a target makes
    about ten calls, so its default is the smallest; invalid JSON gets a repair retry.
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
    grade_shift: float = 0.10
    grade_overinclude: float = 0.05

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
class GradeItem:
    """One reference of a grade answer: the truth, what was answered, and the plant."""

    index: int  # its index in the prompt's part
    title: str
    work: str | None  # the world's work the title names; None: no record has that title
    true_tier: int | None  # None: not a reference of the target in the world
    true_role: str | None
    tier: int | None  # None: dropped
    role: str | None  # None: dropped, or tier 0 under a schema whose role may be null
    plant: str | None  # one of GRADE_PLANTS


@dataclasses.dataclass(frozen=True)
class Answer:
    """A truthful answer; ``fault`` ("refusal" or "invalid_json") spoils it when set."""

    kind: str
    value: dict[str, Any]
    fault: str | None = None
    target: Record | None = None
    plants: tuple[str, ...] = ()
    grades: tuple[GradeItem, ...] = ()


# --- the world's index ------------------------------------------------------------------------


def _ngrams(words: Sequence[str], n: int) -> Iterator[str]:
    return (" ".join(words[i : i + n]) for i in range(len(words) - n + 1))


def content_words(text: str) -> list[str]:
    """The normalised words of ``text`` without stop words, as the lexical audit compares."""
    return [w for w in normalise_title(text).split() if w not in STOPWORDS]


def title_ngrams(title: str) -> list[str]:
    """The 4-grams of the title's words, normalised and without stop words (the whole title
    when it is shorter)."""
    words = content_words(title)
    return list(_ngrams(words, TITLE_NGRAM)) or ([" ".join(words)] if words else [])


def _paper_ids(record: Record) -> Iterator[str]:
    yield f"openalex:{record.openalex}"
    yield f"doi:{record.doi.lower()}"
    yield f"s2:{record.s2}"
    yield f"corpusid:{record.corpus_id}"
    if record.arxiv:
        yield f"arxiv:{record.arxiv}"


class Index:
    """Lookups from what a prompt shows (abstract, title, paper ID, brief text) to records."""

    def __init__(self, world: World) -> None:
        self.records = world.records
        self.by_key = world.by_key()
        self.by_abstract: dict[str, list[Record]] = defaultdict(list)
        self.by_title: dict[str, list[Record]] = defaultdict(list)
        self.by_work: dict[str, list[Record]] = defaultdict(list)
        self.by_id: dict[str, Record] = {}
        self.ngrams: dict[str, list[Record]] = defaultdict(list)
        self.names: dict[str, list[Record]] = defaultdict(list)
        self.acronyms: dict[str, list[Record]] = defaultdict(list)
        for record in self.records:
            self._add(record)
        self.name_lengths = sorted({len(n.split()) for n in self.names})
        self.mechanisms = {normalise_title(m) for r in self.records for m in r.mechanism}

    def _add(self, record: Record) -> None:
        self.by_abstract[normalise_title(record.abstract)].append(record)
        self.by_title[normalise_title(record.title)].append(record)
        self.by_work[record.work].append(record)
        self.by_id.update(dict.fromkeys(_paper_ids(record), record))
        for gram in dict.fromkeys(title_ngrams(record.title)):
            self.ngrams[gram].append(record)
        if record.method_name:
            self.names[normalise_title(record.method_name)].append(record)
        if record.acronym:
            self.acronyms[record.acronym].append(record)

    def target(self, abstract: str, title: str = "") -> Record | None:
        """The record a prompt's abstract (or, failing that, title) belongs to."""
        named = normalise_title(title)
        found = self.by_abstract.get(normalise_title(abstract)) or self.by_title.get(named, [])
        # Twins share an abstract; the title tells the preprint from the published record.
        return next((r for r in found if normalise_title(r.title) == named), None) or next(
            iter(found), None
        )

    def paper(self, paper_id: str) -> Record | None:
        scheme, _, value = paper_id.strip().partition(":")
        key = f"{scheme.lower()}:{value.lower() if scheme.lower() == 'doi' else value}"
        return self.by_id.get(key)

    def citations(self, target: Record) -> dict[str, Citation]:
        """Cited work -> the target work's citation of it (a twin's list fills the gaps)."""
        cited: dict[str, Citation] = {}
        for record in sorted(self.by_work[target.work], key=lambda r: r.key != target.key):
            for citation in record.references:
                cited.setdefault(self.by_key[citation.cites].work, citation)
        return cited


# --- what a brief reveals ---------------------------------------------------------------------


def _normalised(text: str) -> str:
    return f" {normalise_title(text)} "


def _has_phrase(text: str, phrase: str) -> bool:
    """Whole-word, case- and punctuation-blind, as the pipeline's lexical audit matches."""
    words = normalise_title(phrase)
    return bool(words) and f" {words} " in _normalised(text)


def _has_acronym(text: str, acronym: str) -> bool:
    return bool(acronym) and re.search(rf"\b{re.escape(acronym)}\b", text) is not None


def _has_number(text: str, number: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", text) is not None


def mechanism_words_in(text: str, record: Record) -> list[str]:
    words = set(normalise_title(text).split())
    return [m for m in record.mechanism if normalise_title(m) in words]


def mechanism_overlap(text: str, record: Record) -> tuple[str, list[str]]:
    """("none" | "partial" | "full", what gave it away) for a brief against the target."""
    shown = [record.method_name] if _has_phrase(text, record.method_name) else []
    shown += [record.acronym] if _has_acronym(text, record.acronym) else []
    shown += [n for n in record.result_numbers if _has_number(text, n)]
    words = mechanism_words_in(text, record)
    if shown or len(words) >= 2:
        return "full", shown + words
    return ("partial", words) if words else ("none", [])


def identify(index: Index, text: str) -> tuple[Record, str] | None:
    """The record whose name, acronym or title 4-grams the brief carries, and which it was."""
    normal = _normalised(text)
    words = normal.split()
    grams = [g for n in index.name_lengths for g in _ngrams(words, n)]
    named = [r for g in grams for r in index.names.get(g, ())]
    if named:
        return _likeliest(named, normal), "name"
    coined = [r for token in re.findall(r"\w+", text) for r in index.acronyms.get(token, ())]
    if coined:
        return _likeliest(coined, normal), "acronym"
    title_grams = set(_ngrams(content_words(text), TITLE_NGRAM))
    hits = Counter(r.key for g in title_grams for r in index.ngrams.get(g, ()))
    if not hits:
        return None
    top = max(hits.values())
    return _likeliest([index.by_key[k] for k, n in hits.items() if n == top], normal), "title"


def _likeliest(records: Sequence[Record], normal: str) -> Record:
    """Of the records a brief may name, the one whose problem terms it states most: names,
    acronyms and title 4-grams are shared, and that is how a reader breaks the tie."""

    def stated(record: Record) -> int:
        return sum(f" {normalise_title(t)} " in normal for t in record.problem_terms)

    return min(records, key=lambda r: (-stated(r), r.key))


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


def _redactions(text: str) -> list[str]:
    match = re.search(r"Never use any of these\s+terms: (.*)\.$", text, re.MULTILINE)
    terms = html.unescape(match.group(1)).split("; ") if match else []
    return [t for t in terms if t.strip()]


# --- briefs -----------------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def _paraphrase(rng: random.Random, sentence: str) -> str:
    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        other = _SYNONYMS.get(word.lower())
        if other is None or rng.random() < 0.3:
            return word
        return other.capitalize() if word[0].isupper() else other

    return re.sub(r"[A-Za-z]+", swap, sentence)


@dataclasses.dataclass(frozen=True)
class _Banned:
    """What a clean brief may not contain."""

    phrases: tuple[str, ...]  # content words, matched as whole-word phrases without stop words
    acronym: str

    def clean(self, text: str) -> bool:
        if re.search(r"\d", text) or _has_acronym(text, self.acronym):
            return False
        content = f" {' '.join(content_words(text))} "
        return not any(f" {p} " in content for p in self.phrases)


def _banned(record: Record, title: str, redactions: Sequence[str]) -> _Banned:
    phrases = [record.method_name, *record.method_name.split(), *record.mechanism]
    phrases += [*title_ngrams(title), *title_ngrams(record.title), *redactions]
    # The work's own settings and signals (after the field's lead terms), word by word: a brief
    # states the field's problem, and a filler such as "tight annotation budgets" must not
    # echo the work's "tight latency budgets" and single it out by accident.
    phrases += [w for term in record.problem_terms[5:] for w in term.split()]
    normal = dict.fromkeys(" ".join(content_words(p)) for p in phrases)
    return _Banned(tuple(p for p in normal if p), record.acronym)


def _filled(rng: random.Random, template: str, terms: Sequence[str]) -> str:
    a, b, c = rng.sample(list(terms), 3) if len(terms) >= 3 else rng.choices(terms, k=3)
    r, q, n = rng.choice(_RESOURCES), rng.choice(_QUALITIES), rng.choice(_CONDITIONS)
    return template.format(a=a, b=b, c=c, r=r, q=q, n=n)


def _extras(rng: random.Random, terms: Sequence[str], banned: _Banned) -> Iterator[tuple[str, str]]:
    """Distinct clean (section, sentence) pairs in seeded order, each template once while any is
    left (a repeated template reads as a form letter), until the pool runs dry."""
    seen: set[str] = set()
    unused = {name: list(_SECTIONS[name]) for name in _PADDED}
    for turn in range(400):
        # Each section once, in order, until it has a sentence; then sections at random.
        empty = [name for name in _PADDED if len(unused[name]) == len(_SECTIONS[name])]
        section = empty[0] if empty and turn < 40 else rng.choice(_PADDED)
        fresh = unused[section] or (
            [] if any(unused.values()) else list(_SECTIONS[section])  # all used: reuse
        )
        if not fresh:
            continue
        template = rng.choice(fresh)
        sentence = _filled(rng, template, terms)
        if sentence not in seen and banned.clean(sentence):
            seen.add(sentence)
            if template in unused[section]:
                unused[section].remove(template)
            yield section, sentence


def _field_terms(record: Record, banned: _Banned) -> list[str]:
    """The problem terms of its lead sentence: the field's problem, which the topic's works
    share. The rest of the problem (its settings, one more word) singles the work out, so a
    brief that used it would rank its target first in bm25: measured on a 2,000-paper world,
    one such term put 40% of briefs' targets in the top 10, none put 8% there."""
    lead = _normalised(_sentences(record.problem)[0]) if record.problem else " "
    usable = [t for t in dict.fromkeys(record.problem_terms) if banned.clean(t)]
    field = [t for t in usable if f" {normalise_title(t)} " in lead]
    return field or [*_RESOURCES[:2], _CONDITIONS[0]]


def _words(sections: Mapping[str, Sequence[str]]) -> int:
    labels = sum(1 for sentences in sections.values() if sentences)  # "Problem:" and so on
    return labels + sum(len(s.split()) for sentences in sections.values() for s in sentences)


def _render(sections: Mapping[str, Sequence[str]]) -> str:
    return "\n\n".join(f"{name}: {' '.join(s)}" for name, s in sections.items() if s)


def _shorten(rng: random.Random, sections: dict[str, list[str]], goal: int) -> None:
    """Drop padded sentences, then problem ones, until at most ``goal`` words remain."""
    while _words(sections) > goal:
        fillers = [name for name in _PADDED if sections[name]]
        name = rng.choice(fillers) if fillers else "Problem"
        if len(sections[name]) <= (0 if fillers else 1):
            return
        sections[name].pop()


def _compose(
    rng: random.Random, record: Record, banned: _Banned, goal: int, extra: int
) -> dict[str, list[str]]:
    """Clean sections of about ``goal`` words, leaving room for ``extra`` planted words."""
    field = _field_terms(record, banned)
    lead = _sentences(record.problem)[:1]
    sections: dict[str, list[str]] = {name: [] for name in _SECTIONS}
    sections["Problem"] = [s for s in (_paraphrase(rng, s) for s in lead) if banned.clean(s)]
    why = _filled(rng, rng.choice(_WHY), field)
    sections["Problem"] += [why] if banned.clean(why) else []
    for name, sentence in _extras(rng, field, banned):
        if _words(sections) + extra >= goal and all(sections[n] for n in _PADDED):
            break
        sections[name].append(sentence)
    if _words(sections) + extra > goal + 30:  # a short goal: the base alone is too long
        _shorten(rng, sections, goal - extra)
    return sections


def _plants(rng: random.Random, rates: TruthRates, record: Record) -> list[str]:
    possible = {
        "leak_name": bool(record.method_name),
        "leak_acronym": bool(record.acronym),
        "leak_title": bool(title_ngrams(record.title)),
        "leak_mechanism": len(record.mechanism) >= 2,
        "leak_numbers": bool(record.result_numbers),
        "bad_length": True,
    }
    rolls = {kind: rng.random() < getattr(rates, kind) for kind in BRIEF_PLANTS}
    return [kind for kind in BRIEF_PLANTS if rolls[kind] and possible[kind]]


def _leak(rng: random.Random, kind: str, record: Record) -> str:
    if kind == "leak_name":
        return f"A system in the spirit of {record.method_name} would be a natural start."
    if kind == "leak_acronym":
        return f"Recent attempts such as {record.acronym} hint at what is possible."
    if kind == "leak_title":
        return f"The setting is close to {rng.choice(title_ngrams(record.title))}."
    if kind == "leak_mechanism":
        *first, last = record.mechanism
        return f"A solution will likely rely on {', '.join(first)} and {last}."
    numbers = " and ".join(record.result_numbers)
    return f"Improvements of {numbers} over present practice would be expected."


def _length_goal(rng: random.Random, bad: bool) -> int:
    if not bad:
        return rng.randint(150, 210)
    return rng.randint(50, 100) if rng.random() < 0.5 else rng.randint(270, 340)


def write_brief(
    rng: random.Random,
    rates: TruthRates,
    record: Record,
    title: str,
    redactions: Sequence[str],
) -> tuple[str, list[str]]:
    """(brief, planted kinds) for ``record``; clean unless a plant says otherwise."""
    plants = _plants(rng, rates, record)
    leaks = [_leak(rng, kind, record) for kind in plants if kind != "bad_length"]
    goal = _length_goal(rng, "bad_length" in plants)
    banned = _banned(record, title, redactions)
    for _ in range(5):  # a title 4-gram may span two clean sentences; then draw again
        sections = _compose(rng, record, banned, goal, sum(len(s.split()) for s in leaks))
        if banned.clean(_render(sections)):
            break
    for leak in leaks:
        place = rng.choice(_PADDED)
        sections[place].insert(rng.randint(0, len(sections[place])), leak)
    text = _render(sections)
    if "bad_length" in plants and MIN_WORDS <= len(text.split()) <= MAX_WORDS:
        text = " ".join(text.split()[: MIN_WORDS - 1])  # still long enough: cut it short
    return text, plants


# --- grades -----------------------------------------------------------------------------------


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


def _allowed(role: str, roles: list[Any] | None) -> str:
    """``role`` if the schema allows it (no enum allows any), else background or its first."""
    if roles is None or role in roles:
        return role
    return _TIER0_ROLE if _TIER0_ROLE in roles else str(roles[0])


@dataclasses.dataclass(frozen=True)
class _Options:
    tiers: list[Any]
    roles: list[Any] | None  # None: any role
    null_role: bool  # the schema lets tier 0 have no role


def _grade_item(
    rng: random.Random,
    rates: TruthRates,
    shown: tuple[int, str, str | None],
    truth: Citation | None,
    options: _Options,
) -> GradeItem:
    index, title, work = shown
    tiers = options.tiers
    if truth is None:  # a paper the target does not cite in the world: a guess
        tier = rng.choice([t for t in tiers if t])
        role = _allowed(_TIER0_ROLE, options.roles)
        return GradeItem(index, title, work, None, None, tier, role, "unknown")
    tier, role, plant = truth.tier, truth.role, None
    if tier == 0 and rng.random() < rates.grade_overinclude:
        tier = rng.choice([t for t in (1, 2) if t in tiers] or [max(tiers)])
        role, plant = _TIER0_ROLE, "overinclude"
    elif tier == 0 and 0 not in tiers:
        tier, role, plant = 1, _TIER0_ROLE, "forced"
    elif tier > 0 and rng.random() < rates.grade_shift:
        steps = [t for t in (tier - 1, tier + 1) if t in tiers and t > 0]
        tier, plant = (rng.choice(steps), "shift") if steps else (tier, None)
    given = None if tier == 0 and options.null_role else _allowed(role, options.roles)
    return GradeItem(index, title, work, truth.tier, truth.role, tier, given, plant)


def _rationale(item: GradeItem) -> str:
    if item.tier == 0:
        cited = str(item.true_role or "a passing mention").replace("-", " ")
        return f"Cited as {cited}; not an antecedent by its contexts."
    return f"Cited as {str(item.role).replace('-', ' ')} work; tier {item.tier} by its contexts."


def grade(
    rng: random.Random,
    rates: TruthRates,
    citations: Mapping[str, Citation],
    shown: Sequence[tuple[int, str, str | None]],
    schema: Mapping[str, Any],
) -> tuple[dict[str, Any], tuple[GradeItem, ...]]:
    """The sheet for ``shown`` ((index, title, its work or None)) and what each item planted."""
    tiers = _choices(schema, "grades", "[]", "tier")[0] or [1, 2, 3]
    roles, null_role = _choices(schema, "grades", "[]", "role")
    options = _Options(tiers, roles, null_role)
    items = [_grade_item(rng, rates, item, citations.get(item[2] or ""), options) for item in shown]
    if items and rng.random() < rates.drop_grade:
        gone = rng.randrange(len(items))
        items[gone] = dataclasses.replace(items[gone], tier=None, role=None, plant="drop")
    sheet = [
        {"index": i.index, "tier": i.tier, "role": i.role, "rationale": _rationale(i)}
        for i in items
        if i.tier is not None
    ]
    return {"grades": sheet}, tuple(items)


# --- answering --------------------------------------------------------------------------------


def dice(seed: int, prompt: str) -> random.Random:
    return random.Random(f"{seed}:{hashlib.sha256(prompt.encode()).hexdigest()}")


@dataclasses.dataclass(frozen=True)
class _Ask:
    """One recognised request, with what answering it may read."""

    index: Index
    rates: TruthRates
    rng: random.Random
    prompt: str
    schema: Mapping[str, Any]
    written: Mapping[str, str]  # normalised brief text -> the work it was written for


def _fits(value: Mapping[str, Any], schema: Mapping[str, Any]) -> bool:
    """The answer's keys are the schema's properties: the request is the pipeline's own."""
    return set(value) == set(schema.get("properties", {}))


def answer(
    index: Index,
    rates: TruthRates,
    seed: int,
    prompt: str,
    schema: Mapping[str, Any] | None,
    *,
    dice_text: str | None = None,
    written: Mapping[str, str] | None = None,
) -> Answer | None:
    """The truthful answer to one request, or None when the prompt is not the pipeline's.

    ``prompt`` is the rendered template (the first user message); ``dice_text`` is the whole
    conversation, whose hash seeds every choice (default: the prompt). ``written`` maps briefs
    this endpoint wrote to their works, so that a wrong identity guess is never the target.
    """
    kind = prompt_kind(prompt)
    if kind is None or schema is None:
        return None
    rng = dice(seed, dice_text if dice_text is not None else prompt)
    fault = "refusal" if rng.random() < rates.refusal else None
    fault = fault or ("invalid_json" if rng.random() < rates.invalid_json else None)
    found = _ANSWERERS[kind](_Ask(index, rates, rng, prompt, schema, written or {}))
    if found is None or not _fits(found.value, schema):
        return None
    return dataclasses.replace(found, fault=fault)


def _brief_answer(ask: _Ask) -> Answer | None:
    title = _block(ask.prompt, r"<data>\s*Title: (.*?)\nAbstract: ") or ""
    abstract = _block(ask.prompt, r"\nAbstract: (.*?)\n</data>") or ""
    target = ask.index.target(abstract, title)
    if target is None:
        return None
    text, plants = write_brief(ask.rng, ask.rates, target, title, _redactions(ask.prompt))
    return Answer("brief", {"brief": text}, target=target, plants=tuple(plants))


def _identity_answer(ask: _Ask) -> Answer | None:
    brief = _block(ask.prompt, r"<data>\n(.*)\n</data>")
    if brief is None:
        return None
    found = identify(ask.index, brief)
    if found is not None:
        return Answer("audit_identity", {"title": found[0].title}, target=found[0])
    work = ask.written.get(normalise_title(brief))
    others = [r for r in ask.index.records if r.work != work]
    return Answer("audit_identity", {"title": ask.rng.choice(others).title})


def revealed(index: Index, text: str) -> list[str]:
    """What a brief reveals of any record's solution, read blind (no target known): method
    names, acronyms (whole words), numbers and mechanism words."""
    normal = _normalised(text)
    words = normal.split()
    grams = [g for n in index.name_lengths for g in _ngrams(words, n)]
    found = [r.method_name for g in grams for r in index.names.get(g, ())[:1]]
    found += [t for t in re.findall(r"\w+", text) if t in index.acronyms]
    found += re.findall(r"(?<![\d.])\d+(?:\.\d+)?%?", text)
    found += [w for w in words if w in index.mechanisms]
    return list(dict.fromkeys(found))


def _guess_answer(ask: _Ask) -> Answer | None:
    brief = _block(ask.prompt, r"<brief>\n(.*?)\n</brief>")
    if brief is None:
        return None
    shown = revealed(ask.index, brief)
    guess = (
        f"A method built on {', '.join(shown)}."
        if shown
        else f"A {ask.rng.choice(_CONDITIONS)}-aware approach to the stated problem."
    )
    return Answer("audit_mechanism_guess", {"mechanism": guess})


def _mechanism_answer(ask: _Ask) -> Answer | None:
    guess = _block(ask.prompt, r"<guess>\n(.*?)\n</guess>")
    target = ask.index.target(_block(ask.prompt, r"<abstract>\n(.*?)\n</abstract>") or "")
    if guess is None or target is None:
        return None
    level, shown = mechanism_overlap(guess, target)
    rationale = (
        f"The guess shares {', '.join(shown)} with the method."
        if shown
        else "The guess shares nothing specific with the method."
    )
    return Answer("audit_mechanism", {"overlap": level, "rationale": rationale}, target=target)


def _cited_titles(index: Index, citations: Iterable[str]) -> dict[str, str]:
    """Normalised title (either source's) of every record of a cited work -> that work."""
    found: dict[str, str] = {}
    for work in citations:
        for record in index.by_work[work]:
            for title in (record.title, record.s2_title):
                if title:
                    found.setdefault(normalise_title(title), work)
    return found


def _grade_answer(ask: _Ask) -> Answer | None:
    title = _block(ask.prompt, r"<target>\s*Title: (.*?)\nAbstract: ") or ""
    abstract = _block(ask.prompt, r"<target>.*?\nAbstract: (.*?)\n</target>") or ""
    shown = [
        (int(i), html.unescape(t))
        for i, t in re.findall(r'<reference index="(\d+)">\s*Title: (.*?)\n', ask.prompt)
    ]
    if not shown:
        return None
    target = ask.index.target(abstract, title)
    citations = ask.index.citations(target) if target is not None else {}
    cited = _cited_titles(ask.index, citations)
    works = []
    for i, ref_title in dict.fromkeys(shown):
        normal = normalise_title(ref_title)
        known = cited.get(normal) or next(
            (r.work for r in ask.index.by_title.get(normal, [])), None
        )
        works.append((i, ref_title, known))
    value, items = grade(ask.rng, ask.rates, citations, works, ask.schema)
    return Answer("grade", value, target=target, grades=items)


_ANSWERERS = {
    "brief": _brief_answer,
    "audit_identity": _identity_answer,
    "audit_mechanism_guess": _guess_answer,
    "audit_mechanism": _mechanism_answer,
    "grade": _grade_answer,
}


# --- the endpoint's memory --------------------------------------------------------------------


class Truth:
    """The world's index, the rates, and the log of the briefs and grades it delivered."""

    def __init__(self, world: World, rates: TruthRates, seed: int = 0) -> None:
        self.world, self.rates, self.seed = world, rates, seed
        self._lock = threading.Lock()
        self._index: Index | None = None  # built on the first chat: most apps never chat
        self._briefs: dict[str, dict[str, Any]] = {}
        self._grades: dict[str, dict[str, Any]] = {}
        self._written: dict[str, str] = {}

    def answer(
        self, prompt: str, schema: Mapping[str, Any] | None, dice_text: str | None = None
    ) -> Answer | None:
        with self._lock:
            written = dict(self._written)
            self._index = self._index or Index(self.world)
        return answer(
            self._index, self.rates, self.seed, prompt, schema, dice_text=dice_text, written=written
        )

    def record(self, answer: Answer, delivered: Mapping[str, Any], key: str) -> None:
        """Log what reached the client (``key`` names the request, so a replay logs once)."""
        if answer.target is None:
            return
        entry: dict[str, Any] = {"target": answer.target.key, "work": answer.target.work}
        if answer.kind == "brief":
            entry |= {"text": delivered.get("brief"), "plants": list(answer.plants)}
            with self._lock:
                self._briefs.setdefault(key, entry)
                self._written[normalise_title(str(entry["text"]))] = answer.target.work
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
            self._written.clear()


def _grade_log(items: Iterable[GradeItem], delivered: Mapping[str, Any]) -> dict[str, Any]:
    """Per item, with indexes a fault removed after answering (``drop_item``) marked dropped;
    each plant's list names the works (``#index`` for a title no record has)."""
    given = {g.get("index") for g in delivered.get("grades", []) if isinstance(g, dict)}
    rows = [
        dataclasses.asdict(i)
        if i.index in given or i.tier is None
        else {**dataclasses.asdict(i), "tier": None, "role": None, "plant": "drop"}
        for i in items
    ]
    by_plant = {
        p: [r["work"] or f"#{r['index']}" for r in rows if r["plant"] == p] for p in GRADE_PLANTS
    }
    return {
        "items": rows,
        "shifted": by_plant["shift"],
        "overincluded": by_plant["overinclude"],
        "forced": by_plant["forced"],
        "dropped": by_plant["drop"],
    }
