"""schemas/ and the README are the documented contract; these tests keep them true."""

from __future__ import annotations

import re

import duckdb

from inspire_build import schemas, warehouse
from inspire_build.config import PROJECT_ROOT


def test_schema_files_are_current() -> None:
    rendered = schemas.render()
    for relative, content in rendered.items():
        path = schemas.SCHEMAS_DIR / relative
        assert path.exists(), f"schemas/{relative} is missing: run `make schemas`"
        assert path.read_text() == content, f"schemas/{relative} is stale: run `make schemas`"
    on_disk = {
        str(p.relative_to(schemas.SCHEMAS_DIR))
        for p in schemas.SCHEMAS_DIR.rglob("*")
        if p.is_file()
    }
    assert on_disk == set(rendered), "schemas/ holds files the code no longer renders"


def _readme_relations() -> set[str]:
    text = (PROJECT_ROOT / "README.md").read_text()
    section = text.split("### Tables and views", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([a-z_]+)`", section, flags=re.MULTILINE))


def test_readme_lists_exactly_the_migrated_tables_and_views(
    con: duckdb.DuckDBPyConnection,
) -> None:
    migrated = {relation.name for relation in warehouse.relations(con)}
    documented = _readme_relations()
    assert documented == migrated, (
        f"README lacks {sorted(migrated - documented)}; "
        f"README lists unknown {sorted(documented - migrated)}"
    )


def test_readme_documents_every_setting() -> None:
    from inspire_build.config import Settings

    text = (PROJECT_ROOT / "README.md").read_text()
    for name in Settings.model_fields:
        if name == "splits":
            assert "`INSPIRE_SPLITS__" in text
        else:
            assert f"`INSPIRE_{name.upper()}`" in text, f"README does not document {name}"


def test_every_inspire_command_in_the_readme_exists() -> None:
    import click
    import typer.main

    from inspire_build.cli import app

    group = typer.main.get_group(app)
    text = (PROJECT_ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    commands = [line.split("#")[0].split() for b in blocks for line in b.splitlines()]
    checked = 0
    for words in commands:
        if not words or words[0] != "inspire":
            continue
        node: click.Command = group
        for word in words[1:]:
            if word.startswith("-") or not isinstance(node, click.Group):
                break
            assert word in node.commands, f"README runs `{' '.join(words)}`: no `{word}` command"
            node = node.commands[word]
        assert not isinstance(node, click.Group), f"`{' '.join(words)}` names no command"
        checked += 1
    assert checked >= 8


def test_readme_documents_every_make_target_and_deployment() -> None:
    text = (PROJECT_ROOT / "README.md").read_text()
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    targets = re.findall(r"^([a-z][\w-]*):.*?## ", makefile, flags=re.MULTILINE)
    assert {"setup", "test", "build", "audit", "serve", "stop", "demo"} <= set(targets)
    missing = [
        t
        for t in targets
        if f"make {t}" not in text
        and t not in ("help", "lint", "typecheck", "unit", "schemas", "clean")
    ]
    assert not missing, f"README does not document make {missing}"
    serve = (PROJECT_ROOT / "flows" / "serve.py").read_text()
    for deployment in (
        "build-split/train",
        "build-split/eval",
        "audit-split/default",
        "evaluate/default",
    ):
        assert f"`{deployment}`" in text, deployment
        flow, name = deployment.split("/")
        assert name in serve
