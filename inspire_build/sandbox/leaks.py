"""Pure: leaks injected into written briefs, independently of the writer, to measure the checks.

The validity bench takes each brief the pipeline accepted, inserts one labelled leak at a time,
and runs the build's checks on the result. Each form is a sentence that gives the solution
away in one way; the verbatim forms carry the target's own strings, the paraphrase forms say
the same in other words. A form no check catches is reported, never hidden.
"""

from __future__ import annotations

import dataclasses
import random
import re

from inspire_build.text import content_words

VERBATIM = (
    "method_name",
    "acronym",
    "title_4gram",
    "result_number",
    "mechanism_words",
    "antecedent_title",
)
PARAPHRASE = ("name_paraphrase", "title_paraphrase")
FORMS = (*VERBATIM, *PARAPHRASE)


@dataclasses.dataclass(frozen=True)
class Facts:
    """What a leak can give away of a target: from the world's truth (the injector is the
    bench's, not the model's)."""

    method_name: str
    acronym: str
    title: str
    result_numbers: tuple[str, ...]
    mechanism: tuple[str, ...]
    antecedent_title: str | None


def _title_words(title: str) -> list[str]:
    return content_words(title.replace("-", " ").replace(":", " "))


def _title_paraphrase(title: str) -> str | None:
    """The title's content words in reverse order, joined loosely: no 4 of them in a row."""
    found = list(dict.fromkeys(_title_words(title)))
    if len(found) < 3:
        return None
    return ", ".join(reversed(found[:-1])) + f" and {found[-1]} together"


def _name_paraphrase(name: str) -> str | None:
    """A coined "Solkar Router" said as "a router in the style of solkar"."""
    words = name.split()
    if len(words) < 2:
        return None
    return f"a {words[-1].lower()} in the style of {' '.join(words[:-1]).lower()}"


def sentence(form: str, facts: Facts, rng: random.Random) -> str | None:
    """The leak sentence of ``form`` for these facts; None when the facts cannot give it."""
    grams = [" ".join(w[i : i + 4]) for w in [_title_words(facts.title)] for i in range(len(w) - 3)]
    said = {
        "method_name": facts.method_name or None,
        "acronym": facts.acronym or None,
        "title_4gram": rng.choice(grams) if grams else None,
        "result_number": facts.result_numbers[0] if facts.result_numbers else None,
        "mechanism_words": " and ".join(facts.mechanism[:2]) if len(facts.mechanism) > 1 else None,
        "antecedent_title": facts.antecedent_title,
        "name_paraphrase": _name_paraphrase(facts.method_name),
        "title_paraphrase": _title_paraphrase(facts.title),
    }[form]
    return None if said is None else f"One promising direction is related to {said}."


def inject(brief: str, leak: str) -> str:
    """The brief with ``leak`` after its first paragraph's first sentence."""
    head, sep, rest = brief.partition("\n\n")
    first = re.split(r"(?<=[.!?])\s+", head, maxsplit=1)
    head = f"{first[0]} {leak} {first[1]}" if len(first) > 1 else f"{head} {leak}"
    return head + sep + rest
