"""Render ``docs/reference.md`` from the code: every setting, every warehouse table and view with
its columns, and every ``inspire`` command with its options.

``make docs`` (``python -m inspire_build.reference``) rewrites the file; a test fails when the
committed file differs from what the code renders, so the reference cannot drift.

- Settings come from :class:`~inspire_build.config.Settings` (its fields, types, constraints and
  defaults) and from the ``#`` comments of ``config.py``, read with ``tokenize``: a comment block
  that follows a blank line opens a section (its first sentence the heading, the rest the
  section's note); one directly under another field describes the field below it; a comment at
  the end of a field's line describes that field. A ``Field(description=...)`` is used too.
- Tables and views come from a fresh in-memory warehouse with every migration applied: their
  comments and their columns' (``duckdb_tables()``, ``duckdb_views()``, ``duckdb_columns()``).
- Commands come from the typer app, walked recursively: the first paragraph of each command's
  help, and each parameter as ``inspire ... --help`` shows it.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import io
import json
import os
import re
import tokenize
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from inspire_build import config, errors, warehouse
from inspire_build.config import DEFAULT_SPLITS, PROJECT_ROOT, Settings, SplitConfig
from inspire_build.errors import InspireError
from inspire_build.tables import catalog

REFERENCE = PROJECT_ROOT / "docs" / "reference.md"
ENV_PREFIX = "INSPIRE_"
_PRAGMA = re.compile(r"^(noqa|type:|fmt:|pragma)")
# A section comment's heading: its text up to the first "." or ":" that ends a word.
_HEADING = re.compile(r"^(?P<heading>.*?)[.:](?:\s+(?P<note>.*))?$")


# --- settings ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FieldNote:
    """What ``config.py``'s comments say of one field."""

    section: str | None  # the heading of the section this field opens, if it opens one
    note: str  # that section's note (its comment after the heading)
    text: str  # the field's own description


def field_notes(source: str, class_name: str) -> dict[str, FieldNote]:
    """Field name -> its comments, for each annotated field of ``class_name`` in ``source``."""
    lines = source.splitlines()
    comments: dict[int, tuple[str, bool]] = {}  # line -> (text, the line holds only it)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            text = token.string.lstrip("#").strip()
            comments[row] = (text, not lines[row - 1][:col].strip())
    cls = next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and node.name == class_name
    )
    notes: dict[str, FieldNote] = {}
    for statement in cls.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        end = statement.end_lineno or statement.lineno
        trailing = [
            comments[row][0]
            for row in range(statement.lineno, end + 1)
            if row in comments and not comments[row][1] and not _PRAGMA.match(comments[row][0])
        ]
        block: list[str] = []
        row = statement.lineno - 1
        while row in comments and comments[row][1]:
            block.insert(0, comments[row][0])
            row -= 1
        above = " ".join(block)
        opens = bool(block) and (row == cls.lineno or not lines[row - 1].strip())
        if opens:
            heading, note = _split_heading(above)
            notes[statement.target.id] = FieldNote(heading, note, " ".join(trailing))
        else:
            notes[statement.target.id] = FieldNote(None, "", " ".join([above, *trailing]).strip())
    return notes


def _split_heading(text: str) -> tuple[str, str]:
    found = _HEADING.match(text)
    if found is None:
        return text, ""
    note = (found.group("note") or "").strip()
    return found.group("heading").strip(), note[:1].upper() + note[1:]


def _render_settings() -> Iterator[str]:
    source = Path(config.__file__).read_text(encoding="utf-8")
    notes = field_notes(source, "Settings")
    yield "## Settings"
    yield ""
    yield (
        "Every setting is read once, from the environment, by `inspire_build/config.py`: field "
        f"`x` from `{ENV_PREFIX}X`. A value that is not plain text (a list, an object) is JSON. "
        "Unset means the default; a secret is never printed, logged or stored."
    )
    sections: list[tuple[str, str, list[str]]] = [("General", "", [])]
    for name in Settings.model_fields:
        found = notes.get(name, FieldNote(None, "", ""))
        if found.section is not None:
            sections.append((found.section, found.note, []))
        sections[-1][2].append(name)
    own = {name: found.text for name, found in notes.items()}
    for heading, section_note, names in sections:
        if not names:
            continue
        yield ""
        yield f"### {heading}"
        yield ""
        if section_note and len(names) > 1:
            yield section_note
            yield ""
        elif section_note:  # a section of one setting: its note is the setting's
            own[names[0]] = " ".join(p for p in (section_note, own.get(names[0], "")) if p)
        yield "| Variable | Type | Default | Description |"
        yield "|---|---|---|---|"
        for name in names:
            field = Settings.model_fields[name]
            yield _row(
                f"`{_variable(name, field)}`",
                _type_with_limits(field),
                _setting_default(name, field),
                _description(field, own.get(name, "")) or _mentioned(name, own),
            )
    yield from _render_split_settings(source)


