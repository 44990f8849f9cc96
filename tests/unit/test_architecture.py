"""The layers' import rules (docs/architecture.md), read from the source with ``ast``: a planted
violation of each rule is caught, and the tree itself breaks none."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The pure core: no I/O, so correctness can be tested by hand.
CORE = {
    "inspire_build.ids", "inspire_build.models", "inspire_build.errors", "inspire_build.cutoff",
    "inspire_build.lineage", "inspire_build.classify", "inspire_build.boundary",
    "inspire_build.sampling", "inspire_build.text", "inspire_build.briefs", "inspire_build.audit",
    "inspire_build.evaluation.metrics",
    "inspire_build.evaluation.bootstrap", "inspire_build.evaluation.funnel",
    "inspire_build.evaluation.score", "inspire_build.evaluation.kappa",
    "inspire_build.review.decisions", "inspire_build.review.highlight",
    "inspire_build.review.agreement",
}  # fmt: skip
CORE_THIRD_PARTY = {"pydantic", "rapidfuzz", "numpy"}
# Only these modules may import these libraries: the edges where I/O happens.
OWNERS = {
    "openai": {"inspire_build.llm"},
    "requests": {"inspire_build.http"},
    "prefect": {"flows.*"},
    # The package never imports flows/: the CLI finds flows/commands.py by its entry points.
    "flows": {"flows.*"},
}
# Scoring reads the warehouse and pure code only, never the build's fetching or the LLM.
EVALUATION_NEVER = {"inspire_build.resolve", "inspire_build.sources", "inspire_build.http",
                    "inspire_build.llm"}  # fmt: skip


def module_sources(root: Path) -> dict[str, str]:
    found = {}
    for path in [*root.glob("inspire_build/**/*.py"), *root.glob("flows/*.py")]:
        name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path.read_text(encoding="utf-8")
    return found


def imports_of(name: str, source: str, package: bool) -> set[str]:
    """Every module ``name`` imports, absolute, with ``from x import y`` also as ``x.y``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")[: len(name.split(".")) - node.level + int(package)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    return {
        name: imports_of(name, text, name.count(".") == 0 or name in _packages(sources))
        for name, text in sources.items()
    }


def _packages(sources: Mapping[str, str]) -> set[str]:
    return {n.rsplit(".", 1)[0] for n in sources if "." in n}


def _owned_by(name: str, owners: Iterable[str]) -> bool:
    return any(name == o or (o.endswith(".*") and name.startswith(o[:-1])) for o in owners)


