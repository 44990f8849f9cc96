"""Pure: merge the sources' reference lists of one target into one list of works.

Each source's list is a sequence of :class:`Mention`. Mentions are merged into
:class:`MergedReference` entries by trying, in order:

1. DOI, 2. arXiv ID, 3. OpenAlex ID, 4. S2 paperId (and CorpusId), all exact on canonical IDs;
5. normalised title plus year: rapidfuzz similarity of the normalised titles of at least
   ``TITLE_THRESHOLD`` (see :func:`title_score`), with publication years at most
   ``YEAR_TOLERANCE`` apart when both are known (a preprint and its published version are often
   a year apart), or ``TITLE_ONLY_THRESHOLD`` when a year is missing.

A mention whose IDs hit two entries joins them: that is how a preprint and its published
version, listed separately by one source and linked by another (S2 gives a published version
the arXiv ID of its preprint), collapse into one work carrying all their IDs. Every mention
keeps its provenance: its source, the rule that matched it, and the score.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from rapidfuzz import fuzz, process

from inspire_build.cutoff import SourceDate
from inspire_build.ids import PaperId, Scheme
from inspire_build.models import MatchRule, Source
from inspire_build.text import without_accents

TITLE_THRESHOLD = 92.0
TITLE_ONLY_THRESHOLD = 97.0
YEAR_TOLERANCE = 1
SUBSET_WORDS = 5  # the subset rule needs this many distinct words on both sides
# Canonical-ID preference: an arXiv ID names a work across its versions.
CANONICAL_ORDER = (Scheme.ARXIV, Scheme.OPENALEX, Scheme.DOI, Scheme.S2, Scheme.CORPUS_ID)
_ID_RULES = (
    (MatchRule.DOI, (Scheme.DOI,)),
    (MatchRule.ARXIV, (Scheme.ARXIV,)),
    (MatchRule.OPENALEX, (Scheme.OPENALEX,)),
    (MatchRule.S2, (Scheme.S2, Scheme.CORPUS_ID)),
)


@dataclasses.dataclass(frozen=True)
class Mention:
    """One entry of one source's reference list (or a source's record of a work)."""

    source: Source
    position: int
    ids: tuple[PaperId, ...] = ()
    title: str | None = None
    year: int | None = None
    date: SourceDate | None = None
    contexts: tuple[str, ...] | None = None
    intents: tuple[str, ...] | None = None
    is_influential: bool | None = None


@dataclasses.dataclass(frozen=True)
class Match:
    """How a mention joined its entry. The first mention of an entry has no rule."""

    mention: Mention
    rule: MatchRule | None
    score: float | None


@dataclasses.dataclass
class MergedReference:
    """One cited work, as every source that listed it describes it."""

    matches: list[Match]

    @property
    def ids(self) -> list[PaperId]:
        """Every distinct ID, in the order the mentions gave them."""
        return list(dict.fromkeys(i for m in self.matches for i in m.mention.ids))

    @property
    def sources(self) -> list[Source]:
        return list(dict.fromkeys(m.mention.source for m in self.matches))

    @property
    def title(self) -> str | None:
        return next((m.mention.title for m in self.matches if m.mention.title), None)

    @property
    def year(self) -> int | None:
        return next((m.mention.year for m in self.matches if m.mention.year), None)

    @property
    def contexts(self) -> tuple[str, ...] | None:
        found = [m.mention.contexts for m in self.matches if m.mention.contexts is not None]
        return tuple(dict.fromkeys(c for group in found for c in group)) if found else None

    @property
    def intents(self) -> tuple[str, ...] | None:
        found = [m.mention.intents for m in self.matches if m.mention.intents is not None]
        return tuple(dict.fromkeys(i for group in found for i in group)) if found else None

    @property
    def is_influential(self) -> bool | None:
        flags = [m.mention.is_influential for m in self.matches]
        known = [f for f in flags if f is not None]
        return any(known) if known else None

    @property
    def match(self) -> tuple[MatchRule | None, float | None]:
        """The strongest cross-mention match: the first rule in matching order, best score."""
        joined = [m for m in self.matches if m.rule is not None]
        if not joined:
            return None, None
        order = list(MatchRule)
        best = min(
            joined, key=lambda m: (order.index(m.rule or MatchRule.TITLE_YEAR), -(m.score or 0))
        )
        return best.rule, best.score

    def canonical_id(self) -> PaperId | None:
        return canonical_id(self.ids)


def canonical_id(found: Iterable[PaperId]) -> PaperId | None:
    """The ID a work is stored under: arXiv, else the smallest OpenAlex ID, else DOI, S2, Corpus."""
    by_scheme: dict[Scheme, list[str]] = {}
    for paper_id in found:
        by_scheme.setdefault(paper_id.scheme, []).append(paper_id.value)
    for scheme in CANONICAL_ORDER:
        if by_scheme.get(scheme):
            values = by_scheme[scheme]
            chosen = (
                min(values, key=lambda v: (len(v), v)) if scheme is Scheme.OPENALEX else min(values)
            )
            return PaperId(scheme, chosen)
    return None


_BRACKETS = re.compile(r"[\(\[][^\)\]]*[\)\]]")
_NON_WORD = re.compile(r"[^\w]+")


def normalise_title(title: str) -> str:
    """Case-, accent-, punctuation- and whitespace-free form, without bracketed qualifiers."""
    text = without_accents(_BRACKETS.sub(" ", title)).casefold()
    return " ".join(_NON_WORD.sub(" ", text).split())


def title_score(a: str, b: str) -> float:
    """Similarity of two normalised titles, 0-100: ``fuzz.ratio`` on the whole strings.

    A title whose words all appear in the other, five words or more (one adds a subtitle),
    scores at least ``TITLE_ONLY_THRESHOLD``. Partial word overlap earns nothing extra: titles
    built from one field's vocabulary share many words without being the same work.
    """
    score = float(fuzz.ratio(a, b))
    words_a, words_b = set(a.split()), set(b.split())
    if min(len(words_a), len(words_b)) >= SUBSET_WORDS and (
        words_a <= words_b or words_b <= words_a
    ):
        score = max(score, TITLE_ONLY_THRESHOLD)
    return score


def years_agree(a: int | None, b: int | None) -> bool:
    return a is None or b is None or abs(a - b) <= YEAR_TOLERANCE


class _Titles:
    """The entries' normalised titles (``of``), kept as merge searches them.

    By the exclusive schemes each entry holds (:meth:`open`): a mention can title-match only
    entries that hold none of its own (an entry with the same ID was an ID hit; one with a
    different ID conflicts), so only those are searched, without rebuilding the list per
    mention; a list of 10,000 references would otherwise cost 10,000² title comparisons.
    By their words, those the subset rule applies to (:meth:`related`): token_set_ratio over
    10,000 titles, per mention without an ID, was most of a survey's merge."""

    def __init__(self) -> None:
        self.of: dict[int, str] = {}
        self._held: dict[int, frozenset[Scheme]] = {}  # every live entry's exclusive schemes
        self._groups: dict[frozenset[Scheme], dict[int, str]] = {}  # titles by those schemes
        self._words: dict[int, tuple[frozenset[str], str]] = {}  # entry -> (words, its key)
        self._by_word: dict[str, set[int]] = {}
        # Entries by one of their words, the rarest when indexed (any one would do: a title
        # whose words all lie among the query's has its key among them).
        self._by_key: dict[str, set[int]] = {}

    def held(self, position: int) -> frozenset[Scheme]:
        return self._held.get(position, frozenset())

    def hold(self, position: int, held: frozenset[Scheme]) -> None:
        """The entry now holds these exclusive schemes."""
        old, title = self._held.get(position), self.of.get(position)
        if old is not None and title is not None:
            del self._groups[old][position]
        self._held[position] = held
        if title is not None:
            self._groups.setdefault(held, {})[position] = title

    def open(self, mine: frozenset[Scheme]) -> list[dict[int, str]]:
        """The titles, in groups, of the entries that hold none of the schemes ``mine``."""
        return [titles for held, titles in self._groups.items() if held.isdisjoint(mine)]

    def add(self, position: int, title: str) -> None:
        self.of[position] = title
        held = self._held.setdefault(position, frozenset())
        self._groups.setdefault(held, {})[position] = title
        words = frozenset(title.split())
        if len(words) < SUBSET_WORDS:
            return
        key = min(words, key=lambda w: (len(self._by_word.get(w, ())), w))
        self._words[position] = (words, key)
        for word in words:
            self._by_word.setdefault(word, set()).add(position)
        self._by_key.setdefault(key, set()).add(position)

    def remove(self, position: int) -> None:
        """The entry joined another one."""
        held = self._held.pop(position, None)
        if self.of.pop(position, None) is not None and held is not None:
            del self._groups[held][position]
        found = self._words.pop(position, None)
        if found is not None:
            words, key = found
            for word in words:
                self._by_word[word].discard(position)
            self._by_key[key].discard(position)

    def related(self, query: str) -> set[int]:
        """The entries whose words all lie among the query's or hold all of them, both sides of
        ``SUBSET_WORDS`` distinct words or more: every entry the subset rule may join it to."""
        words = set(query.split())
        if len(words) < SUBSET_WORDS:
            return set()
        postings = sorted((self._by_word.get(w, set()) for w in words), key=len)
        found = postings[0].intersection(*postings[1:])
        for word in words:
            found |= self._by_key.get(word, set())
        return found


