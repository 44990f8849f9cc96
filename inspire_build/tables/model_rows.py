"""Domain models as table rows, and rows read back as models: the one conversion the table
modules use for ``targets``, ``briefs``, ``grades``, ``split_versions`` and ``instances``.

A row is the model's dump: its fields (a computed one such as ``Brief.word_count`` included,
one marked ``exclude``, never stored, such as ``SplitVersion.notes``, left out). Reading, every
column must be a field: a reader selects ``*`` and the model forbids unknown fields, so a
column the model lacks fails loudly rather than being dropped (tests/unit/tables/test_model_rows.py
checks the same of a freshly migrated warehouse).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from inspire_build.models import Brief, Grade, Instance, Record, SplitVersion, Target

R = TypeVar("R", bound=Record)

# Each table written from a domain model, and its model: every column is a field of it.
TABLE_MODELS: dict[str, type[Record]] = {
    "targets": Target,
    "briefs": Brief,
    "grades": Grade,
    "split_versions": SplitVersion,
    "instances": Instance,
}


def stored_fields(model: type[Record]) -> list[str]:
    """The fields of ``model`` its table holds a column for: the computed ones included, those
    never stored (``exclude``) left out."""
    fields = [name for name, field in model.model_fields.items() if not field.exclude]
    return [*fields, *model.model_computed_fields]


def row(record: Record) -> dict[str, Any]:
    """The row ``record`` is written as."""
    return record.model_dump()


def rows(records: Iterable[Record]) -> list[dict[str, Any]]:
    return [row(record) for record in records]


def read(
    model: type[R], found: Sequence[Mapping[str, Any]], json_columns: Sequence[str] = ()
) -> list[R]:
    """Rows as ``model``s: ``json_columns`` (read back as text) decoded, and a computed field
    (stored for queries, derived again by the model) left to the model."""
    computed = set(model.model_computed_fields)
    return [
        model.model_validate(
            {
                name: json.loads(value)
                if name in json_columns and isinstance(value, str)
                else value
                for name, value in one.items()
                if name not in computed
            }
        )
        for one in found
    ]
