"""Reading runs, trajectories and qrels. Every problem is an ``InputError`` naming the file and,
where there is one, the line: nothing is scored from a file that is not exactly understood.

Reading is two steps. :func:`inspire_build.user_files.read_bytes` is the only I/O: it reads
regular files only (a FIFO or a device such as ``/dev/zero`` is refused before it is opened, so
it neither hangs nor fills the memory), in chunks, and stops at the size cap
(``INSPIRE_EVAL_MAX_INPUT_MB``). ``decode`` and the ``parse_*`` functions are pure: UTF-8 only
(a BOM is dropped), one record per line, a duplicate instance line is an error naming both
lines, a JSON object that names one key twice an error naming its line (``json`` would keep the
last value silently).

IDs are normalised on the way in: a known ID in any scheme becomes the warehouse's paper ID
through the crosswalk (so an agent may answer with a DOI, an arXiv ID, an OpenAlex or S2 ID);
otherwise it is kept in canonical ``scheme:value`` form, or as written if it is no ID at all.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from inspire_build.errors import InputError, InvalidIdError
from inspire_build.evaluation.funnel import Trajectory
from inspire_build.ids import PaperId, parse_any_id
from inspire_build.user_files import max_input_bytes, read_bytes

Normaliser = Callable[[str], str]
# Why a normalised paper ID cannot be scored as the user meant it (None: it can).
Check = Callable[[str], "str | None"]
Lines = Sequence[tuple[int, str]]  # (line number, text) of the non-blank lines

_TREC_RUN = "expected 'query Q0 doc rank score tag'"
_QRELS = "expected 'query 0 doc relevance' with relevance 0, 1, 2 or 3"
_WHOLE_NUMBER = re.compile(r"-?[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]{8,}")
# A decimal number as C's strtod reads all of it: no underscores, no hex; inf and nan pass, to be
# refused as not finite.
_DECIMAL = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?i:inf|infinity|nan)"
)


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


def instance_key(raw: str) -> str:
    """An instance (or query) ID as written, without the spaces around it; a hexadecimal one
    (the build's keyed IDs) in lower case, so ``0BC3...`` is the instance ``0bc3...``."""
    text = raw.strip()
    return text.lower() if _HEX.fullmatch(text) else text


def _paper(raw: str, normalise: Normaliser, check: Check | None, where: str) -> str:
    """``raw`` normalised; refused, naming ``where``, when ``check`` says it cannot be scored."""
    paper = normalise(raw)
    why = check(paper) if check is not None else None
    if why is not None:
        raise InputError(f"{where}: {_excerpt(raw)} {why}")
    return paper


# --- bytes and lines ---------------------------------------------------------------------------


def decode(data: bytes, source: str) -> list[tuple[int, str]]:
    """UTF-8 bytes (a leading BOM is dropped) -> the numbered non-blank lines.

    UTF-16/32, NUL bytes (binary data) and bytes that are not UTF-8 (Latin-1) are errors.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise InputError(f"{source}: UTF-16 or UTF-32 text; save it as UTF-8")
    lines = (
        (number, _decode_line(raw, f"{source}:{number}"))
        for number, raw in enumerate(data.removeprefix(codecs.BOM_UTF8).split(b"\n"), 1)
    )
    return [(number, text) for number, text in lines if text.strip()]


def _decode_line(raw: bytes, where: str) -> str:
    if b"\0" in raw:
        raise InputError(f"{where}: a NUL byte: binary or UTF-16 data, not UTF-8 text")
    try:
        return raw.decode("utf-8").removesuffix("\r")
    except UnicodeDecodeError as error:
        byte = raw[error.start]
        raise InputError(
            f"{where}: not UTF-8 (byte 0x{byte:02x} at column {error.start + 1}); "
            "save the file as UTF-8"
        ) from None


def _lines(path: Path, max_bytes: int | None) -> list[tuple[int, str]]:
    cap = max_input_bytes() if max_bytes is None else max_bytes
    return decode(read_bytes(path, cap), str(path))


def _excerpt(line: str, width: int = 60) -> str:
    return repr(line if len(line) <= width else line[:width] + "...")


# --- qrels -------------------------------------------------------------------------------------


def read_qrels(
    path: Path, normalise: Normaliser, max_bytes: int | None = None
) -> dict[str, dict[str, int]]:
    return parse_qrels(_lines(path, max_bytes), normalise, str(path))


def parse_qrels(lines: Lines, normalise: Normaliser, source: str) -> dict[str, dict[str, int]]:
    """TREC qrels ``query 0 doc relevance``, relevance 0-3. A document graded twice for a query
    (after normalisation) must have one grade; two grades are an error naming both lines. A
    query with no document above 0 is an error naming its first line: its recall and nDCG
    divide by nothing, and a mean that counted it as 0 would be silently wrong."""
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], int] = {}
    for number, line in lines:
        where = f"{source}:{number}"
        parts = line.split()
        if len(parts) != 4 or parts[3] not in ("0", "1", "2", "3"):
            raise InputError(f"{where}: {_QRELS}: {_excerpt(line)}")
        query, doc, grade = instance_key(parts[0]), normalise(parts[2]), int(parts[3])
        first = seen.setdefault((query, doc), number)
        if qrels.setdefault(query, {}).setdefault(doc, grade) != grade:
            raise InputError(
                f"{where}: query {query!r}, document {doc!r} graded {grade}, "
                f"but {qrels[query][doc]} on line {first}"
            )
    for query, grades in qrels.items():
        if not any(grades.values()):
            first = min(n for (q, _), n in seen.items() if q == query)
            raise InputError(
                f"{source}:{first}: query {query!r} grades no document above 0, so no "
                "metric is defined for it; drop its lines or grade its antecedents 1 to 3"
            )
    return qrels


# --- runs --------------------------------------------------------------------------------------


def read_run(
    path: Path, normalise: Normaliser, max_bytes: int | None = None, check: Check | None = None
) -> dict[str, list[str]]:
    return parse_run(_lines(path, max_bytes), normalise, str(path), check)


def parse_run(
    lines: Lines, normalise: Normaliser, source: str, check: Check | None = None
) -> dict[str, list[str]]:
    """JSONL ``{"instance_id", "ranking": [...]}`` or a TREC run ``q Q0 doc rank score tag``.

    The first line decides the format; a line of the other format is an error. JSONL keeps the
    list order and gives each instance one line; TREC sorts by score, and ties as trec_eval
    does: by document ID as written, the greater first. A paper ID that ``check`` refuses is an
    error naming its line.
    """
    if not lines:
        return {}
    jsonl, first = _is_json(lines[0][1]), lines[0][0]
    for number, line in lines:
        if _is_json(line) != jsonl:
            this, that = ("not a JSON object", "one") if jsonl else ("a JSON object", "TREC")
            raise InputError(
                f"{source}:{number}: {this}, but line {first} is {that}; "
                "a run is all JSONL or all TREC"
            )
    parse = _jsonl_run if jsonl else _trec_run
    return parse(lines, normalise, source, check)


def _is_json(line: str) -> bool:
    return line.lstrip().startswith("{")


def _keyed_list(
    line: str, number: int, source: str, kind: str, key: str, first: dict[str, int]
) -> tuple[str, list[Any], str, dict[str, Any]]:
    """A JSONL line's instance ID and its ``key`` list, the instance seen once; where; and the
    whole record."""
    where = f"{source}:{number}"
    record = _json_object(line, where, kind)
    instance = instance_key(_identifier(record.get("instance_id"), '"instance_id"', where, kind))
    items = record.get(key)
    if not isinstance(items, list):
        raise InputError(f'{where}: malformed {kind} line ("{key}" is not a list)')
    _once(instance, number, first, where)
    return instance, items, where, record


def _jsonl_run(
    lines: Lines, normalise: Normaliser, source: str, check: Check | None
) -> dict[str, list[str]]:
    run: dict[str, list[str]] = {}
    first: dict[str, int] = {}
    for number, line in lines:
        instance, ranking, where, _ = _keyed_list(line, number, source, "run", "ranking", first)
        run[instance] = [
            _paper(_identifier(d, "a ranking entry", where, "run"), normalise, check, where)
            for d in ranking
        ]
    return run


def _trec_run(
    lines: Lines, normalise: Normaliser, source: str, check: Check | None
) -> dict[str, list[str]]:
    """A run's lines, one tag: two runs pasted into one file would merge into one ranking."""
    run: dict[str, list[tuple[float, str, str]]] = {}
    first_tag = ""
    for number, line in lines:
        query, doc, score, tag = _trec_line(line, f"{source}:{number}")
        first_tag = first_tag or tag
        if tag != first_tag:
            raise InputError(
                f"{source}:{number}: run tag {tag!r}, but line {lines[0][0]} is {first_tag!r}: "
                "one run a file (two would be merged into one ranking)"
            )
        where = f"{source}:{number}"
        run.setdefault(instance_key(query), []).append(
            (score, doc, _paper(doc, normalise, check, where))
        )
    # trec_eval's order: score, then the document ID as written, both descending
    return {q: [d for _, _, d in sorted(e, reverse=True)] for q, e in run.items()}


def _trec_line(line: str, where: str) -> tuple[str, str, float, str]:
    parts = line.split()
    if len(parts) == 5:
        raise InputError(f"{where}: no run tag (the sixth column); {_TREC_RUN}")
    if len(parts) != 6:
        raise InputError(f"{where}: {len(parts)} column(s); {_TREC_RUN}: {_excerpt(line)}")
    query, q0, doc, rank, text, tag = parts
    if q0 != "Q0":
        raise InputError(f"{where}: the second column is {q0!r}, not 'Q0'; {_TREC_RUN}")
    if not _WHOLE_NUMBER.fullmatch(rank):
        raise InputError(f"{where}: the rank {rank!r} is not a whole number; {_TREC_RUN}")
    if not _DECIMAL.fullmatch(text):  # float() also reads 1_000, which trec_eval reads as 1
        raise InputError(f"{where}: the score {text!r} is not a number")
    score = float(text)
    if not math.isfinite(score):
        raise InputError(f"{where}: the score {text!r} is not a finite number")
    return query, doc, score, tag


# --- trajectories ------------------------------------------------------------------------------


def read_trajectories(
    path: Path, normalise: Normaliser, max_bytes: int | None = None, check: Check | None = None
) -> dict[str, Trajectory]:
    return parse_trajectories(_lines(path, max_bytes), normalise, str(path), check)


def parse_trajectories(
    lines: Lines, normalise: Normaliser, source: str, check: Check | None = None
) -> dict[str, Trajectory]:
    """JSONL ``{"instance_id", "steps": [{"tool", "query"?, "exposed": [...]}]}``, one line per
    instance; an exposed paper ID that ``check`` refuses is an error naming its line."""
    found: dict[str, Trajectory] = {}
    first: dict[str, int] = {}
    for number, line in lines:
        instance, steps, where, record = _keyed_list(
            line, number, source, "trajectory", "steps", first
        )
        found[instance] = Trajectory(
            tuple(
                tuple(_paper(d, normalise, check, where) for d in _exposed(s, n, where))
                for n, s in enumerate(steps, 1)
            ),
            _revealed(record, where),
        )
    return found


def _revealed(record: dict[str, Any], where: str) -> bool:
    """The line's ``scores_revealed`` (the environment writes it; absent: false)."""
    value = record.get("scores_revealed", False)
    if not isinstance(value, bool):
        raise InputError(
            f'{where}: malformed trajectory line ("scores_revealed" is not true or false)'
        )
    return value


def _exposed(step: Any, n: int, where: str) -> list[str]:
    exposed = step.get("exposed") if isinstance(step, dict) else None
    if not isinstance(exposed, list):
        raise InputError(f'{where}: malformed trajectory line (step {n}: "exposed" is not a list)')
    return [_identifier(d, f"step {n}: an exposed entry", where, "trajectory") for d in exposed]


# --- shared ------------------------------------------------------------------------------------


class _DuplicateKey(ValueError):
    """A JSON object names one key twice; ``json`` would keep the last value silently."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for key, value in pairs:
        if key in record:
            raise _DuplicateKey(json.dumps(key)[:60])
        record[key] = value
    return record


def _json_object(line: str, where: str, kind: str) -> dict[str, Any]:
    try:
        record = json.loads(line, object_pairs_hook=_unique_keys)
    except _DuplicateKey as error:
        raise InputError(
            f"{where}: malformed {kind} line (the key {error} appears twice)"
        ) from None
    except (ValueError, RecursionError) as error:
        raise InputError(f"{where}: malformed {kind} line (not JSON: {error})") from None
    if not isinstance(record, dict):
        raise InputError(f"{where}: malformed {kind} line (not a JSON object)")
    return record


def _identifier(value: Any, what: str, where: str, kind: str) -> str:
    """An ID as written: a non-blank string, or an integer."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    # a key left out and a JSON null both read as None here: say which it may be
    shown = (
        "missing or null" if value is None else f"{type(value).__name__} {json.dumps(value)[:60]}"
    )
    raise InputError(f"{where}: malformed {kind} line ({what} is {shown}, not an ID)")


def _once(instance: str, number: int, first: dict[str, int], where: str) -> None:
    """Each instance has one line: a second one is an error naming both."""
    earlier = first.setdefault(instance, number)
    if earlier != number:
        raise InputError(
            f"{where}: instance {instance!r} again (first on line {earlier}); "
            "give each instance one line"
        )
