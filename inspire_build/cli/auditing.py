"""`inspire audit brief`: the build's checks on any text for one instance. (`inspire audit
[SPLITS]` runs the audit flow: it lives in cli/flow_commands.py; :class:`AuditCommand` hands a
first argument that names a subcommand here.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from inspire_build import user_files, warehouse
from inspire_build.cli.common import (
    JsonOption,
    SplitOption,
    VersionOption,
    WarehouseOption,
    _Context,
    check_split,
    out,
    warehouse_of,
)
from inspire_build.errors import InputError


def audit_brief(
    ctx: typer.Context,
    split: SplitOption,
    instance: Annotated[str, typer.Option("--instance", help="The instance ID.")],
    text: Annotated[
        Path, typer.Option("--text", help="A file holding the text to audit as its brief.")
    ],
    version: VersionOption = None,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """Run the build's five leakage checks on any text for an instance; exit 1 if one fails.

    The text is judged as the instance's brief: its target, redaction terms, result numbers and
    search window. The model is the one the version was built with where the warehouse records
    it, else this shell's."""
    from inspire_build import gold, splits
    from inspire_build.sources import make_client

    root: _Context = ctx.obj
    check_split(ctx, split)
    written = _text_of(text)
    with warehouse.open_warehouse(warehouse_of(ctx, warehouse_path)) as con:
        chosen = version or splits.latest_version(con, split)
        splits.check_version(con, chosen)
        settings, recorded = gold.judging_settings(con, root.settings, chosen)
        llm = gold.make_llm(settings, con)
        client = make_client(settings, con)
        findings = gold.audit_text(llm, client, con, settings, chosen, instance, written)
    whose = "the build's" if recorded else "this shell's"
    judged = {"backend": llm.backend, "model": llm.model, "settings": whose}
    if as_json:
        for finding in findings:
            print(json.dumps({**_shown(finding), "judged_by": judged}))
    else:
        out.print(f"{instance} of {chosen}, judged by {llm.backend} {llm.model} ({whose})")
        for finding in findings:
            verdict = "pass" if finding.passed else "FAIL"
            out.print(f"  {verdict}  {finding.check.value:<10} {finding.detail}")
    if not all(finding.passed for finding in findings):
        raise typer.Exit(1)


def _text_of(path: Path) -> str:
    """The text to audit: a regular UTF-8 file with no NUL byte (a device or a FIFO is refused
    before it is read), under the cap on an input file."""
    try:
        return user_files.read_text(path)
    except InputError as error:
        raise InputError(f"--text {error}") from None


def _shown(finding: Any) -> dict[str, object]:
    return {
        "check": finding.check.value,
        "passed": finding.passed,
        "level": finding.level.value,
        "detail": finding.detail,
    }


# `inspire audit SUBCOMMAND ...`: the subcommands `inspire audit` hands on.
SUBCOMMANDS = {"brief": audit_brief}


class AuditCommand(TyperCommand):
    """`inspire audit [SPLITS]`, whose first argument, when it names one of
    :data:`SUBCOMMANDS`, runs that subcommand with the rest instead: one name for the audit of
    a version and of a single text, without making `inspire audit SPLIT` a group."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        if args and args[0] in SUBCOMMANDS:
            single = typer.Typer(add_completion=False)
            single.command(args[0])(SUBCOMMANDS[args[0]])
            command = typer.main.get_command(single)
            return command.make_context(f"{info_name} {args[0]}", args[1:], parent, **extra)
        return super().make_context(info_name, args, parent, **extra)