def merge(lists: Sequence[Sequence[Mention]]) -> list[MergedReference]:
    """Merge reference lists, in order: earlier lists found entries, later ones join them."""
    entries: list[MergedReference] = []
    dead: set[int] = set()  # entries joined into another one
    index: dict[PaperId, int] = {}
    titles = _Titles()

    def add(
        mention: Mention, into: int | None, rule: MatchRule | None, score: float | None
    ) -> None:
        match = Match(mention, rule, score)
        if into is None:
            entries.append(MergedReference([match]))
            into = len(entries) - 1
        else:
            entries[into].matches.append(match)
        for paper_id in mention.ids:
            index.setdefault(paper_id, into)
        titles.hold(into, titles.held(into) | _exclusive(mention.ids))
        if mention.title and into not in titles.of:
            titles.add(into, normalise_title(mention.title))

    def join(keep: int, other: int) -> None:
        if keep == other or other in dead:
            return
        entries[keep].matches.extend(entries[other].matches)
        dead.add(other)
        titles.hold(keep, titles.held(keep) | titles.held(other))
        titles.remove(other)
        for paper_id, position in list(index.items()):
            if position == other:
                index[paper_id] = keep

    for mentions in lists:
        for mention in mentions:
            hits: list[tuple[int, MatchRule]] = []
            for rule, schemes in _ID_RULES:
                for paper_id in mention.ids:
                    if paper_id.scheme in schemes and paper_id in index:
                        hits.append((index[paper_id], rule))
            if hits:
                target, rule = hits[0]
                for other, _ in hits[1:]:
                    join(target, other)
                add(mention, target, rule, 100.0)
                continue
            found = None
            if mention.title:
                found = _title_match(mention, titles, entries)
            if found is not None:
                add(mention, found[0], MatchRule.TITLE_YEAR, found[1])
            else:
                add(mention, None, None, None)
    return [entry for position, entry in enumerate(entries) if position not in dead]


