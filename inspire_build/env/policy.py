"""A toy: a learned keyphrase scorer for ``multi-query``, logistic regression over brief keyphrase
features, trained on which keyphrases hindsight demonstrations chose as queries.

It shows no held-out gain (:data:`TOY` holds the measured figures, from
``bench/hindsight_signal.py``): it can only re-choose and re-weight at most five of the brief's
own keyphrases, which the base agent's sentence queries already cover. It is kept as a worked
example of training on the demonstrations, not as a result; the demonstrations are meant for
fine-tuning a model on the full transcripts (``demonstrations.jsonl``).

Candidates are the baseline's own (:func:`~inspire_build.env.agents.candidate_phrases`); only
their choice and weights change. Features of a candidate phrase in a brief:

- ``position``: its rank among the brief's candidates, over their number (0 = first);
- ``count``: log(1 + its whole-word occurrences in the brief);
- ``length``: its number of words, over 3;
- ``idf``: mean over its words of log((N + 1) / (df + 1)), df and N over the *training* briefs;
- ``suffix``: share of its words with a noun-like English suffix (-tion, -ment, -ity, ...), a
  cheap stand-in for a POS pattern;
- ``section``: one-hot of the brief section it first appears in (problem, context,
  constraints, goal, none), read from one-word heading sentences such as ``Goal.``.

The label of a candidate is 1 when a kept demonstration searched it, else 0. Training is plain
L2-regularised gradient descent on standardised features (numpy, deterministic).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from inspire_build import user_files
from inspire_build.env.agents import Keyphrase, candidate_phrases, sentences
from inspire_build.errors import InputError

SECTIONS = ("problem", "context", "constraints", "goal")
SUFFIXES = ("tion", "sion", "ment", "ness", "ity", "ance", "ence", "ing", "ism", "ics")
FEATURES = ("position", "count", "length", "idf", "suffix", *(f"section_{s}" for s in SECTIONS))
LIMIT = 5  # keyphrases per brief, as the baseline
# What the export's manifest, the bench and `--policy` say of it.
TOY: dict[str, object] = {
    "file": "policy.json",
    "status": "toy",
    "held_out_gain": False,
    "measured": (
        "bench/hindsight_signal.py (2,000 papers, 80 targets per split, budget 20), eval "
        "nDCG@10 of multi-query-learned vs multi-query: seed 1 0.085 vs 0.083 (paired +0.002 "
        "[-0.002, +0.007]), seed 2 0.092 vs 0.092 (-0.000 [-0.007, +0.006]); issue 40: 0.086 "
        "vs 0.088 and 0.082 vs 0.082"
    ),
}
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def document_frequencies(briefs: Sequence[str]) -> dict[str, int]:
    df: dict[str, int] = {}
    for brief in briefs:
        for word in set(_words(brief)):
            df[word] = df.get(word, 0) + 1
    return df


def _sections(brief: str) -> list[tuple[str, str]]:
    """(section, sentence) for every sentence; a one-word heading sentence starts a section."""
    current, found = "none", []
    for sentence in sentences(brief):
        heading = _words(sentence)
        if len(heading) == 1 and heading[0] in SECTIONS:
            current = heading[0]
            continue
        found.append((current, sentence.lower()))
    return found


def features(brief: str, df: dict[str, int], n_briefs: int) -> tuple[list[str], np.ndarray]:
    """The brief's candidate phrases and their feature rows (columns: :data:`FEATURES`)."""
    candidates = candidate_phrases(brief)
    lowered = " ".join(_words(brief))
    parts = _sections(brief)
    rows = []
    for position, phrase in enumerate(candidates):
        tokens = phrase.split()
        count = len(re.findall(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", lowered))
        idf = sum(math.log((n_briefs + 1) / (df.get(w, 0) + 1)) for w in _words(phrase))
        section = next((s for s, text in parts if phrase in text), "none")
        rows.append(
            [
                position / max(1, len(candidates) - 1),
                math.log1p(count),
                len(tokens) / 3,
                idf / max(1, len(_words(phrase))),
                sum(t.endswith(SUFFIXES) for t in tokens) / len(tokens),
                *(1.0 if section == s else 0.0 for s in SECTIONS),
            ]
        )
    return candidates, np.asarray(rows, dtype=float).reshape(len(candidates), len(FEATURES))


@dataclasses.dataclass(frozen=True)
class Policy:
    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    df: dict[str, int]
    n_briefs: int

    def probabilities(self, brief: str) -> tuple[list[str], np.ndarray]:
        candidates, x = features(brief, self.df, self.n_briefs)
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return candidates, 1 / (1 + np.exp(-(z @ np.asarray(self.weights) + self.bias)))

    def __call__(self, brief: str) -> list[Keyphrase]:
        """The :data:`LIMIT` most probable candidates, weighted by probability over the top
        one's (ties keep the brief's order)."""
        candidates, p = self.probabilities(brief)
        order = sorted(range(len(candidates)), key=lambda i: (-p[i], i))[:LIMIT]
        top = float(p[order[0]]) if order else 1.0
        return [Keyphrase(candidates[i], float(p[i]) / top) for i in order]

    def to_json(self) -> dict[str, object]:
        return {"features": list(FEATURES), **dataclasses.asdict(self)}

    @classmethod
    def load(cls, path: Path) -> Policy:
        try:
            data = json.loads(user_files.read_text(path, _POLICY_BYTES, "a policy is small"))
            if data["features"] != list(FEATURES):
                raise ValueError(f"features {data['features']} are not {list(FEATURES)}")
            scale = _numbers(data, "scale", len(FEATURES))
            if min(scale) <= 0:
                raise ValueError("scale holds a value that is not above 0")
            df = {str(k): v for k, v in data["df"].items()}
            n_briefs = data["n_briefs"]
            if not all(_whole(v) and v >= 0 for v in [*df.values(), n_briefs]) or n_briefs < 1:
                raise ValueError("df and n_briefs are counts (n_briefs at least 1)")
            return cls(
                _numbers(data, "weights", len(FEATURES)),
                _numbers(data, "bias", None)[0],
                _numbers(data, "mean", len(FEATURES)),
                scale,
                df,
                n_briefs,
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise InputError(f"{path}: not a keyphrase policy ({error})") from error


_POLICY_BYTES = 64 << 20


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _numbers(data: dict[str, Any], name: str, count: int | None) -> tuple[float, ...]:
    """``data[name]``: ``count`` finite numbers (None: one number, not a list). NaN or a
    string would make every probability meaningless, and a run of them silently wrong."""
    value = data[name]
    values = [value] if count is None else value
    if not isinstance(values, list) or (count is not None and len(values) != count):
        raise ValueError(f"{name} is not a list of {count} numbers")
    real = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if not real or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{name} holds a value that is not a finite number")
    return tuple(float(v) for v in values)


def train(
    examples: Sequence[tuple[str, Sequence[str]]],
    l2: float = 1e-2,
    rate: float = 0.5,
    epochs: int = 500,
) -> Policy:
    """Fit on (brief, queries the demonstration searched) pairs: a candidate is positive when
    it is one of the queries."""
    if not examples:
        raise InputError("no demonstrations to train the keyphrase policy on")
    df = document_frequencies([brief for brief, _ in examples])
    n = len(examples)
    blocks, labels = [], []
    for brief, queries in examples:
        candidates, x = features(brief, df, n)
        chosen = set(queries)
        blocks.append(x)
        labels += [1.0 if c in chosen else 0.0 for c in candidates]
    x = np.vstack(blocks)
    y = np.asarray(labels)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(epochs):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        w -= rate * (z.T @ (p - y) / len(y) + l2 * w)
        b -= rate * float((p - y).mean())
    return Policy(
        tuple(float(v) for v in w),
        b,
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        dict(sorted(df.items())),
        n,
    )
