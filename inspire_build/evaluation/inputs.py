"""Reading runs, trajectories and qrels. A malformed line is an error naming its line number.

IDs are normalised on the way in: a known ID in any scheme becomes the warehouse's paper ID
through the crosswalk (so an agent may answer with a DOI, an arXiv ID, an OpenAlex or S2 ID);
otherwise it is kept in canonical ``scheme:value`` form, or as written if it is no ID at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from inspire_build.errors import InputError, InvalidIdError
from inspire_build.evaluation.funnel import Trajectory
from inspire_build.ids import PaperId, parse_any_id

Normaliser = Callable[[str], str]


def normaliser(crosswalk: Mapping[PaperId, str] | None = None) -> Normaliser:
    def normalise(raw: str) -> str:
        try:
            typed = parse_any_id(raw)
        except InvalidIdError:
            return raw.strip()
        if crosswalk is not None and typed in crosswalk:
            return crosswalk[typed]
        return str(typed)

    return normalise


def _lines(path: Path) -> list[tuple[int, str]]:
    if not path.exists():
        raise InputError(f"no such file: {path}")
    return [
        (n, line)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.strip()
    ]


def read_qrels(path: Path, normalise: Normaliser) -> dict[str, dict[str, int]]:
    """TREC qrels: ``query 0 doc relevance`` with relevance 0-3."""
    qrels: dict[str, dict[str, int]] = {}
    for number, line in _lines(path):
        parts = line.split()
        if len(parts) != 4 or not parts[3].lstrip("-").isdigit() or not 0 <= int(parts[3]) <= 3:
            raise InputError(f"{path}:{number}: expected 'query 0 doc relevance(0-3)': {line!r}")
        qrels.setdefault(parts[0], {})[normalise(parts[2])] = int(parts[3])
    return qrels


def read_run(path: Path, normalise: Normaliser) -> dict[str, list[str]]:
    """JSONL ``{"instance_id", "ranking": [...]}`` or a TREC run ``q Q0 doc rank score tag``."""
    run: dict[str, list[tuple[float, int, str]]] = {}
    for number, line in _lines(path):
        if line.lstrip().startswith("{"):
            try:
                record = json.loads(line)
                instance, ranking = str(record["instance_id"]), record["ranking"]
                if not isinstance(ranking, list):
                    raise TypeError("ranking is not a list")
            except (ValueError, KeyError, TypeError) as error:
                raise InputError(f"{path}:{number}: malformed run line ({error})") from error
            entries = run.setdefault(instance, [])
            entries += [
                (-float(i), len(entries) + i, normalise(str(d))) for i, d in enumerate(ranking)
            ]
            continue
        parts = line.split()
        try:
            score = float(parts[4])
        except (IndexError, ValueError):
            raise InputError(f"{path}:{number}: expected 'query Q0 doc rank score tag'") from None
        entries = run.setdefault(parts[0], [])
        entries.append((score, len(entries), normalise(parts[2])))
    # TREC: higher score first; ties keep file order. JSONL: list order.
    return {q: [d for _, _, d in sorted(e, key=lambda x: (-x[0], x[1]))] for q, e in run.items()}


def read_trajectories(path: Path, normalise: Normaliser) -> dict[str, Trajectory]:
    """JSONL ``{"instance_id", "steps": [{"tool", "query"?, "exposed": [...]}]}``."""
    found: dict[str, Trajectory] = {}
    for number, line in _lines(path):
        try:
            record = json.loads(line)
            steps = tuple(
                tuple(normalise(str(d)) for d in step["exposed"]) for step in record["steps"]
            )
            found[str(record["instance_id"])] = Trajectory(steps)
        except (ValueError, KeyError, TypeError) as error:
            raise InputError(f"{path}:{number}: malformed trajectory line ({error})") from error
    return found
