"""The emulated brief writer: a brief written from the brief prompt's own text, nothing else.

It reads the prompt as a model would: the title and abstract in the data block, what the
instructions forbid, the redaction terms if the prompt lists any, and a redraft's feedback.

- The abstract's problem sentences (those without solution or result cues) are the brief's
  substance, restated (a word swap per :data:`SYNONYMS`): the target's own setting, at the
  level of the problem. Its constraints are the conditions those sentences state ("when ...",
  "without ..."), never invented; its goal restates the lead sentence's subject.
- What the instructions forbid is avoided: the method sentences' own words, the names they
  define, numbers, title 4-grams and listed terms. A redraft says a term that the retrieval or
  search check named (one that found the target) generally ("related"), and keeps the rest of
  its sentence; a specific sentence holding a term another check named is dropped (the lead
  says it generally); feedback of a retrieval or search leak that names no term drops every
  specific sentence: the brief falls back to its field's problem. A check finding the target
  again in a later draft gets every term named so far said generally, the setting kept: the
  prompt asks for the paper's own setting, which a field's problem is not; a target whose
  every draft is found is excluded, as the pipeline records it (until session 29 the writer
  fell back to its field's problem there, and its briefs restated each other).
  A prompt that forbids nothing of the solution gets the abstract back, less only the terms it
  lists or its feedback names, as a model told to copy it would: so a sabotaged brief prompt
  shows in the figures.
- Seeded slips (``leak_*``, ``bad_length`` in
  :class:`~inspire_build.sandbox.llm_truth.TruthRates`) insert what the abstract says of the
  solution: its name, acronym, mechanism words, numbers, or a title 4-gram.
"""

from __future__ import annotations

import dataclasses
import html
import random
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Literal

from inspire_build.text import content_words, sentences, split_abstract

if TYPE_CHECKING:  # the rates live with the model that plants them
    from inspire_build.sandbox.llm_truth import TruthRates

MIN_WORDS, MAX_WORDS = 120, 250
TITLE_NGRAM = 4
# What a brief states: the target's own problem (its setting, the default), or only its field's
# lead problem, the level that a sparse world's searches cannot single out.
Scope = Literal["own", "field"]
PLANTS = ("leak_name", "leak_acronym", "leak_title", "leak_mechanism", "leak_numbers")
SYNONYMS = {
    "existing": "current",
    "current": "present",
    "approaches": "techniques",
    "methods": "techniques",
    "fail": "break down",
    "remains": "stays",
    "unreliable": "fragile",
    "pipelines": "systems",
    "unclear": "not known",
    "keep": "preserve",
    "losing": "sacrificing",
    "signals": "cues",
    "structure": "organisation",
    "meets": "coincides with",
    "interact": "act together",
    "difficult": "hard",
    "often": "frequently",
}
# What a model says of a setting when told to say it more generally: its kind. None of these
# words is in any paper of a world (a test holds it), so a general word finds no paper, and two
# targets whose settings differ in kind still state different problems.
GENERAL = {
    "noisy labels": "imperfect supervision",
    "scarce annotations": "imperfect supervision",
    "limited memory": "constrained resources",
    "tight latency budgets": "constrained resources",
    "heterogeneous devices": "varied hardware",
    "distribution shift": "nonstationary arrivals",
    "streaming inputs": "nonstationary arrivals",
    "long sequences": "lengthy records",
    "privacy rules": "external restrictions",
    "missing modalities": "partial observations",
    "adversarial inputs": "hostile manipulation",
    "class imbalance": "skewed frequencies",
}
_ANTONYMS = {"unreliable": "reliable", "fragile": "robust", "slow": "fast", "costly": "cheap"}
# Framing that restates nothing and invents no constraint: it only says where the problem stands.
FRAMING = (
    "The question is open: no established technique settles it under these conditions.",
    "The difficulty lies in how these conditions combine rather than in any one of them alone.",
    "Earlier efforts address parts of it in isolation, not the combination described here.",
    "An answer should be judged under the conditions stated here, not in easier settings.",
    "Evidence for a solution should come from data that exhibits these conditions.",
    "A solution should make clear which of its parts matter for the stated conditions.",
    "Progress would matter to anyone who depends on this capability in practice.",
    "The pieces of an answer exist in the literature but have not been brought together.",
)
_NAMED = re.compile(
    r"\b(?:propose[sd]?|present(?:s|ed)?|introduce[sd]?|call(?:ed)?)\s+"
    r"(?P<name>[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)(?:\s*\((?P<acronym>[A-Z][\w-]+)\))?"
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?%?")
# The verbs that introduce a method, not part of how it works.
_DEFINING = frozenset({"propose", "proposes", "present", "presents", "introduce", "combines"})


@dataclasses.dataclass(frozen=True)
class Request:
    """What the brief prompt shows."""

    title: str
    abstract: str
    forbids: frozenset[str]  # of "method", "name", "results", "title"
    terms: tuple[str, ...]
    feedback: tuple[str, ...]


def parse(prompt: str) -> Request | None:
    data = re.search(r"<data>\s*Title: (.*?)\nAbstract: (.*?)\n</data>", prompt, re.DOTALL)
    if data is None:
        return None
    head = prompt[: data.start()]
    rule = " ".join(s for s in sentences(head) if re.search(r"\bmust not\b|\bnever\b", s, re.I))
    forbids = {w for w in ("method", "name", "title") if w in rule.lower()}
    forbids |= {"results"} if re.search(r"results|numbers", rule, re.I) else set()
    listed = re.search(r"Never use any of these\s+terms: (.*)\.$", head, re.MULTILINE)
    terms = html.unescape(listed.group(1)).split("; ") if listed else []
    feedback = re.findall(r"^- (.*)$", head.partition("leakage checks")[2], re.MULTILINE)
    return Request(
        html.unescape(data.group(1)),
        html.unescape(data.group(2)),
        frozenset(forbids),
        tuple(t for t in terms if t.strip()),
        tuple(html.unescape(f) for f in feedback),
    )


def _ngrams(words: Sequence[str], n: int) -> list[str]:
    return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]


