"""sandbox/emulated_audit.py: a model's memory bounded by its training cutoff, and mechanism
guesses from the brief alone, graded against the abstract; hand-made records."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from inspire_build.sandbox import emulated_audit as A
from inspire_build.sandbox.world import Record, WorldConfig, generate
from tests.unit.sandbox.conftest import sandbox_record

CUTOFF = dt.date(2025, 1, 1)


def record(key: str, title: str, abstract: str, published: str, **fields: Any) -> Record:
    dates = {"s2_publication_date": published, "s2_year": int(published[:4])}
    return sandbox_record(
        key, title, abstract=abstract, publication_date=published, **dates, **fields
    )


def abstract(task: str, a: str, name: str, acronym: str, mechanism: str) -> str:
    return (
        f"{task.capitalize()} of {a} corpora remains unreliable when tessel and orvi interact. "
        f"We propose {name} ({acronym}), which combines {mechanism} to cope with noisy labels. "
        f"On {a} benchmarks, {acronym} improves recall by 12.4% and runs 3.1 times faster."
    )


VELKORA_ABSTRACT = abstract("ranking", "lumen", "Velkora Router", "VELR", "gating with hashing")
ORVO = record(
    "P000001",
    "Sparse attention nets for lumen archives",
    abstract("retrieval", "archive", "Orvo Net", "ORVN", "attention with sketching"),
    "2024-06-01",
)
DORSA = record(
    "P000002",
    "Dorsa Mixer: quorn tracking in vessa plinths",
    abstract("tracking", "quorn", "Dorsa Mixer", "DORM", "recurrence with caching"),
    "2023-03-01",
)
PREPRINT = record(  # published after the cutoff, but public as a preprint before it
    "P000003",
    "Tessel folding of mave streams",
    abstract("folding", "mave", "Mave Folder", "MAVF", "pruning with diffusion"),
    "2025-02-01",
    arxiv_versions=[(1, "2024-12-01"), (2, "2025-02-01")],
)
ON_CUTOFF = record(
    "P000004",
    "Plinth sorting for sorel graphs",
    abstract("sorting", "sorel", "Sorel Sorter", "SORS", "bootstrapping with gating"),
    "2025-01-01",
)
VELKORA = record(
    "P000005",
    "Velkora Router: Adaptive gating for lumen-aware ranking",
    VELKORA_ABSTRACT,
    "2025-03-01",
)
RECORDS = [ORVO, DORSA, PREPRINT, ON_CUTOFF, VELKORA]
MEMORY = A.Memory(RECORDS, CUTOFF)


# --- memory -------------------------------------------------------------------------------------


def test_first_public_is_the_earlier_of_the_publication_and_the_first_preprint() -> None:
    assert A.first_public(ORVO) == "2024-06-01"
    assert A.first_public(PREPRINT) == "2024-12-01"


def test_memory_knows_only_the_papers_first_public_before_the_cutoff() -> None:
    assert [r.key for r in MEMORY.known] == ["P000001", "P000002", "P000003"]
    assert A.Memory(RECORDS, dt.date(2025, 1, 2)).known[-1] is ON_CUTOFF  # a day later


@pytest.mark.parametrize(
    ("brief", "known"),
    [
        ("Work such as ORVN hints at what is possible.", ORVO),
        ("A system in the spirit of Orvo Net would be a natural start.", ORVO),
        ("Recent attempts such as DORM hint at what is possible.", DORSA),
        ("The setting is close to quorn tracking vessa plinths.", DORSA),
        ("The problem concerns sparse attention nets for lumen data.", ORVO),
        ("It relates to MAVF and mave folding.", PREPRINT),
    ],
)
def test_recall_names_a_known_paper_from_its_name_acronym_or_title_gram(
    brief: str, known: Record
) -> None:
    assert MEMORY.recall(brief) is known


def test_recall_needs_the_acronym_as_a_whole_word() -> None:
    assert MEMORY.recall("Some ORVNX systems.") is not ORVO
    assert MEMORY.recall("Some ORVN systems.") is ORVO


def test_recall_without_a_name_or_gram_picks_the_paper_sharing_most_words() -> None:
    brief = "Tracking of quorn corpora stays fragile when tessel and orvi act together."
    assert MEMORY.recall(brief) is DORSA


@pytest.mark.parametrize(
    "brief",
    [
        "A system in the spirit of Velkora Router would be a natural start.",
        "Recent attempts such as VELR hint at what is possible.",
        "The setting is close to router adaptive gating lumen-aware ranking.",
        VELKORA_ABSTRACT,
    ],
)
def test_a_paper_after_the_cutoff_is_never_recalled(brief: str) -> None:
    recalled = MEMORY.recall(brief)
    assert recalled is not None and recalled is not VELKORA
    assert A.first_public(recalled) < CUTOFF.isoformat()
    assert A.Memory([VELKORA, ON_CUTOFF], CUTOFF).recall(brief) is None  # knows nothing


def test_no_later_paper_of_a_generated_world_is_recalled_from_its_own_name() -> None:
    world = generate(WorldConfig(seed=3, papers=120))
    memory = A.Memory(world.records, CUTOFF)
    old_works = {r.work for r in memory.known}
    later = [r for r in world.records if r.work not in old_works and r.method_name]
    assert memory.known and len(later) >= 10
    for paper in later:
        brief = f"Like {paper.method_name} ({paper.acronym}): {paper.title}."
        recalled = memory.recall(brief)
        assert recalled is not None and recalled.work != paper.work
    for paper in memory.known[-10:]:  # while a known paper is named from its acronym
        if paper.acronym and paper.method_name:
            assert memory.recall(f"Recent attempts such as {paper.acronym}.") is not None


# --- mechanism guesses --------------------------------------------------------------------------


def test_a_guess_echoes_the_acronyms_numbers_and_technique_words_the_brief_shows() -> None:
    brief = (
        "Recent attempts such as VELR hint at what is possible. Improvements of 12.4% and 3.1 "
        "are expected. A solution will likely rely on gating and hashing."
    )
    assert A.mechanism_guess(brief) == "A method built on VELR, 12.4%, 3.1, gating, hashing."


def test_a_guess_echoes_a_name_shaped_run_inside_a_sentence() -> None:
    guess = A.mechanism_guess("A system in the spirit of Velkora Router would be a start.")
    assert guess == "A method built on Velkora, Router."


def test_a_clean_brief_gets_a_generic_guess() -> None:
    brief = (
        "Ranking of lumen corpora stays fragile when tessel and orvi act together. "
        "A solution has to hold up when streaming inputs meet noisy labels."
    )
    assert A.mechanism_guess(brief) == (
        "An approach that models ranking and lumen and corpora jointly."
    )
    assert A.mechanism_guess("It is so.") == (
        "An approach that models the stated conditions jointly."
    )


def test_a_clean_brief_with_section_labels_gets_a_generic_guess() -> None:
    brief = (
        "Problem: Ranking of lumen corpora stays fragile when tessel and orvi act together.\n\n"
        "Context: An answer should be judged under the conditions stated here.\n\n"
        "Goal: The goal is ranking of lumen corpora that is reliable under these conditions."
    )
    assert A.mechanism_guess(brief).startswith("An approach that models")


# --- mechanism overlap ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("guess", "level", "shared"),
    [
        ("A method built on Velkora Router.", "full", ["Velkora Router"]),
        ("Something like VELR.", "full", ["VELR"]),
        ("Gains of 12.4% in recall.", "full", ["12.4%", "recall"]),
        ("Speed-ups of 3.1 at most.", "full", ["3.1"]),
        ("A method built on gating, hashing.", "full", ["gating", "hashing"]),
        ("A method built on gating.", "partial", ["gating"]),
        ("An approach that models ranking and lumen and corpora jointly.", "none", []),
        ("Speed-ups of 3.12 at most.", "none", []),
    ],
)
def test_mechanism_overlap_levels(guess: str, level: str, shared: list[str]) -> None:
    assert A.mechanism_overlap(guess, VELKORA_ABSTRACT) == (level, shared)