def _title_match(
    mention: Mention, titles: _Titles, entries: Sequence[MergedReference]
) -> tuple[int, float] | None:
    """The first of the mention's title candidates among the entries it may join (the best
    five, as :func:`title_candidates` ranks them) whose IDs do not conflict and whose year
    agrees."""
    query = normalise_title(mention.title or "")
    if not query:
        return None
    related = titles.related(query)
    found: list[tuple[float, int]] = []
    for group in titles.open(_exclusive(mention.ids)):
        found += title_candidates(query, group, None, related=group.keys() & related)
    for score, position in _ranked(found, 5):
        if _conflict(mention.ids, entries[position].ids):
            continue
        year = entries[position].year
        if mention.year is not None and year is not None:
            if years_agree(mention.year, year):
                return position, float(score)
        elif score >= TITLE_ONLY_THRESHOLD:
            return position, float(score)
    return None


# Two different IDs in one of these schemes mean two works, however alike their titles
# ("The Fourth/Sixth PASCAL Recognizing Textual Entailment Challenge"). OpenAlex IDs are not
# among them: OpenAlex keeps a preprint and its published version as two works.
_EXCLUSIVE = (Scheme.DOI, Scheme.ARXIV, Scheme.S2, Scheme.CORPUS_ID)


def _exclusive(found: Iterable[PaperId]) -> frozenset[Scheme]:
    return frozenset(p.scheme for p in found if p.scheme in _EXCLUSIVE)


