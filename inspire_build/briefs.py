"""Pure: what a solution-redacted research brief must not contain (the brief itself is drafted
by the model, in ``gold.write_brief``).

The redaction list is given to the model and checked again afterwards (``audit.lexical``). It
bans what gives the solution away, not the field:

- the target's coined names and acronyms (:func:`coined_names`): those its title defines (the
  head of a "Name: what it does" title, and tokens shaped like a name: MambaHSI, GPT-4, BERT)
  and those its method sentences define ("We propose Solkar Router (SOLR)", "called X");
  less every name and acronym that an antecedent's title or abstract uses too: a brief may
  name the problem's field (CASSI, HSI), which the prior work shares;
- every 4-gram of its title's words after case folding and stop-word removal
  (:func:`title_ngrams`), so an all-caps title bans neither "FOR" nor any single word. A 4-gram
  stays banned even when prior work uses it: four title words in a row point at the title (on
  the sandbox's emulated endpoint, exempting shared 4-grams let planted title leaks through);
- its antecedents' titles.

The result numbers are checked beside the list (``audit.result_numbers``).

A term is found in a text by :func:`mentions`: as whole words after case folding and stop-word
removal; an acronym in capitals (TRIS) only as itself, so neither "tris" nor "trisolven" is a
hit. No stop word is ever a term by itself.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from inspire_build.lineage import normalise_title
from inspire_build.text import STOPWORDS, split_abstract, without_accents

MIN_WORDS, TARGET_WORDS, MAX_WORDS = 120, 180, 250
TITLE_NGRAM = 4
TITLE_HEAD_WORDS = 4  # "Name: what it does": a head this short is the name
ALL_CAPS_SHARE = 0.8  # a title whose words are this much in capitals is case-folded first
_NON_WORD = re.compile(r"[^\w]+")
# A token shaped like a coined name: all capitals (BERT), a digit (GPT-4) or an inner capital
# (MambaHSI, RoBERTa).
_SHAPED = re.compile(r"^(?:[A-Z]{2,}[\w-]*|[\w-]*\d[\w-]*[A-Za-z][\w-]*|[\w-]*[a-z][A-Z][\w-]*)$")
_TOKEN = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9-]*[A-Z0-9]$")  # matched case and all, as itself
_IN_PARENS = re.compile(r"\(\s*([^()\s,;]{2,})\s*\)")
# A verb that defines a name ("We propose X", "a variant called X"), then its object.
_DEFINES = re.compile(
    r"\b(?:propose[sd]?|present(?:s|ed)?|introduce[sd]?|develop(?:s|ed)?|design(?:s|ed)?|"
    r"call(?:s|ed)?|name[sd]?|dub(?:s|bed)?|term(?:ed)?|coin(?:s|ed)?)\s+(?P<object>[^,;:(.]*)",
    re.IGNORECASE,
)


def words(text: str) -> list[str]:
    """Case-folded, accent-free words of ``text``, without its stop words (brackets kept)."""
    folded = without_accents(text).casefold()
    return [w for w in _NON_WORD.split(folded) if w and w not in STOPWORDS]


@functools.lru_cache(maxsize=8192)  # a target's antecedent texts are folded on every draft
def _phrase(text: str) -> str:
    return " ".join(words(text))


def mentions(text: str, term: str) -> bool:
    """Whether ``text`` contains ``term``: whole words after case folding and stop-word removal,
    or, for an acronym in capitals, the acronym itself as a whole word."""
    return bool(mentioned(text, [term]))


def mentioned(text: str, terms: Iterable[str]) -> list[str]:
    """The ``terms`` that ``text`` :func:`mentions`, in their order. The text is folded once, not
    once per term: a brief meets every antecedent title of a long bibliography."""
    folded = f" {_phrase(text)} "
    found = []
    for term in terms:
        bare = term.strip()
        if _ACRONYM.match(bare):
            hit = re.search(rf"(?<![\w]){re.escape(bare)}(?![\w])", text) is not None
        else:
            phrase = _phrase(bare)
            hit = bool(phrase) and f" {phrase} " in folded
        if hit:
            found.append(term)
    return found


def _all_caps(title: str) -> bool:
    lettered = [t for t in _TOKEN.findall(title) if any(c.isalpha() for c in t)]
    capital = [t for t in lettered if t.upper() == t]
    return len(lettered) >= 2 and len(capital) >= ALL_CAPS_SHARE * len(lettered)


def _folded(title: str) -> str:
    """The title, case-folded when it is written in capitals."""
    return title.casefold() if _all_caps(title) else title


def title_ngrams(title: str, n: int = TITLE_NGRAM) -> list[str]:
    """The ``n``-grams of the title's words after case folding and stop-word removal (the whole
    title when it has fewer words, if it has at least two)."""
    found = words(title)
    return [" ".join(found[i : i + n]) for i in range(len(found) - n + 1)] or (
        [" ".join(found)] if len(found) >= 2 else []
    )


def _name_runs(text: str) -> list[tuple[str, int]]:
    """(run, where it ends) for each run of consecutive capitalised or name-shaped tokens. A
    run's last token loses a lower-case hyphenated tail: "Mamba-based" names Mamba, while
    "Tri-level Screening" stays whole."""
    runs: list[tuple[str, int]] = []
    current: list[re.Match[str]] = []

    def close() -> None:
        if current:
            last = current[-1].group(0)
            parts = last.split("-")
            while len(parts) > 1 and parts[-1].islower():
                parts.pop()
            tokens = [m.group(0) for m in current[:-1]] + ["-".join(parts)]
            runs.append((" ".join(tokens), current[-1].start() + len("-".join(parts))))
            current.clear()

    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token[:1].isupper() or _SHAPED.match(token):
            current.append(match)
        else:
            close()
    close()
    return runs


def _candidates(title: str, abstract: str) -> list[str]:
    """Names and acronyms the title or the method sentences define, before the antecedent
    filter."""
    folded = _folded(title)
    found: list[str] = []
    head, colon, _ = folded.partition(":")
    if colon and 0 < len(head.split()) <= TITLE_HEAD_WORDS:
        found.append(head.strip())
    if folded == title:  # in capitals every word has a name's shape
        found += [t for t in _TOKEN.findall(title) if _SHAPED.match(t)]
    _, method = split_abstract(abstract)
    for sentence in method:
        for match in _IN_PARENS.finditer(sentence):
            acronym = match.group(1)
            if not (_SHAPED.match(acronym) or acronym[:1].isupper()):
                continue
            found.append(acronym)
            before = sentence[: match.start()].rstrip()
            found += [run for run, end in _name_runs(before)[-1:] if end == len(before)]
        for match in _DEFINES.finditer(sentence):
            found += [run for run, _ in _name_runs(match.group("object"))]
    return found


def coined_names(title: str, abstract: str, antecedent_texts: Iterable[str] = ()) -> list[str]:
    """The coined names and acronyms the title or the method sentences define that no
    antecedent text uses (stop words and single characters are never names)."""
    shared = f" {' | '.join(_phrase(t) for t in antecedent_texts)} "
    names: dict[str, str] = {}  # its words -> the name as first written
    for name in _candidates(title, abstract):
        name = name.strip(" -")
        phrase = _phrase(name)
        if len(phrase.replace(" ", "")) < 2 or phrase.isdigit() or f" {phrase} " in shared:
            continue
        names.setdefault(phrase, name)
    return sorted(names.values())


def own_terms(title: str, abstract: str, antecedent_texts: Sequence[str] = ()) -> list[str]:
    """The terms of the target itself: its title 4-grams and coined names (less those the
    antecedents' texts use too). The brief prompt lists only these: it never shows the writer
    the antecedents' titles, which are checked after writing (:func:`redactions`)."""
    terms = [*title_ngrams(title), *coined_names(title, abstract, antecedent_texts)]
    return sorted({t for t in terms if _phrase(t)})


def redactions(
    title: str,
    abstract: str,
    antecedent_titles: Sequence[str],
    antecedent_abstracts: Sequence[str] = (),
) -> list[str]:
    """Terms a brief must not contain: coined names and acronyms (less those the antecedents'
    titles and abstracts use too), title 4-grams and antecedent titles."""
    terms = own_terms(title, abstract, [*antecedent_titles, *antecedent_abstracts])
    terms += [normalise_title(t) for t in antecedent_titles if len(t.split()) >= 3]
    return sorted({t for t in terms if _phrase(t)})
