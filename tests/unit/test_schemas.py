"""schemas/, the README and the manual in docs/ are the documented contract; these tests keep
them true."""

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


DOCS = PROJECT_ROOT / "docs"
# Where each documented list lives in the manual.
TABLES_PAGE = DOCS / "pipeline.md"
SETTINGS_PAGE = DOCS / "operations.md"


def _manual() -> dict[str, str]:
    """The README and every page of docs/, by path relative to the project."""
    pages = [PROJECT_ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    return {str(p.relative_to(PROJECT_ROOT)): p.read_text(encoding="utf-8") for p in pages}


def _documented_relations() -> set[str]:
    text = TABLES_PAGE.read_text()
    section = text.split("### Tables and views", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([a-z_]+)`", section, flags=re.MULTILINE))


def test_the_manual_lists_exactly_the_migrated_tables_and_views(
    con: duckdb.DuckDBPyConnection,
) -> None:
    migrated = {relation.name for relation in warehouse.relations(con)}
    documented = _documented_relations()
    assert documented == migrated, (
        f"{TABLES_PAGE.name} lacks {sorted(migrated - documented)}; "
        f"{TABLES_PAGE.name} lists unknown {sorted(documented - migrated)}"
    )


def test_the_manual_documents_every_setting() -> None:
    from inspire_build.config import Settings

    text = SETTINGS_PAGE.read_text()
    for name in Settings.model_fields:
        if name == "splits":
            assert "`INSPIRE_SPLITS__" in text
        else:
            assert f"`INSPIRE_{name.upper()}`" in text, (
                f"{SETTINGS_PAGE.name} does not document {name}"
            )


def test_every_inspire_command_in_the_manual_exists() -> None:
    import click
    import typer.main

    from inspire_build.cli import app

    group = typer.main.get_group(app)
    text = "\n".join(_manual().values())
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
            assert word in node.commands, f"the manual runs `{' '.join(words)}`: no `{word}`"
            node = node.commands[word]
        assert not isinstance(node, click.Group), f"`{' '.join(words)}` names no command"
        checked += 1
    assert checked >= 8


def test_the_manual_documents_every_make_target_and_deployment() -> None:
    text = (PROJECT_ROOT / "README.md").read_text() + SETTINGS_PAGE.read_text()
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    targets = re.findall(r"^([a-z][\w-]*):.*?## ", makefile, flags=re.MULTILINE)
    assert {"setup", "test", "build", "audit", "serve", "stop", "demo"} <= set(targets)
    missing = [
        t
        for t in targets
        if f"make {t}" not in text
        and t not in ("help", "lint", "typecheck", "unit", "schemas", "clean")
    ]
    assert not missing, f"neither the README nor operations.md documents make {missing}"
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


def test_the_readme_is_a_front_page() -> None:
    lines = (PROJECT_ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"the README has {len(lines)} lines: the manual belongs in docs/"
    first = "\n".join(lines[:60])
    assert "make demo" in first and "make test" in first


# A relative link's target: [text](target) or [text](target#anchor), text possibly over lines.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_every_relative_link_in_the_manual_resolves() -> None:
    broken = []
    for name, text in _manual().items():
        base = (PROJECT_ROOT / name).parent
        for target in LINK.findall(text):
            path = target.split("#", 1)[0]
            external = "://" in target or target.startswith("mailto:")
            if path and not external and not (base / path).exists():
                broken.append(f"{name}: {target}")
    assert not broken, broken


def test_no_page_of_the_manual_names_a_path_outside_the_repository() -> None:
    found = [
        f"{name}:{number}"
        for name, text in _manual().items()
        for number, line in enumerate(text.splitlines(), 1)
        if "../shared" in line
    ]
    assert not found, found