@dataclasses.dataclass(frozen=True)
class Solution:
    """What the abstract says of its solution, as a reader finds it."""

    names: tuple[str, ...]
    acronyms: tuple[str, ...]
    words: tuple[str, ...]  # content words of the solution sentences the problem does not use
    numbers: tuple[str, ...]


def solution(abstract: str) -> Solution:
    problem, method = split_abstract(abstract)
    said = " ".join(method)
    named = list(_NAMED.finditer(said))
    names = [m.group(i) or "" for m in named for i in ("name", "acronym")]
    plain = set(content_words(" ".join(problem + names))) | _DEFINING
    own = [w for w in dict.fromkeys(content_words(said)) if w not in plain]
    return Solution(
        tuple(m.group("name") for m in named),
        tuple(m.group("acronym") for m in named if m.group("acronym")),
        tuple(own),
        tuple(dict.fromkeys(_NUMBER.findall(said))),
    )


_QUOTED = re.compile(r"(?<!\w)'([^']+)'(?!\w)")


def feedback_terms(feedback: Sequence[str]) -> list[str]:
    """Terms a redraft's feedback names: quoted, or listed after "terms:". A quote opens and
    closes only beside a non-word character: the apostrophe of "cutoff's window" opens none."""
    found = [t for line in feedback for t in _QUOTED.findall(line)]
    for line in feedback:
        listed = re.search(r"terms?: ([^;]*)", line)
        found += [t.strip() for t in listed.group(1).split(",")] if listed else []
    return [t for t in found if t]


@dataclasses.dataclass(frozen=True)
class Banned:
    """What a clean brief may not contain: phrases of content words, and digits."""

    phrases: tuple[str, ...]
    digits: bool

    def clean(self, text: str) -> bool:
        if self.digits and re.search(r"\d", text):
            return False
        words = f" {' '.join(content_words(text))} "
        return not any(f" {p} " in words for p in self.phrases)


def banned(request: Request, found: Solution) -> Banned:
    phrases: list[str] = list(request.terms)
    if "method" in request.forbids:
        phrases += found.words
    if "name" in request.forbids or "method" in request.forbids:
        phrases += [*found.names, *found.acronyms]
    if "title" in request.forbids:
        phrases += _ngrams(content_words(request.title), TITLE_NGRAM)
    normal = dict.fromkeys(" ".join(content_words(p)) for p in phrases)
    return Banned(tuple(p for p in normal if p), "results" in request.forbids)


def without(sentence: str, terms: Sequence[str]) -> str:
    """The sentence with each term a redraft was told to leave out said generally instead: a
    setting holding one by its kind (:data:`GENERAL`), any other term as "related"."""
    named = {t.lower() for t in terms}
    for setting, kind in GENERAL.items():
        if named & set(setting.split()):
            sentence = re.sub(rf"\b{re.escape(setting)}\b", kind, sentence, flags=re.IGNORECASE)
    for term in terms:
        sentence = re.sub(rf"\b{re.escape(term)}\b", "related", sentence, flags=re.IGNORECASE)
    return re.sub(r"\b(related)(?:,? (?:and )?related)+\b", r"\1", sentence)


def restate(rng: random.Random, sentence: str) -> str:
    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        other = SYNONYMS.get(word.lower())
        if other is None or rng.random() < 0.3:
            return word
        return other.capitalize() if word[0].isupper() else other

    return re.sub(r"[A-Za-z]+", swap, sentence)


def conditions(problem: Sequence[str]) -> Iterator[str]:
    """Constraint sentences from the conditions the problem sentences state."""
    for sentence in problem:
        for clause in re.split(r",\s*(?:and\s+)?|;\s*", sentence.rstrip(".")):
            when = re.search(r"\bwhen (.+)$", clause)
            without = re.search(r"\bwithout (.+)$", clause)
            keep = re.search(r"\bhow to (.+?)(?: without .*)?$", clause)
            if when:
                yield f"A solution has to hold up when {when.group(1)}."
            if keep:
                yield f"It has to {keep.group(1)}."
            if without:
                yield f"It must do so without {without.group(1)}."


