"""Typed reads of raw API records, for the sources' pure parsers.

Real and hostile answers give fields the wrong type (a list for a title, a number for a date).
A parser reads each field through :class:`Fields`: a value of the wrong type is read as missing
and named, so the record still parses and the problem is kept (``Paper.problems``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from inspire_build import ids
from inspire_build.errors import InvalidIdError


def dicts(value: object) -> list[dict[str, Any]]:
    """The objects of a list; anything else is no list."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class Fields:
    """Typed reads of one raw record: a value of the wrong type is None, and noted."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw, self.problems = raw, list[str]()

    def get(self, name: str, *types: type) -> Any:
        value = self.raw.get(name)
        # bool is an int in Python, but True is no year or count
        fits = isinstance(value, types) and (bool in types or not isinstance(value, bool))
        if value is None or fits:
            return value
        wanted = " or ".join(t.__name__ for t in types)
        self.problems.append(f"{name}: {type(value).__name__}, not {wanted}")
        return None

    def date(self, name: str) -> dt.date | None:
        value = self.get(name, str)
        try:
            return dt.date.fromisoformat(value) if value else None
        except ValueError:
            self.problems.append(f"{name}: {value[:40]!r} is not a date")
            return None

    def openalex_ids(self, name: str) -> tuple[str, ...] | None:
        listed = self.get(name, list)
        if listed is None:
            return None
        good = []
        for value in listed:
            try:
                good.append("openalex:" + ids.normalize_openalex(str(value)))
            except InvalidIdError:
                self.problems.append(f"{name}: {str(value)[:40]!r} is not an OpenAlex ID")
        return tuple(good)
