"""Baseline agents, and the pure query planning and fusion they are made of.

- ``bm25-brief``: one search with the whole brief; submit its top 10.
- ``multi-query``: one search per sentence of the brief and per keyphrase, fused by weighted
  reciprocal-rank fusion; submit the fused top 10.

Keyphrases come from a :data:`KeyphraseScorer`, a pure function of the brief. The default,
:func:`keyphrases`, picks RAKE-style candidates and gives each weight 1.0; a learned scorer
with the same signature can replace it (``MultiQueryAgent(scorer=...)``) without touching the
rest of the agent.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from inspire_build.env.core import ReadResult, SearchResult, SubmitResult
from inspire_build.errors import InputError

SUBMIT_DEPTH = 10
RRF_K = 60  # Cormack et al. (2009)
_STOPWORD_TEXT = (
    "a about above after again against all also among an and any are as at be because been "
    "before being below between both but by can could did do does doing down during each few "
    "for from further had has have having here how if in into is it its itself just more most "
    "must need needs no nor not of off on once only or other our out over own same should so "
    "some such than that the their them then there these they this those through to too under "
    "until up very was we were what when where which while who whom why will with without "
    "would yet you your"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TOKEN = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
_BREAK = re.compile(r"[,.;:!?()\[\]\"]")


@dataclasses.dataclass(frozen=True)
class Keyphrase:
    phrase: str
    weight: float


KeyphraseScorer = Callable[[str], Sequence[Keyphrase]]


def sentences(text: str) -> list[str]:
    """The brief's sentences, in order, blanks dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def candidate_phrases(text: str, max_words: int = 3) -> list[str]:
    """RAKE-style candidates: runs of content words between stopwords and punctuation.

    A run longer than ``max_words`` yields its leading ``max_words`` words. Order: first seen.
    """
    found: dict[str, None] = {}
    for chunk in _BREAK.split(text.lower()):
        run: list[str] = []
        for token in [*_TOKEN.findall(chunk), ""]:
            if token and token not in STOPWORDS and not token.isdigit():
                run.append(token)
                continue
            if run:
                found.setdefault(" ".join(run[:max_words]), None)
            run = []
    return list(found)


def keyphrases(text: str, limit: int = 5) -> list[Keyphrase]:
    """The ``limit`` most frequent candidate phrases (longer first on ties, then first seen),
    each with weight 1.0. Frequency counts a phrase's occurrences as whole words."""
    lowered = " ".join(_TOKEN.findall(text.lower()))
    scored = []
    for position, phrase in enumerate(candidate_phrases(text)):
        count = len(re.findall(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", lowered))
        scored.append((-count, -len(phrase.split()), position, phrase))
    return [Keyphrase(phrase, 1.0) for *_, phrase in sorted(scored)[:limit]]


def query_plan(brief: str, scorer: KeyphraseScorer = keyphrases) -> list[tuple[str, float]]:
    """(query, weight): every sentence at weight 1.0, then the scorer's keyphrases."""
    plan = [(sentence, 1.0) for sentence in sentences(brief)]
    plan += [(k.phrase, k.weight) for k in scorer(brief) if k.weight > 0]
    return plan


def rrf(rankings: Sequence[tuple[Sequence[str], float]], k: int = RRF_K) -> list[str]:
    """Weighted reciprocal-rank fusion: score(d) = Σ_q w_q / (k + rank_q(d)), ranks from 1.

    Ties keep the order in which documents were first seen.
    """
    scores: dict[str, float] = {}
    for ranking, weight in rankings:
        for rank, doc in enumerate(dict.fromkeys(ranking), 1):
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
    order = {doc: i for i, doc in enumerate(scores)}
    return sorted(scores, key=lambda d: (-scores[d], order[d]))


class Tools(Protocol):
    """One session's tools, all an agent is handed: the tool server's ``SessionTools`` (what
    ``inspire agent run`` gives), or a bare ``SearchEnv`` (the benches)."""

    @property
    def brief(self) -> str: ...

    @property
    def cutoff(self) -> dt.date: ...

    def search(self, query: str, k: int = ...) -> SearchResult: ...

    def read(self, paper_id: str) -> ReadResult: ...

    def submit(self, ranking: Sequence[str]) -> SubmitResult: ...


class Agent(Protocol):
    name: str

    def run(self, env: Tools) -> None:
        """Search for ``env.brief`` (public before ``env.cutoff``) and submit a ranking."""
        ...


class Bm25BriefAgent:
    name = "bm25-brief"

    def run(self, env: Tools) -> None:
        result = env.search(env.brief, SUBMIT_DEPTH)
        env.submit([found.paper_id for found in result.results])


@dataclasses.dataclass
class MultiQueryAgent:
    scorer: KeyphraseScorer = keyphrases
    depth: int = 20
    name: str = "multi-query"

    def run(self, env: Tools) -> None:
        rankings: list[tuple[list[str], float]] = []
        for query, weight in query_plan(env.brief, self.scorer):
            result = env.search(query, self.depth)
            if result.budget_exhausted:
                break
            rankings.append(([found.paper_id for found in result.results], weight))
        env.submit(rrf(rankings)[:SUBMIT_DEPTH])


AGENTS: Mapping[str, Callable[[], Agent]] = {
    "bm25-brief": Bm25BriefAgent,
    "multi-query": MultiQueryAgent,
}


def make_agent(name: str) -> Agent:
    try:
        return AGENTS[name]()
    except KeyError:
        raise InputError(f"unknown agent {name!r}; known agents: {', '.join(AGENTS)}") from None
