"""Pure: the words of paper text. Sentences, the split of an abstract into its problem and its
solution or results (by cue words), and content and topic words without stop words. The rules
backend, the briefs' redaction list and the lexical audit all read text this way."""

from __future__ import annotations

import re
import unicodedata

SOLUTION_CUES = re.compile(
    r"\b(we|our|this paper|this work|in this paper)\b.*\b(propose|present|introduce|develop|"
    r"design|show|achiev|outperform|demonstrat|reduce|improve)|\b(results?|outperform\w*|"
    r"state[- ]of[- ]the[- ]art|gains?)\b|\d+(\.\d+)?\s*%",
    re.IGNORECASE,
)
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "for",
        "from",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "under",
        "we",
        "when",
        "which",
        "while",
        "with",
        "without",
        "our",
        "these",
        "those",
        "than",
        "then",
        "such",
        "not",
    }
)
# Words of any abstract: they name no topic, so a brief never builds its problem from them.
GENERIC = frozenset(
    {
        "existing",
        "current",
        "remains",
        "remain",
        "unclear",
        "unreliable",
        "break",
        "down",
        "meets",
        "keep",
        "losing",
        "lacks",
        "approach",
        "approaches",
        "method",
        "methods",
        "model",
        "models",
        "data",
        "result",
        "results",
        "fail",
        "fails",
        "show",
        "shows",
        "shown",
        "gain",
        "gains",
        "cost",
        "costs",
        "reduce",
        "reduces",
        "study",
        "studies",
        "constraint",
        "constraints",
        "baseline",
        "baselines",
        "must",
        "based",
        "using",
        "paper",
        "work",
        "works",
        "problem",
        "problems",
        "novel",
        "task",
        "tasks",
        "performance",
        "propose",
        "proposed",
        "across",
        "over",
        "also",
        "both",
        "many",
        "more",
        "most",
        "other",
        "some",
        "each",
        "large",
        "small",
        "high",
        "well",
        "however",
        "thus",
        "further",
        "provide",
        "provides",
        "different",
        "various",
        "given",
        "used",
        "state",
    }
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[\w-]+")


def without_accents(text: str) -> str:
    """``text`` in NFKD form without its combining marks. ASCII text has neither, so it comes
    back as it is, unread character by character: titles and abstracts are mostly ASCII, and
    this runs on every reference of a build."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def split_abstract(abstract: str) -> tuple[list[str], list[str]]:
    """(problem sentences, solution-or-result sentences)."""
    problem: list[str] = []
    solution: list[str] = []
    for sentence in sentences(abstract):
        (solution if SOLUTION_CUES.search(sentence) else problem).append(sentence)
    return problem, solution


def content_words(text: str) -> list[str]:
    return [
        w for w in (m.lower() for m in _WORD.findall(text)) if len(w) > 3 and w not in STOPWORDS
    ]


def topic_words(text: str) -> list[str]:
    """Content words that name a topic (no generic academic words)."""
    return [w for w in content_words(text) if w not in GENERIC]