def _reach(edges: Mapping[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in edges.get(todo.pop(), set()):
            if target in edges and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def violations(sources: Mapping[str, str]) -> list[str]:
    """Every broken rule, one line each."""
    edges = graph(sources)
    found = []
    for name, imported in sorted(edges.items()):
        tops = {i.split(".")[0] for i in imported}
        for library, owners in OWNERS.items():
            if library in tops and not _owned_by(name, owners) and name.split(".")[0] != library:
                found.append(f"{name} imports {library}, which only {sorted(owners)} may")
        if name in CORE:
            internal = {i for i in imported if i in edges} - _packages(sources)
            outside = {i.split(".")[0] for i in imported if i not in edges} - {
                "inspire_build", "__future__", *CORE_THIRD_PARTY, *_stdlib()}  # fmt: skip
            found += [
                f"core {name} imports {i}, which is not core" for i in sorted(internal - CORE)
            ]
            found += [f"core {name} imports {i}, an I/O library" for i in sorted(outside)]
        if name.startswith("inspire_build.evaluation"):
            bad = {r for r in _reach(edges, name) if _owned_by(r, EVALUATION_NEVER)}
            bad |= {r for r in _reach(edges, name) if r.startswith("inspire_build.sources")}
            found += [f"{name} reaches {r}, which scoring must not" for r in sorted(bad)]
    return found


# SQL text: a string that starts a statement, or selects from something.
SQL = re.compile(
    r"^\s*(SELECT|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|CREATE\s|DROP\s|ALTER\s|"
    r"COPY\s|WITH\s+\w+\s+AS)\b|\bSELECT\b.*\bFROM\b"
)
SQL_HOMES = ("inspire_build.warehouse", "inspire_build.tables.*")


def sql_outside_its_homes(sources: Mapping[str, str]) -> list[str]:
    """Every string holding SQL text in a module outside the warehouse layer, one line each
    (an f-string's literal parts included; docstrings aside)."""
    found = []
    for name, text in sorted(sources.items()):
        if _owned_by(name, SQL_HOMES):
            continue
        tree = ast.parse(text)
        docs = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            text_of = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text_of, str) and id(node) not in docs and SQL.search(text_of):
                found.append(f"{name}:{node.lineno} holds SQL: {text_of[:50]!r}")
    return found


def _stdlib() -> set[str]:
    import sys

    return set(sys.stdlib_module_names)


def test_the_tree_breaks_no_rule() -> None:
    assert violations(module_sources(ROOT)) == []


def test_no_sql_outside_the_warehouse_layer() -> None:
    assert sql_outside_its_homes(module_sources(ROOT)) == []


@pytest.mark.parametrize(
    "planted",
    [
        'ROWS = "SELECT paper_id FROM papers"',
        'con.execute("UPDATE targets SET status = ?", ["x"])',
        'q = f"SELECT {x} FROM qrels WHERE version_id = ?"',
        'Q = ("DELETE FROM grades "\n     "WHERE target_id = ?")',
    ],
)
def test_planted_sql_is_caught(planted: str) -> None:
    sources = module_sources(ROOT)
    sources["inspire_build.exports"] += "\n" + planted + "\n"
    assert any(line.startswith("inspire_build.exports:") for line in sql_outside_its_homes(sources))
    sources["inspire_build.tables.versions"] += "\n" + planted + "\n"  # its home: allowed
    assert not any("tables.versions" in line for line in sql_outside_its_homes(sources))


@pytest.mark.parametrize(
    ("module", "planted", "said"),
    [
        ("inspire_build.cutoff", "import duckdb", "core inspire_build.cutoff imports duckdb"),
        ("inspire_build.lineage", "from inspire_build import warehouse", "is not core"),
        ("inspire_build.gold", "import openai", "imports openai, which only"),
        ("inspire_build.splits", "from flows import console", "imports flows, which only"),
        ("inspire_build.cli.building", "import flows.console", "imports flows, which only"),
        ("inspire_build.cli", "from flows.commands import build", "imports flows, which only"),
        ("inspire_build.exports", "import prefect", "imports prefect, which only"),
        ("inspire_build.evaluation.report", "from inspire_build import resolve", "reaches"),
        # transitively: a module evaluation imports that imports the LLM
        ("inspire_build.warehouse", "from inspire_build import llm", "reaches inspire_build.llm"),
    ],
)
def test_a_planted_violation_is_caught(module: str, planted: str, said: str) -> None:
    sources = module_sources(ROOT)
    sources[module] = planted + "\n" + sources[module]
    assert any(said in line for line in violations(sources)), violations(sources)


MAX_FUNCTION_LINES = 80


def long_functions(sources: Mapping[str, str]) -> list[str]:
    """Every function longer than ``MAX_FUNCTION_LINES`` (a screen), one line each."""
    return [
        f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for name, text in sorted(sources.items())
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_no_function_is_longer_than_a_screen() -> None:
    assert long_functions(module_sources(ROOT)) == []


def test_a_planted_long_function_is_caught() -> None:
    sources = module_sources(ROOT)
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    sources["inspire_build.cutoff"] += f"\n\ndef planted() -> None:\n{body}"
    assert long_functions(sources) == [
        f"inspire_build.cutoff.planted: {MAX_FUNCTION_LINES + 1} lines"
    ]
