"""`inspire cost`: what builds' LLM calls cost, per step or per target, from the cost ledger."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from inspire_build import warehouse
from inspire_build.cli.common import (
    JsonOption,
    WarehouseOption,
    _print_rows,
    app,
    check_split,
    out,
    warehouse_of,
)
from inspire_build.llm_budget import usd
from inspire_build.tables import llm_ledger


@app.command("cost")
def cost_command(
    ctx: typer.Context,
    version: Annotated[
        str | None,
        typer.Option(
            "--version", help="A version ID: the builds that wrote it (default: every build)."
        ),
    ] = None,
    split: Annotated[
        str | None, typer.Option("--split", help="Only the builds of this split.")
    ] = None,
    per_target: Annotated[
        bool,
        typer.Option("--targets", help="One row per target instead of per step.", metavar=""),
    ] = False,
    as_json: JsonOption = False,
    warehouse_path: WarehouseOption = None,
) -> None:
    """LLM calls, tokens and cost per step (or per target) of a version's builds, or of every
    build: each call counted once, `paid_usd` what no earlier build had paid for; names the
    models with no price."""
    check_split(ctx, split, version, warehouse_path)
    per = "target" if per_target else "step"
    con = warehouse.connect(warehouse_of(ctx, warehouse_path), read_only=True)
    try:
        rows = llm_ledger.costs(con, per, version, split)
        summed = llm_ledger.total(con, version, split)
        loose = llm_ledger.unattributed(con)
    finally:
        con.close()
    title = f"LLM cost per {per} of " + (f"version {version}" if version else "every build")
    if _print_rows(rows, as_json, title, (per,)):
        print(json.dumps({per: "total", **summed}))
        return
    for line in _total_lines(summed, version, split):
        out.print(line)
    if loose[0]:
        out.print(
            f"not in the ledger yet: {loose[0]:,} call(s) in the call log, cost "
            f"{usd(loose[1])}, that no stored target used (a build stopped before storing "
            "them; its resume records them)"
        )


def _total_lines(summed: dict[str, Any], version: str | None, split: str | None) -> list[str]:
    """The totals under the table, and the models whose cost is unknown."""
    if not summed["calls"]:
        chosen = f"the {split} builds" if split else "any build"
        chosen = f"version {version}" if version else chosen
        return [
            f"no LLM call of {chosen} is in the cost ledger (builds record their calls from "
            "migration 0023 on, through `inspire build` or the build-split flow)"
        ]
    lines = [
        f"{summed['calls']:,} call(s), {summed['asked']:,} asked of the model and the rest "
        f"answered from the call log; {summed['tokens_in']:,} tokens in, "
        f"{summed['tokens_out']:,} out; cost {usd(summed['cost_usd'])}, of which "
        f"{usd(summed['paid_usd'])} paid for in these builds"
    ]
    unpriced = summed["unpriced_models"]
    if unpriced:
        named = ", ".join(f"{model} ({calls} call(s))" for model, calls in unpriced.items())
        lines.append(
            f"cost unknown, left out of the sums: {summed['unpriced_calls']:,} call(s) of a "
            f"model with no price: {named}; give it a price in INSPIRE_LLM_PRICES"
        )
    return lines
