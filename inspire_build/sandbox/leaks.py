"""Pure: leaks injected into written briefs, independently of the writer, to measure the checks.

The validity bench takes each brief the pipeline accepted, inserts one labelled leak at a time,
and runs the build's checks on the result. Each form is a sentence that gives the solution
away in one way; the verbatim forms carry the target's own strings, the paraphrase forms say
the same in words no paper of the world holds (:data:`SYNONYMS`), as a model that read the
target could: only a check that reads meaning can catch them. A form no check catches is
reported, never hidden.
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


# The world's vocabulary said in other words: none of these words is in any paper of a world
# (a test holds that), so a paraphrase shares no word with its target but the topic's own.
SYNONYMS = {
    # the method nouns of coined names
    "router": "dispatcher",
    "sampler": "drawer of examples",
    "encoder": "representation builder",
    "planner": "step arranger",
    "indexer": "lookup builder",
    "solver": "puzzle cracker",
    "mixer": "blender",
    "tuner": "knob turner",
    # adjectives of titles
    "scalable": "growable",
    "robust": "hard to upset",
    "sparse": "mostly empty",
    "adaptive": "self-adjusting",
    "efficient": "thrifty",
    "contrastive": "pairwise differencing",
    "hierarchical": "tree-shaped",
    "causal": "cause-and-effect",
    "federated": "spread across owners",
    "generative": "sample-producing",
    "neural": "brain-inspired",
    "streaming": "on-the-fly",
    # mechanisms
    "attention": "learned focusing",
    "distillation": "teacher-to-pupil transfer",
    "pruning": "trimming",
    "quantization": "low-precision arithmetic",
    "gating": "learned switches",
    "hashing": "bucketed keys",
    "caching": "kept intermediate answers",
    "reweighting": "rebalanced importance",
    "bootstrapping": "resampling with replacement",
    "factorization": "splitting into slim factors",
    "diffusion": "iterative noise reversal",
    "curriculum": "lessons graded from easy to hard",
    "ensembling": "committees of voters",
    "prompting": "instruction templates",
    "regularization": "complexity penalties",
    "recurrence": "looping hidden state",
    "sketching": "compact synopses",
    "tokenization": "chopping text into pieces",
    # tasks, and the title's "-aware"
    "ranking": "ordering",
    "segmentation": "carving into regions",
    "forecasting": "predicting what comes next",
    "scheduling": "timetabling",
    "compression": "shrinking footprints",
    "alignment": "bringing into correspondence",
    "tracking": "following over time",
    "parsing": "syntactic analysis",
    "clustering": "grouping alike items",
    "denoising": "cleaning corrupted recordings",
    "routing": "pathfinding",
    "summarization": "condensing",
    "localization": "pinpointing",
    "calibration": "confidence adjustment",
    "matching": "pairing up",
    "imputation": "filling gaps",
    "aware": "mindful",
}


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
    """The title after its method's name, each word the table knows said otherwise: "Velkora
    Router: Adaptive gating for lumen-aware ranking" as "self-adjusting learned switches for
    lumen-mindful ordering" (the topic's coined word stays: every work of the topic shares it).
    None when fewer than three of its words have other words."""
    _, colon, rest = title.partition(":")
    rest = re.sub(r"\s*\(.*?\)", "", rest if colon else title).strip()  # "(extended version)"
    if sum(word in SYNONYMS for word in _title_words(rest)) < 3:
        return None
    return re.sub(r"[A-Za-z]+", lambda m: SYNONYMS.get(m[0].lower(), m[0].lower()), rest)


def _name_paraphrase(name: str, mechanism: tuple[str, ...]) -> str | None:
    """What a coined name stands for, without it: "Velkora Router" with gating and hashing as
    "a dispatcher built on learned switches and bucketed keys". None without a known kind or
    two known mechanisms."""
    words = name.split()
    kind, how = words[-1].lower() if len(words) > 1 else "", mechanism[:2]
    if kind not in SYNONYMS or len(how) < 2 or not all(m in SYNONYMS for m in how):
        return None
    return f"a {SYNONYMS[kind]} built on {SYNONYMS[how[0]]} and {SYNONYMS[how[1]]}"


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
        "name_paraphrase": _name_paraphrase(facts.method_name, facts.mechanism),
        "title_paraphrase": _title_paraphrase(facts.title),
    }[form]
    return None if said is None else f"One promising direction is related to {said}."


def inject(brief: str, leak: str) -> str:
    """The brief with ``leak`` after its first paragraph's first sentence."""
    head, sep, rest = brief.partition("\n\n")
    first = re.split(r"(?<=[.!?])\s+", head, maxsplit=1)
    head = f"{first[0]} {leak} {first[1]}" if len(first) > 1 else f"{head} {leak}"
    return head + sep + rest
