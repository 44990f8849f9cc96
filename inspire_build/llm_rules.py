"""The ``rules`` LLM backend: offline, deterministic answers to the same prompts (``RULES``).

It does real work, with every threshold stated where it is used:

- ``brief`` (here): the topic words of the abstract's lead problem sentence (sentences without
  solution or result cues) that the title does not use, in a frame of problem, context,
  constraints and goal whose wording varies by target, with every redaction term removed (see
  :func:`brief`). It reads only the title and abstract.
- ``audit_identity``, ``audit_mechanism_guess``, ``audit_mechanism`` and ``grade``: the leakage
  audit's guesses from the brief alone, and the grades from citation signals
  (``llm_rules_judging.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import pydantic

from inspire_build.errors import LLMError
from inspire_build.llm_rules_judging import (
    audit_identity,
    audit_mechanism,
    audit_mechanism_guess,
    grade,
)
from inspire_build.models import BriefDraft
from inspire_build.text import (
    STOPWORDS,
    content_words,
    sentences,
    split_abstract,
    topic_words,
)

# A rules function answers one prompt from its context, offline.
RulesFunction = Callable[[Mapping[str, Any]], pydantic.BaseModel]
Output = TypeVar("Output", bound=pydantic.BaseModel)

BRIEF_MIN_WORDS = 120
RETRIEVAL_FALLBACK_WORDS = 3  # after a retrieval leak, a brief names only the first few
INJECTION = re.compile(
    r"\b(ignore|disregard|forget)\b.{0,40}\b(instructions?|prompts?|rules)\b|"
    r"\b(output|print|reveal|repeat)\b.{0,20}\b(the|your)\b.{0,20}\b(title|prompt|instructions?)\b",
    re.IGNORECASE,
)
_TERM_WORD = re.compile(r"[^\W_]+")
_WORD_RUN = re.compile(r"\w+")  # a whole word, as \b...\b bounds it


def redact(text: str, terms: Sequence[str]) -> str:
    """Remove every term (case-insensitive, whole words, stop words between its words
    allowed, as the lexical audit matches), longest first. A term of stop words alone is no
    term.

    Matched on the text's words rather than with one regular expression per term: a pattern
    that spells out the stop words costs milliseconds to compile, and a brief has dozens of
    terms (it was half the rules backend's time). A term whose first word the text lacks
    cannot match, and leaves the text as it is without reading it word by word."""
    present: set[str] | None = None  # the text's words, lower-cased, while it is unchanged
    for term in sorted({t for t in terms if t.strip()}, key=len, reverse=True):
        parts = [w.lower() for w in _TERM_WORD.findall(term) if w.lower() not in STOPWORDS]
        if not parts:
            continue
        if present is None:
            present = {m.group().lower() for m in _WORD_RUN.finditer(text)}
        if parts[0] in present:
            text, before = _removed(text, parts), text
            present = None if text != before else present
    return text


def _removed(text: str, parts: Sequence[str]) -> str:
    """``text`` with each leftmost run of whole words ``parts`` (stop words allowed between
    them) replaced, as ``re.sub`` would replace a match."""
    words = [(m.start(), m.end(), m.group().lower()) for m in _WORD_RUN.finditer(text)]
    kept, done, i = [], 0, 0
    while i < len(words):
        last = _run_at(words, i, parts)
        if last is None:
            i += 1
            continue
        kept += [text[done : words[i][0]], "this approach"]
        done, i = words[last][1], last + 1
    return "".join([*kept, text[done:]])


def _run_at(words: Sequence[tuple[int, int, str]], i: int, parts: Sequence[str]) -> int | None:
    """The index of the last word of ``parts`` starting at word ``i``, else None."""
    if words[i][2] != parts[0]:
        return None
    j = i
    for part in parts[1:]:
        j += 1
        while j < len(words) and words[j][2] in STOPWORDS:
            j += 1
        if j >= len(words) or words[j][2] != part:
            return None
    return j


# The brief's frame. Each {a|b|c} is one choice, made from a hash of the title and abstract:
# targets that share a problem still get distinct briefs, from wording that names no topic.
FRAME = (
    "Problem. {Work|Research|Progress} on {first} {still lacks|still has no|is still missing} a "
    "{dependable|reliable|trustworthy} {way|means|recipe} to {handle|deal with|cope with} {rest} "
    "together: techniques that {do well|perform well|succeed} on {first} in isolation "
    "{degrade|falter|weaken} when {rest} {enter the picture|come into play|are involved}, and the "
    "trade-offs between them are {poorly|barely|only partly} understood. "
    "Context. {Prior|Earlier|Previous} studies of {first} and of {rest} have produced "
    "{several|a few|many} lines of techniques, but open questions remain about how they behave "
    "{outside|beyond|away from} the conditions they were designed for, and about what they cost "
    "to run {at scale|in practice|on real workloads}. "
    "Constraints. A solution has to work with the inputs and resources "
    "{usually|typically|normally} available here, stay affordable as the problem grows, and "
    "remain dependable when its "
    "assumptions are only {partly|partially|loosely} met. "
    "Goal. A solution must {address|tackle|resolve} {first} jointly with {rest}, be "
    "{compared with|measured against|checked against} established prior techniques, and make "
    "clear which of its parts matter and why."
)
_CHOICE = re.compile(r"\{([^{}]*\|[^{}]*)\}")


def frame(first: str, rest: str, seed: str) -> str:
    """The brief frame with every choice made by ``seed``'s hash."""
    digest = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
    parts: list[str] = []

    def choose(match: re.Match[str]) -> str:
        options = match.group(1).split("|")
        parts.append(options[(digest >> (2 * len(parts))) % len(options)])
        return parts[-1]

    return _CHOICE.sub(choose, FRAME).replace("{first}", first).replace("{rest}", rest)


def brief(context: Mapping[str, Any]) -> BriefDraft:
    """A brief from what the brief prompt shows, the target's title and abstract, and nothing else.

    Its topic words are those of the abstract's lead problem sentence (the problem as the field
    states it; the later sentences are the paper's own specifics, which single it out) that the
    title does not use; after a retrieval leak only the first ``RETRIEVAL_FALLBACK_WORDS``
    stay. Sentences addressed to a model (injected instructions) are dropped. The frame's own
    words are plain English that names no topic, so everything specific comes from the abstract.
    """
    title, abstract = str(context.get("title") or ""), str(context.get("abstract") or "")
    terms = [str(t) for t in context.get("redactions") or []]
    problem, _ = split_abstract(abstract)
    problem = [s for s in problem if not INJECTION.search(s)] or sentences(abstract)[:1]
    lead = problem[0] if problem else ""  # an empty abstract has no sentence
    title_words = set(content_words(title.replace("-", " ")))
    own = [w for w in dict.fromkeys(topic_words(lead)) if w not in title_words]
    retrieval_leaked = any(str(f).startswith("retrieval") for f in context.get("feedback") or [])
    topic = own[:RETRIEVAL_FALLBACK_WORDS] if retrieval_leaked else own
    topic = topic or sorted(title_words)[:2] or ["this area"]
    first, rest = topic[0], ", ".join(topic[1:]) or topic[0]
    text = redact(frame(first, rest, f"{title}\0{' '.join(problem)}"), terms)
    filler = (
        " Relevant prior work includes studies of the underlying question, of the techniques "
        "it builds on, and of the evaluations used to compare them."
    )
    while len(text.split()) < BRIEF_MIN_WORDS:
        text += filler
    return BriefDraft(brief=text)


RULES: dict[str, RulesFunction] = {
    "brief": brief,
    "audit_identity": audit_identity,
    "audit_mechanism_guess": audit_mechanism_guess,
    "audit_mechanism": audit_mechanism,
    "grade": grade,
}


class RulesBackend:
    """The rules as the LLM client asks them: a prompt's function (``rules``, by prompt name),
    its answer read as the call's model and checked. There is no repair retry: an answer that
    does not fit (a ValueError) is final."""

    def __init__(self, rules: Mapping[str, RulesFunction]) -> None:
        self.rules = dict(rules)

    def answer(
        self,
        name: str,
        context: Mapping[str, Any],
        model: type[Output],
        validate: Callable[[Output], None] | None,
    ) -> Output:
        function = self.rules.get(name)
        if function is None:
            raise LLMError(f"the rules backend has no answer for prompt {name!r}")
        answer = model.model_validate(function(context).model_dump())
        if validate is not None:
            validate(answer)
        return answer