def _render_split_settings(source: str) -> Iterator[str]:
    notes = field_notes(source, "SplitConfig")
    yield ""
    yield "### A split's settings"
    yield ""
    yield (
        f"`{ENV_PREFIX}SPLITS` is a JSON object of split name -> settings, or one value at a "
        f"time: `{ENV_PREFIX}SPLITS__<SPLIT>__<FIELD>` (e.g. `{ENV_PREFIX}SPLITS__EVAL__LIMIT=50`)."
        " What is given is merged over the default splits; a new name adds a split."
    )
    yield ""
    yield "| Field | Type | Default | Description |"
    yield "|---|---|---|---|"
    for name, field in SplitConfig.model_fields.items():
        yield _row(
            f"`{name}`",
            _type_with_limits(field),
            "required"
            if field.is_required()
            else _value(field.get_default(call_default_factory=True)),
            _description(field, notes.get(name, FieldNote(None, "", "")).text) or "—",
        )
    yield ""
    yield "The default splits:"
    yield ""
    yield "| Split | start | end |"
    yield "|---|---|---|"
    for split, values in DEFAULT_SPLITS.items():
        yield _row(f"`{split}`", str(values["start"]), str(values["end"]))


def _variable(name: str, field: FieldInfo) -> str:
    alias = field.validation_alias if isinstance(field.validation_alias, str) else field.alias
    return alias.upper() if alias else f"{ENV_PREFIX}{name.upper()}"


def _description(field: FieldInfo, own: str) -> str:
    text = " ".join(p for p in (field.description or "", own) if p)
    return text[:1].upper() + text[1:]  # a trailing comment is a fragment: "the DuckDB file"


def _mentioned(name: str, described: Mapping[str, str]) -> str:
    """For a setting with no comment of its own: the first setting whose comment names it (by
    its variable, or by a field name of two words or more: `warehouse` is also a word)."""
    names = [f"{ENV_PREFIX}{name.upper()}", *([name] if "_" in name else [])]
    word = re.compile("|".join(rf"\b{re.escape(n)}\b" for n in names))
    for other, text in described.items():
        if other != name and word.search(text):
            return f"See `{_variable(other, Settings.model_fields[other])}`."
    return "—"


def _setting_default(name: str, field: FieldInfo) -> str:
    if name == "splits":
        return ", ".join(f"`{s}`" for s in DEFAULT_SPLITS) + " (below)"
    return _value(field.get_default(call_default_factory=True))


def _value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str | Path | dt.date | int | float):
        return f"`{value}`"
    return f"`{json.dumps(value, sort_keys=True, default=str)}`"


_NAMES: Mapping[Any, str] = {
    str: "text",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
    SecretStr: "secret",
    dt.date: "date",
}


def type_name(annotation: Any) -> str:
    """A setting's type in words: ``int | None`` -> ``integer``, ``Literal['a', 'b']`` ->
    ``a or b``; None is left to the default's "unset"."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:  # a constrained number (a price): its limits in words
        metadata = [inner for item in args[1:] for inner in getattr(item, "metadata", [item])]
        return " ".join([type_name(args[0]), *_limits(metadata)])
    if origin is Literal:
        return " or ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in args if a is not type(None))
    if origin is dict:
        return f"JSON object: {type_name(args[0])} -> {type_name(args[1])}"
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"JSON list of {type_name(args[0])}"
        return "[" + ", ".join(type_name(a) for a in args) + "]"
    if annotation in _NAMES:
        return _NAMES[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "split settings (below)" if annotation is SplitConfig else annotation.__name__
    return getattr(annotation, "__name__", str(annotation))


def _type_with_limits(field: FieldInfo) -> str:
    return ", ".join([type_name(field.annotation), *_limits(field.metadata)])


def _limits(metadata: Sequence[Any]) -> list[str]:
    """A field's bounds in words: ``>= 0``, ``<= 2``."""
    return [
        f"{sign} {getattr(item, attribute)}"
        for item in metadata
        for attribute, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))
        if getattr(item, attribute, None) is not None
    ]


# --- the warehouse -----------------------------------------------------------------------------


def _render_warehouse() -> Iterator[str]:
    con = warehouse.connect(":memory:")
    try:
        warehouse.migrate(con)
        relations = catalog.relations(con)
    finally:
        con.close()
    yield "## Warehouse tables and views"
    yield ""
    yield (
        "The warehouse is one DuckDB file (`INSPIRE_WAREHOUSE`), its schema made by "
        "`inspire_build/migrations/` (`schemas/warehouse.sql` holds the DDL). Every table, view "
        "and column carries its comment in DuckDB's catalog, so SQL reads this page too: the "
        "`comment` column of `duckdb_tables()`, `duckdb_views()` and `duckdb_columns()`. Two "
        "schemas besides `main` are DuckDB's own: `fts_main_papers` and `fts_main_corpus`, the "
        "full-text indexes its fts extension makes (again at each build and `inspire corpus "
        "build`), with its `match_bm25` macros; they carry no comments and are no contract."
    )
    yield ""
    yield (
        "A comment that starts with **Private** marks a table or view that holds targets' "
        "identities, gold, or the secrets of the information boundary: never publish it. What "
        "`inspire export` publishes is `instances.instance_id`, `instances.brief` and "
        "`instances.cutoff_date`. The target's ID is `target_id` in every table and view but "
        "`targets`, which calls it `paper_id`; `instance_targets` joins each instance to its "
        "target and split."
    )
    yield ""
    yield "| Name | Kind | What a row is |"
    yield "|---|---|---|"
    for relation in relations:
        yield _row(f"`{relation.name}`", relation.kind, _first_sentence(relation.comment or ""))
    for relation in relations:
        yield ""
        yield f"### `{relation.name}` ({relation.kind})"
        yield ""
        yield relation.comment or "—"
        yield ""
        yield "| Column | Type | Comment |"
        yield "|---|---|---|"
        for column in relation.columns:
            yield _row(f"`{column.name}`", f"`{column.type}`", column.comment or "—")


