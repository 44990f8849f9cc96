"""briefs.py's redaction list, and the lexical audit that checks it: the solution is banned, the
field is not."""

from __future__ import annotations

import pytest

from inspire_build import audit
from inspire_build.briefs import (
    coined_names,
    mentioned,
    mentions,
    redactions,
    title_ngrams,
    words,
)
from inspire_build.llm_rules import STOPWORDS

CASSI_TITLE = "Mamba-based Hyperspectral CASSI Reconstruction"
CASSI_ABSTRACT = (
    "Coded aperture snapshot spectral imaging (CASSI) compresses a hyperspectral image (HSI) "
    "into one 2D measurement, and recovering the HSI is ill-posed. Artificial intelligence (AI) "
    "models, from convolutional networks to large language models (LLMs), struggle with its "
    "spectral structure. We propose MambaHSI (MHS), a Mamba-based network that scans the "
    "three-dimensional (3D) spectral cube with selective state spaces. MHS outperforms the "
    "best CASSI reconstruction methods by 2.31 dB."
)
CASSI_CITED_TITLES = [
    "Deep unfolding networks for CASSI reconstruction",
    "Spectral transformers for 3D HSI recovery",
]
CASSI_CITED_ABSTRACTS = [
    "Coded aperture snapshot spectral imaging (CASSI) captures a hyperspectral image (HSI) in "
    "a single shot. We unfold an iterative solver into a deep network.",
    "We recover 3D hyperspectral cubes with spectral-wise attention.",
]
FIELD_BRIEF = (
    "Problem: coded aperture snapshot spectral imaging (CASSI) compresses a hyperspectral "
    "cube into a single 2D snapshot, and recovering the 3D HSI from it is ill-posed. Context: "
    "learned reconstruction methods for CASSI trade accuracy for speed, and AI models such as "
    "LLMs offer no help with the spectral structure. Goal: a hyperspectral reconstruction that "
    "is accurate, fast and faithful to every spectral band."
)


def cassi_terms() -> list[str]:
    return redactions(CASSI_TITLE, CASSI_ABSTRACT, CASSI_CITED_TITLES, CASSI_CITED_ABSTRACTS)


def test_the_coined_method_name_is_banned_and_the_shared_field_acronyms_are_not() -> None:
    terms = cassi_terms()
    assert {"MambaHSI", "MHS"} <= set(terms)
    folded = {t.casefold() for t in terms}
    assert not folded & {"cassi", "hsi", "3d", "ai", "llms"}
    assert "mamba based hyperspectral cassi" in terms  # the title's 4-grams stay banned
    assert "deep unfolding networks for cassi reconstruction" in terms  # antecedent titles too


def test_only_the_antecedents_make_a_title_acronym_field_vocabulary() -> None:
    alone = redactions(CASSI_TITLE, CASSI_ABSTRACT, [])
    assert "CASSI" in alone and "3D" in alone  # defined by the title and a method sentence
    assert "AI" not in alone and "LLMs" not in alone  # only the problem sentences use them
    assert coined_names(CASSI_TITLE, CASSI_ABSTRACT, CASSI_CITED_ABSTRACTS) == ["MHS", "MambaHSI"]


def test_a_brief_that_names_only_the_field_passes_the_lexical_audit() -> None:
    numbers = audit.result_numbers(CASSI_ABSTRACT)
    assert numbers == ["2.31"]
    finding = audit.lexical("b", FIELD_BRIEF, cassi_terms(), numbers)
    assert finding.passed, finding.detail


@pytest.mark.parametrize(
    ("leak", "hit"),
    [
        ("A MambaHSI-like design would help.", "MambaHSI"),
        ("Something in the spirit of MHS would help.", "MHS"),
        ("A Mamba-based hyperspectral CASSI solver would help.", "mamba based hyperspectral cassi"),
        ("Gains of 2.31 dB would be expected.", "2.31"),
    ],
)
def test_a_brief_that_names_the_solution_fails(leak: str, hit: str) -> None:
    finding = audit.lexical("b", f"{FIELD_BRIEF} {leak}", cassi_terms(), ["2.31"])
    assert not finding.passed and finding.detail == f"contains: {hit}"


def test_an_all_caps_title_is_case_folded_and_bans_no_stop_word() -> None:
    title = "SOLKAR ROUTER: ROBUST GATING FOR NOISY RANKING"
    abstract = "Ranking is noisy. We propose Solkar Router (SOLR), which gates its inputs."
    terms = redactions(title, abstract, [])
    assert not [t for t in terms if " ".join(t.casefold().split()) in STOPWORDS]
    assert all(words(t) for t in terms)
    assert title_ngrams(title) == [
        "solkar router robust gating",
        "router robust gating noisy",
        "robust gating noisy ranking",
    ]
    assert "solkar router" in {t.casefold() for t in terms} and "SOLR" in terms
    assert "FOR" not in terms and "ROBUST" not in terms
    passed = audit.lexical("b", "A design for noisy ranking, built for scale.", terms, [])
    assert passed.passed, passed.detail
    copied = audit.lexical("b", "Robust gating for noisy ranking is needed.", terms, [])
    assert copied.detail == "contains: robust gating noisy ranking"


def test_an_acronym_matches_only_as_itself() -> None:
    terms = redactions("Fast solvent screening", "We propose Tri-level Screening (TRIS).", [])
    assert "TRIS" in terms and "Tri-level Screening" in terms
    assert audit.lexical("b", "Trisolven and tris buffers are common.", terms, []).passed
    assert not audit.lexical("b", "Unlike TRIS-style screens, ...", terms, []).passed
    assert mentions("a tri level screening pass", "Tri-level Screening")


def test_names_the_method_sentences_define() -> None:
    abstract = (
        "Planning over long horizons is slow. We introduce Orbit, a planner that reuses "
        "subgoals, and a variant called Orbit-2. Orbit outperforms prior planners."
    )
    assert coined_names("Faster planning", abstract) == ["Orbit", "Orbit-2"]
    assert coined_names("Faster planning", abstract, ["Orbit: an old planner"]) == ["Orbit-2"]


def test_mentioned_lists_the_terms_that_mentions_finds_in_their_order() -> None:
    brief = "A robust gating scheme for the HSI cube, for noisy ranking."
    terms = ["noisy ranking", "HSI", "hsi cube", "for", "robust gatings", "Robust Gating"]
    assert mentioned(brief, terms) == ["noisy ranking", "HSI", "hsi cube", "Robust Gating"]
    assert mentioned(brief, terms) == [t for t in terms if mentions(brief, t)]
    assert mentioned(brief, []) == []


def test_mentions_is_whole_word_case_folded_and_stop_word_blind() -> None:
    assert mentions("Robust Gating, for noisy ranking!", "robust gating noisy ranking")
    assert not mentions("robust gatings noisy ranking", "robust gating noisy ranking")
    assert not mentions("anything", "for")  # a stop word is never a term
    assert not mentions("the hsi cube", "HSI") and mentions("the HSI cube", "HSI")