def goal(lead: str) -> str:
    """The goal, from the lead sentence's subject and what it lacks."""
    match = re.match(r"(?P<subject>.+?) (?:remains|is|stays) (?P<state>\w+)", lead)
    if match is None:
        return "The goal is an approach that resolves the problem as stated above."
    state = _ANTONYMS.get(match.group("state").lower(), "dependable")
    subject = match.group("subject")
    return f"The goal is {subject[0].lower()}{subject[1:]} that is {state} under these conditions."


_FOUND = re.compile(r"(retrieval|search)\b")  # feedback of a check that found the target


def _found_by(request: Request) -> list[tuple[str, str]]:
    """(check, line) of each feedback line of a check that found the target."""
    return [(match.group(1), f) for f in request.feedback if (match := _FOUND.match(f))]


def sections(
    rng: random.Random, request: Request, ban: Banned, length: int, scope: Scope = "own"
) -> dict[str, list[str]]:
    """Problem, Context, Constraints and Goal of about ``length`` words, every sentence clean;
    with ``scope`` "field", from the lead problem sentence alone (the field's problem)."""
    problem, _ = split_abstract(request.abstract)
    problem = problem or sentences(request.abstract)[:1]
    lead, specific = problem[:1], problem[1:]
    named = feedback_terms(request.feedback)
    found_by = _found_by(request)
    found = feedback_terms([line for _, line in found_by])
    if scope == "field" or (found_by and not found):  # found, and nothing says by which terms
        specific = []
    else:  # a specific sentence holding a term a check forbade goes; one holding a term that
        # found the target says it more generally, as the lead does
        forbidden = [t for t in named if t not in found]
        specific = [without(s, found) for s in specific if without(s, forbidden) == s]
    lead = [without(s, named) for s in lead]
    parts: dict[str, list[str]] = {
        "Problem": [restate(rng, s) for s in lead + specific],
        "Context": [],
        "Constraints": list(dict.fromkeys(conditions(lead + specific))),
        "Goal": [goal(lead[0])] if lead else [],
    }
    parts = {name: [s for s in lines if ban.clean(s)] for name, lines in parts.items()}
    framing = [s for s in rng.sample(FRAMING, len(FRAMING)) if ban.clean(s)]
    while framing and words(parts) < length:
        parts[rng.choice(("Context", "Context", "Goal"))].append(framing.pop())
    return parts


def words(parts: dict[str, list[str]]) -> int:
    return sum(len(s.split()) + 1 for found in parts.values() for s in found)


def render(parts: dict[str, list[str]]) -> str:
    return "\n\n".join(f"{name}: {' '.join(s)}" for name, s in parts.items() if s)


def slips(rng: random.Random, rates: TruthRates, request: Request, found: Solution) -> list[str]:
    """The leaks this answer plants (each rolled at its rate, where the abstract allows it)."""
    possible = {
        "leak_name": bool(found.names),
        "leak_acronym": bool(found.acronyms),
        "leak_title": bool(_ngrams(content_words(request.title), TITLE_NGRAM)),
        "leak_mechanism": len(found.words) >= 2,
        "leak_numbers": bool(found.numbers),
    }
    rolled = [kind for kind in PLANTS if rng.random() < float(getattr(rates, kind))]
    return [kind for kind in rolled if possible[kind]]


def leak(rng: random.Random, kind: str, request: Request, found: Solution) -> str:
    if kind == "leak_name":
        return f"A system in the spirit of {found.names[0]} would be a natural start."
    if kind == "leak_acronym":
        return f"Recent attempts such as {found.acronyms[0]} hint at what is possible."
    if kind == "leak_title":
        gram = rng.choice(_ngrams(content_words(request.title), TITLE_NGRAM))
        return f"The setting is close to {gram}."
    if kind == "leak_mechanism":
        return f"A solution will likely rely on {found.words[0]} and {found.words[1]}."
    return f"Improvements of {' and '.join(found.numbers)} over present practice are expected."


def write(
    rng: random.Random, rates: TruthRates, request: Request, scope: Scope = "own"
) -> tuple[str, list[str]]:
    """(brief, planted kinds). A prompt that forbids nothing of the solution gets the abstract,
    less only the terms it lists or its feedback names (said generally)."""
    if not request.forbids:  # told to avoid nothing of the solution: it copies the abstract
        return without(request.abstract, [*request.terms, *feedback_terms(request.feedback)]), []
    found = solution(request.abstract)
    planted = slips(rng, rates, request, found)
    bad = rng.random() < rates.bad_length
    length = rng.randint(150, 210) if not bad else rng.choice((60, 300))
    parts = sections(rng, request, banned(request, found), length, scope)
    for kind in planted:
        parts[rng.choice(("Context", "Constraints"))].append(leak(rng, kind, request, found))
    text = render(parts)
    if bad:
        planted.append("bad_length")
        if MIN_WORDS <= len(text.split()) <= MAX_WORDS:
            text = " ".join(text.split()[: MIN_WORDS - 1])
    return text, planted