def _first_sentence(text: str) -> str:
    """The comment up to its first sentence's end (a "." followed by a space)."""
    head, found, _ = text.partition(". ")
    return head + "." if found else text


# --- the CLI -----------------------------------------------------------------------------------


def _render_commands() -> Iterator[str]:
    import typer.main

    from inspire_build.cli import app

    root = typer.main.get_command(app)
    yield "## Commands"
    yield ""
    yield "`inspire` (also `python -m inspire_build`). Every command takes `--help`."
    yield ""
    yield (
        "A command exits 0 when it succeeds. An error ends it with one line on stderr and the "
        "exit code of its kind:"
    )
    yield ""
    yield "| Exit code | Error | When |"
    yield "|---|---|---|"
    for code, name, doc in _exit_codes():
        yield _row(str(code), f"`{name}`", doc)
    for path, command, ctx in _walk(root, "inspire", None):
        yield ""
        yield f"### `{path}`"
        yield ""
        yield _summary(command.help or "") or "—"
        records = [r for r in (p.get_help_record(ctx) for p in command.params) if r is not None]
        if records:
            yield ""
            yield "| Option | Help |"
            yield "|---|---|"
            for name, help_text in records:
                yield _row(f"`{name}`", help_text or "—")
        children = getattr(command, "commands", None)
        if children:
            yield ""
            yield "Commands: " + ", ".join(f"`{path} {name}`" for name in sorted(children)) + "."


def _exit_codes() -> list[tuple[int, str, str]]:
    """Each error class of ``errors.py`` that sets its own exit code (its subclasses share
    it), by code. Only that module's: which others are imported would change the page."""
    found = []
    for error in vars(errors).values():
        if (
            isinstance(error, type)
            and issubclass(error, InspireError)
            and error.__module__ == errors.__name__
            and "exit_code" in vars(error)
        ):
            found.append((error.exit_code, error.__name__, _summary(error.__doc__ or "")))
    return sorted(found)


def _walk(command: Any, path: str, parent: Any) -> Iterator[tuple[str, Any, Any]]:
    """Each command under ``command`` (itself first), depth first, its subcommands by name,
    with its path and a context to render its parameters' help in."""
    ctx = command.context_class(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
    yield path, command, ctx
    for name, child in sorted(_subcommands(command).items()):
        yield from _walk(child, f"{path} {name}", ctx)


def _subcommands(command: Any) -> dict[str, Any]:
    import typer
    import typer.main

    from inspire_build.cli.auditing import SUBCOMMANDS, AuditCommand

    if isinstance(command, AuditCommand):  # `inspire audit brief`, handed on by its first word
        found = {}
        for name, function in SUBCOMMANDS.items():
            single = typer.Typer(add_completion=False)
            single.command(name)(function)
            found[name] = typer.main.get_command(single)
        return found
    return dict(getattr(command, "commands", None) or {})


def _summary(help_text: str) -> str:
    """A command's help up to its first blank line, on one line (click's ``\\f`` ends it)."""
    first = help_text.split("\f", 1)[0].strip().split("\n\n", 1)[0]
    return " ".join(first.split())


# --- the page ----------------------------------------------------------------------------------


def _row(*cells: str) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _cell(text: str) -> str:
    """Table-cell text: one line, its pipes escaped (GitHub needs that inside code too)."""
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    """The whole of docs/reference.md."""
    parts = [
        "<!-- Generated by `make docs` (python -m inspire_build.reference) from the code. Do not "
        "edit by hand: a test fails when this file is stale. -->",
        "",
        "# Reference",
        "",
        "The settings, the warehouse's tables and views, and the `inspire` commands, as the code "
        "states them.",
        "",
        *_render_settings(),
        "",
        *_render_warehouse(),
        "",
        *_render_commands(),
    ]
    return "\n".join(parts) + "\n"


def write(path: Path = REFERENCE) -> Path:
    """Write :func:`render` to ``path`` atomically (``.tmp`` then ``os.replace``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(render(), encoding="utf-8")
    os.replace(tmp, path)
    return path


if __name__ == "__main__":
    print(write().relative_to(PROJECT_ROOT))