def _conflict(a: Iterable[PaperId], b: Iterable[PaperId]) -> bool:
    mine = {p.scheme: p.value for p in a if p.scheme in _EXCLUSIVE}
    return any(p.scheme in mine and mine[p.scheme] != p.value for p in b)


def title_candidates(
    query: str,
    choices: Sequence[str] | Mapping[int, str],
    limit: int | None = 5,
    *,
    related: Collection[int] | None = None,
) -> list[tuple[float, int]]:
    """The ``limit`` best (score, index) of ``choices`` by :func:`title_score`, at least
    ``TITLE_THRESHOLD``, best first and the earlier choice first among equals (None: all).
    ``choices`` a mapping: its keys are the indexes.

    Computed as title_score's two parts, each by rapidfuzz over all choices at once: ``ratio``,
    and ``token_set_ratio`` of 100, which is exactly one title's words all in the other's; a
    scorer written in Python, called once per pair, made long bibliographies quadratic in
    Python calls. ``related``: the indexes of the choices whose words may hold the query's or
    lie among them (every such choice; :meth:`_Titles.related` finds them); only those are
    tried for the subset rule. None: all are."""
    scores = {
        index: float(score)
        for _, score, index in process.extract(
            query, choices, scorer=fuzz.ratio, score_cutoff=TITLE_THRESHOLD, limit=None
        )
    }
    if len(set(query.split())) >= SUBSET_WORDS:
        tried = choices if related is None else {i: choices[i] for i in related}
        for choice, _, index in process.extract(
            query, tried, scorer=fuzz.token_set_ratio, score_cutoff=100, limit=None
        ):
            if len(set(choice.split())) >= SUBSET_WORDS:
                scores[index] = max(scores.get(index, 0.0), TITLE_ONLY_THRESHOLD)
    return _ranked(((score, index) for index, score in scores.items()), limit)


def _ranked(found: Iterable[tuple[float, int]], limit: int | None) -> list[tuple[float, int]]:
    """Best score first, the earlier index first among equals; the first ``limit``."""
    return sorted(found, key=lambda s: (-s[0], s[1]))[:limit]


def is_self(
    entry: MergedReference,
    target_ids: Iterable[PaperId],
    target_title: str | None,
    target_year: int | None,
) -> bool:
    """The entry is the target itself: it shares an ID, or its title and year match."""
    if set(entry.ids) & set(target_ids):
        return True
    if not (target_title and entry.title):
        return False
    score = title_score(normalise_title(entry.title), normalise_title(target_title))
    return score >= TITLE_ONLY_THRESHOLD and years_agree(entry.year, target_year)
