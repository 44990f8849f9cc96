"""The sandbox, a local emulator of the four APIs: `sandbox`."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from inspire_build.errors import InputError

if TYPE_CHECKING:
    pass
from inspire_build.cli.common import (
    out,
    sandbox_app,
)


@sandbox_app.command("world")
def sandbox_world(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the world into.")],
    seed: Annotated[int, typer.Option(help="Random seed: one seed, one world, byte for byte.")] = 0,
    papers: Annotated[int, typer.Option(help="Number of paper records.", min=10)] = 2000,
    window_density: Annotated[
        float,
        typer.Option(
            help="Works first public in the split windows (2023 on) are this many times as "
            "frequent, added to --papers: look-alikes of the targets.",
            min=1.0,
            max=50.0,
        ),
    ] = 1.0,
    hostile: Annotated[
        bool,
        typer.Option(
            "--hostile", help="Mark records with bad inputs (docs/sandbox.md).", metavar=""
        ),
    ] = False,
) -> None:
    """Generate a synthetic scholarly world and its ground truth."""
    from inspire_build.sandbox import world

    try:
        generated = world.generate(
            world.WorldConfig(
                seed=seed, papers=papers, window_density=window_density, hostile=hostile
            )
        )
    except ValueError as error:  # too small a world for the hostile targets
        raise InputError(str(error)) from error
    for path in world.write(generated, out_dir):
        out.print(f"wrote {path}")
    references = sum(len(r.references) for r in generated.records)
    out.print(f"{len(generated.records):,} records, {references:,} references (seed {seed})")


Rate = float | None  # a --llm-* rate, unset: the sandbox's default


def _rate(help_text: str) -> Any:
    """A --llm-* option: a rate from 0 to 1 (unset: sandbox/llm_truth.py's default)."""
    return typer.Option(help=help_text, min=0, max=1)


def _day(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError as error:
        raise InputError(f"--llm-knowledge-cutoff: not a date (YYYY-MM-DD): {error}") from None


def _model_config(options: dict[str, Any]) -> Any:
    """The emulated model's OpenAIConfig from `sandbox serve`'s options."""
    from inspire_build.sandbox.llm_truth import TruthRates
    from inspire_build.sandbox.openai_api import OpenAIConfig

    given = {name: options[f"llm_{name}"] for name in TruthRates.names()}  # --llm-RATE
    rates = TruthRates.from_mapping({k: v for k, v in given.items() if v is not None})
    cutoff = options["llm_knowledge_cutoff"]
    llm = OpenAIConfig(
        seed=options["seed"],
        latency_s=options["llm_latency"],
        rpm=options["llm_rpm"],
        tpm=options["llm_tpm"],
        truth=rates,
        agent_malformed_rate=options["llm_agent_malformed"],
        agent_refusal_rate=options["llm_agent_refusal"],
    )
    return llm if cutoff is None else dataclasses.replace(llm, knowledge_cutoff=_day(cutoff))


@sandbox_app.command("serve")
def sandbox_serve(
    world_dir: Annotated[Path, typer.Option("--world", help="A folder from `sandbox world`.")],
    port: Annotated[
        int, typer.Option(help="Port on 127.0.0.1 (0: any free one).", min=0, max=65535)
    ] = 8799,
    faults: Annotated[float, typer.Option(help="Share of requests that fail.", min=0, max=1)] = 0,
    time_scale: Annotated[
        float, typer.Option(help="Multiplies every rate limit, so tests run fast.", min=0.01)
    ] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of the fault and LLM dice.")] = 0,
    llm_latency: Annotated[
        float, typer.Option(help="Seconds from a chat request to its answer.", min=0)
    ] = 0.0,
    llm_rpm: Annotated[
        int | None,
        typer.Option(help="Chat requests per real minute (not time-scaled) before 429s.", min=1),
    ] = None,
    llm_tpm: Annotated[
        int | None,
        typer.Option(help="Prompt + max_tokens tokens per real minute before 429s.", min=1),
    ] = None,
    llm_leak_name: Annotated[Rate, _rate("Rate of briefs that name the method.")] = None,
    llm_leak_acronym: Annotated[
        Rate, _rate("Rate of briefs that use the method's acronym.")
    ] = None,
    llm_leak_title: Annotated[Rate, _rate("Rate of briefs that copy a title 4-gram.")] = None,
    llm_leak_mechanism: Annotated[
        Rate, _rate("Rate of briefs that give the mechanism words.")
    ] = None,
    llm_leak_numbers: Annotated[
        Rate, _rate("Rate of briefs that state the result numbers.")
    ] = None,
    llm_bad_length: Annotated[Rate, _rate("Rate of briefs under 120 or over 250 words.")] = None,
    llm_refusal: Annotated[Rate, _rate("Rate of answers refused.")] = None,
    llm_invalid_json: Annotated[Rate, _rate("Rate of answers that are not valid JSON.")] = None,
    llm_drop_grade: Annotated[Rate, _rate("Rate of grade sheets missing one antecedent.")] = None,
    llm_grade_shift: Annotated[Rate, _rate("Rate of grades one tier off (per antecedent).")] = None,
    llm_grade_overinclude: Annotated[
        Rate, _rate("Rate of tier-0 references graded 1 (per reading).")
    ] = None,
    llm_grade_slip: Annotated[
        Rate, _rate("Rate of references graded one tier off on every reading.")
    ] = None,
    llm_grade_demote: Annotated[
        Rate, _rate("Rate of antecedents graded 0 on every reading.")
    ] = None,
    llm_knowledge_cutoff: Annotated[
        str | None,
        typer.Option(help="The emulated model knows papers first public before this day."),
    ] = None,
    llm_agent_malformed: Annotated[
        float, _rate("Rate of an agent's turns that make a malformed tool call.")
    ] = 0.0,
    llm_agent_refusal: Annotated[float, _rate("Rate of an agent's turns refused.")] = 0.0,
) -> None:
    """Serve a world on 127.0.0.1 until interrupted; prints the variables to export.

    Its OpenAI-compatible API answers the pipeline's prompts from each prompt's text alone
    (never the world's truth); the --llm-* rates (0-1, defaults in sandbox/llm_truth.py) plant
    failures in those answers. A request with the agent's tools gets an agent's turn
    (sandbox/emulated_agent.py), --llm-agent-* rates planting its failures (default none).
    """
    options = dict(locals())  # the --llm-* options, by name
    from inspire_build import local_server
    from inspire_build.sandbox import server, world

    if not (world_dir / world.RECORDS_FILE).exists():
        raise InputError(f"{world_dir} holds no world; create one with `inspire sandbox world`")
    llm = _model_config(options)
    config = server.SandboxConfig(seed=seed, time_scale=time_scale, fault_rate=faults, openai=llm)
    sock = local_server.bind(port)  # a busy port is one error, before any export line
    bound = sock.getsockname()[1]  # --port 0 picks a free one: print the port it picked
    for line in server.shell_lines(f"http://127.0.0.1:{bound}", time_scale):
        out.print(_exported(line))
    server.serve(world_dir, config, sock)


@sandbox_app.command("env")
def sandbox_env(
    port: Annotated[int, typer.Option(help="The sandbox's port on 127.0.0.1.")] = 8799,
    time_scale: Annotated[float, typer.Option(help="The sandbox's time scale.", min=0.01)] = 1.0,
) -> None:
    """Print the INSPIRE_* variables that point the pipeline at a running sandbox, its model
    (the openai backend) included."""
    from inspire_build.sandbox import server

    for line in server.shell_lines(f"http://127.0.0.1:{port}", time_scale):
        print(_exported(line))


def _exported(line: str) -> str:
    """``NAME=value`` as a shell's ``export`` line, the value quoted where it needs it."""
    name, value = line.split("=", 1)
    return f"export {name}={shlex.quote(value)}"
