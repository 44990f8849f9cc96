"""`inspire audit brief`: the build's five checks on any text for one instance of a version
built from a sandbox world (rules backend). Its accepted brief passes; each leak form fails the
check that should catch it; bad input exits 2."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from typer.testing import CliRunner

from inspire_build import audit, gold, pipeline, warehouse
from inspire_build.briefs import coined_names, title_ngrams
from inspire_build.cli import app
from inspire_build.errors import InputError
from inspire_build.sandbox import server, world
from inspire_build.sources import make_client


class Built(NamedTuple):
    path: Path
    version: str
    instance: str
    brief: str
    inputs: gold.Inputs


@pytest.fixture(scope="module")
def generated() -> world.World:
    """The module's world, generated once rather than again for each test's sandbox."""
    return world.generate(world.WorldConfig(seed=11, papers=600))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, generated: world.World) -> Iterator[Built]:
    path = tmp_path_factory.mktemp("audit-brief") / "w.duckdb"
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        settings = server.settings_for(base, warehouse=path)
        with warehouse.open_warehouse(path) as con:
            client = make_client(settings, con)
            version = str(pipeline.build_split(con, client, settings, "eval", 12)["version_id"])
            rows = con.execute(
                "SELECT instance_id, target_id, brief FROM instances WHERE version_id = ? "
                "ORDER BY instance_id",
                [version],
            ).fetchall()
            chosen = next(
                (iid, brief, inputs)
                for iid, target, brief in rows
                if (inputs := gold.load_inputs(con, target)).antecedents
                and audit.result_numbers(inputs.abstract)
                and any(t.isupper() for t in gold.redaction_terms(inputs))
            )
        yield Built(path, version, chosen[0], chosen[1], chosen[2])


@pytest.fixture
def audited(
    built: Built, generated: world.World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[object]:
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        for line in server.env_lines(base):
            name, _, value = line.partition("=")
            monkeypatch.setenv(name, value)

        def run(text: str, *more: str) -> tuple[int, list[dict[str, object]]]:
            file = tmp_path / "text.txt"
            file.write_text(text)
            args = ["audit", "brief", "--split", "eval", "--instance", built.instance]
            args += ["--text", str(file), "--json", "--warehouse", str(built.path), *more]
            result = CliRunner().invoke(app, args)
            if result.exception and not isinstance(result.exception, SystemExit):
                raise result.exception
            lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
            return result.exit_code, lines

        yield run


def _failed(lines: list[dict[str, object]]) -> set[object]:
    return {line["check"] for line in lines if not line["passed"]}


def test_the_accepted_brief_passes_every_check_and_names_its_judge(
    built: Built, audited: object
) -> None:
    code, lines = audited(built.brief)  # type: ignore[operator]
    checks = [line["check"] for line in lines]
    assert checks == ["lexical", "identity", "retrieval", "mechanism", "search"]
    assert code == 0 and not _failed(lines), lines
    assert lines[0]["judged_by"] == {
        "backend": "rules",
        "model": "rules-v1",
        "settings": "the build's",
    }


def test_each_leak_form_fails_its_check(built: Built, audited: object) -> None:
    inputs = built.inputs
    terms = gold.redaction_terms(inputs)  # coined names less those antecedents use too
    names = [n for n in coined_names(inputs.title, inputs.abstract) if n in terms]
    named = next(n for n in names if not n.isupper())
    acronym = next(n for n in names if n.isupper())
    antecedent = next(
        str(a["title"]) for a in inputs.antecedents if len(str(a["title"]).split()) >= 3
    )
    forms = {
        "method name": f"{built.brief} We use {named}.",
        "title 4-gram": f"{built.brief} It concerns {title_ngrams(inputs.title)[0]}.",
        "result number": f"{built.brief} It reaches {audit.result_numbers(inputs.abstract)[0]}.",
        "antecedent title": f"{built.brief} It builds on {antecedent}.",
        "acronym": f"{built.brief} We use {acronym}.",
    }
    for form, text in forms.items():
        code, lines = audited(text)  # type: ignore[operator]
        assert code == 1 and "lexical" in _failed(lines), (form, lines)
    code, lines = audited(inputs.abstract)  # type: ignore[operator]
    assert code == 1 and "search" in _failed(lines), lines


def test_bad_input_exits_2(built: Built, audited: object, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["audit", "brief", "--split", "eval", "--warehouse", str(built.path)]
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"abc\x00def")
    os.mkfifo(tmp_path / "fifo.txt")  # read, it would wait for a writer for ever
    for args, said in [
        (["--instance", "0" * 16, "--text", str(empty)], "the text is empty"),
        (["--instance", built.instance, "--text", str(tmp_path / "none.txt")], "no such file"),
        (["--instance", built.instance, "--text", str(binary)], "holds a NUL byte"),
        (["--instance", built.instance, "--text", str(tmp_path / "fifo.txt")], "(FIFO)"),
        (["--instance", built.instance, "--text", "/dev/zero"], "a character device"),
    ]:
        result = runner.invoke(app, [*base, *args])
        assert isinstance(result.exception, InputError), result.output
        assert said in str(result.exception)
    text = tmp_path / "t.txt"
    text.write_text("Some text.")
    unknown = runner.invoke(app, [*base, "--instance", "0" * 16, "--text", str(text)])
    assert isinstance(unknown.exception, InputError)
    assert "has no instance '0000000000000000'" in str(unknown.exception)
