"""The brief step: a solution-redacted research brief from a target's title and abstract.

The redaction list is given to the model and checked again afterwards (``audit.lexical``):
every 4-gram of the target's title, its coined names and acronyms, and its antecedents' titles.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from inspire_build.lineage import normalise_title
from inspire_build.llm import LLM
from inspire_build.models import BriefDraft

MIN_WORDS, TARGET_WORDS, MAX_WORDS = 120, 180, 250
TITLE_NGRAM = 4
# A coined name: an all-caps token (BERT), one with a digit (GPT-4), or mixed case (RoBERTa).
_COINED = re.compile(r"\b(?:[A-Z]{2,}[\w-]*|\w*\d\w*[A-Za-z]\w*|[A-Za-z]+[a-z][A-Z]\w*)\b")
_ACRONYM_IN_PARENS = re.compile(r"\(([A-Z][\w-]*[A-Z0-9][\w-]*)\)")


def title_ngrams(title: str, n: int = TITLE_NGRAM) -> list[str]:
    words = normalise_title(title).split()
    return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)] or (
        [" ".join(words)] if len(words) >= 2 else []
    )


def coined_names(title: str, abstract: str) -> list[str]:
    found = _COINED.findall(title) + _ACRONYM_IN_PARENS.findall(abstract)
    return sorted({name for name in found if len(name) >= 2})


def redactions(title: str, abstract: str, antecedent_titles: Sequence[str]) -> list[str]:
    """Terms a brief must not contain: title 4-grams, coined names, antecedent titles."""
    terms = [*title_ngrams(title), *coined_names(title, abstract)]
    terms += [normalise_title(t) for t in antecedent_titles if len(t.split()) >= 3]
    return sorted(set(terms))


def write_brief(
    llm: LLM, title: str, abstract: str, terms: Sequence[str], feedback: Sequence[str] = ()
) -> BriefDraft:
    """One draft from the title and abstract only. ``feedback`` carries the previous attempt's
    failed checks."""
    context = {
        "title": title,
        "abstract": abstract,
        "redactions": list(terms),
        "feedback": list(feedback),
    }
    return llm.complete("brief", context, BriefDraft)
