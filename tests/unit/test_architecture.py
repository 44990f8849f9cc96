"""The layers' import rules (docs/architecture.md), read from the source with ``ast``: a planted
violation of each rule is caught, and the tree itself breaks none.

The tree is read and parsed once per test session (:func:`_read`, :func:`_parse` and what is
derived from each module's text are cached): a planted case copies the sources, changes one
module, and so parses that module alone again.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
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
    "openai": {"inspire_build.llm.backend"},
    "requests": {"inspire_build.http"},
    "httpx": {"inspire_build.http"},  # HTTP goes through http.py, whichever client
    # flows/, and the one module that relies on Prefect's private API (inside its functions
    # alone: IMPORTED_WHEN_RUN): the package's other modules (driver/ among them) run without it.
    "prefect": {"flows.*", "inspire_build.prefect_runtime"},
    # Full-text search lives in one table module: the index over papers and over the corpus.
    "duckdb_extension_fts": {"inspire_build.tables.search"},
    # The package never imports flows/: the CLI finds the flows' runners by their entry points.
    "flows": {"flows.*"},
}
# Package modules that may import these libraries only inside a function, never as they load.
IMPORTED_WHEN_RUN = {"prefect": {"inspire_build.prefect_runtime"}}
# Scoring reads the warehouse and pure code only, never the build's fetching or the LLM.
# It reads versions and qrels through tables/, never through the step that writes them (splits).
EVALUATION_NEVER = {"inspire_build.resolve", "inspire_build.sources", "inspire_build.http",
                    "inspire_build.llm", "inspire_build.llm.*", "inspire_build.splits"}  # fmt: skip
# The review pages share the local server's parts (its Host check, its body limit), not the tool
# server's: nothing review/ imports reaches these.
REVIEW_NEVER = {"inspire_build.env.server", "inspire_build.env.mcp_server"}
# The emulator is a test double: the product never imports it, but for the CLI's commands that
# build a sandbox world, serve it, or fill the corpus from one (`inspire corpus build --world`).
SANDBOX = "inspire_build.sandbox"
SANDBOX_USERS = {SANDBOX, f"{SANDBOX}.*", "inspire_build.cli.sandbox",
                 "inspire_build.cli.environment"}  # fmt: skip
# warehouse.py owns the connection, migrations, transactions and generic writes; every query of
# a table (the crosswalk, full-text search, the corpus) is in tables/.
WAREHOUSE = "inspire_build.warehouse"
MIGRATIONS = ROOT / "inspire_build" / "migrations"


@functools.cache
def _read(root: Path) -> tuple[tuple[str, str], ...]:
    """(module, source) of every module, read from disk once."""
    found = []
    for path in [*root.glob("inspire_build/**/*.py"), *root.glob("flows/*.py")]:
        name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        found.append((name, path.read_text(encoding="utf-8")))
    return tuple(found)


@functools.cache
def _parse(source: str) -> ast.Module:
    """A module's AST, parsed once per distinct text (a planted case reparses one module)."""
    return ast.parse(source)


def module_sources(root: Path = ROOT) -> dict[str, str]:
    """module -> source: a fresh dict (to plant in) over the one reading of the tree."""
    return dict(_read(root))


def imports_of(name: str, source: str, package: bool) -> set[str]:
    """Every module ``name`` imports, absolute, with ``from x import y`` also as ``x.y``."""
    return set(_imports(name, source, package))


@functools.cache
def _imports(name: str, source: str, package: bool) -> frozenset[str]:
    found: set[str] = set()
    for node in ast.walk(_parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")[: len(name.split(".")) - node.level + int(package)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return frozenset(found)


def graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    packages = _packages(sources)
    return {
        name: imports_of(name, text, name.count(".") == 0 or name in packages)
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
    edges, packages = graph(sources), _packages(sources)
    found = warehouse_queries(sources)
    for name, imported in sorted(edges.items()):
        tops = {i.split(".")[0] for i in imported}
        for library, owners in OWNERS.items():
            if library in tops and not _owned_by(name, owners) and name.split(".")[0] != library:
                found.append(f"{name} imports {library}, which only {sorted(owners)} may")
        if name in CORE:
            internal = {i for i in imported if i in edges} - packages
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
        if name == "inspire_build.review" or name.startswith("inspire_build.review."):
            bad = {r for r in _reach(edges, name) if r in REVIEW_NEVER}
            found += [f"{name} reaches {r}, the tool server" for r in sorted(bad)]
        if not _owned_by(name, SANDBOX_USERS):
            bad = {i for i in imported if i == SANDBOX or i.startswith(f"{SANDBOX}.")}
            found += [f"{name} imports {i}, the emulator" for i in sorted(bad)]
        found += [f"{name} imports {i}, a dependency's private module" for i in _private(imported)]
    return found + [
        f"{name} imports {library} as it loads, which it may only inside a function"
        for library, names in IMPORTED_WHEN_RUN.items()
        for name in sorted(names)
        if library in _loaded_with(sources.get(name, ""))
    ]


def _loaded_with(source: str) -> set[str]:
    """The top-level packages a module imports as it loads (its module-level statements)."""
    found = set()
    for node in _parse(source).body:
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def _private(imported: Iterable[str]) -> list[str]:
    """The private modules (or names) of other packages among ``imported``: a part that starts
    with one underscore, as in ``arxiv._feed``."""
    return sorted(
        i
        for i in imported
        if i.split(".")[0] not in {"inspire_build", "flows"}
        and any(p.startswith("_") and not p.startswith("__") for p in i.split("."))
    )


@functools.cache
def schema_tables() -> frozenset[str]:
    """Every table and view the migrations create."""
    made = re.compile(
        r'CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(\w+)',
        re.IGNORECASE,
    )
    return frozenset(
        m.group(1).lower() for f in MIGRATIONS.glob("*.sql") for m in made.finditer(f.read_text())
    )


def warehouse_queries(sources: Mapping[str, str]) -> list[str]:
    """Every string of warehouse.py (docstrings aside) that names a table of the schema: its
    queries read DuckDB's catalog and its own ``_migrations`` only."""
    return [
        f"{WAREHOUSE}:{line} names the table {table}, whose queries belong in tables/"
        for line, text in sorted(_strings(WAREHOUSE, sources.get(WAREHOUSE, "")))
        for table in sorted(set(re.findall(r"\w+", text.lower())) & schema_tables())
    ]


# SQL text: a string that starts a statement, or selects from something.
SQL = re.compile(
    r"^\s*(SELECT|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|CREATE\s|DROP\s|ALTER\s|"
    r"COPY\s|WITH\s+\w+\s+AS)\b|\bSELECT\b.*\bFROM\b"
)
SQL_HOMES = ("inspire_build.warehouse", "inspire_build.tables.*")


def sql_outside_its_homes(sources: Mapping[str, str]) -> list[str]:
    """Every string holding SQL text in a module outside the warehouse layer, one line each
    (an f-string's literal parts included; docstrings aside)."""
    return [
        f"{name}:{line} holds SQL: {text[:50]!r}"
        for name, source in sorted(sources.items())
        if not _owned_by(name, SQL_HOMES)
        for line, text in _strings(name, source)
        if SQL.search(text)
    ]


@functools.cache
def _strings(name: str, source: str) -> tuple[tuple[int, str], ...]:
    """(line, text) of every string constant of a module, docstrings aside."""
    tree = _parse(source)
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return tuple(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    )


@functools.cache
def _stdlib() -> frozenset[str]:
    return frozenset(sys.stdlib_module_names)


@pytest.fixture
def sources() -> dict[str, str]:
    """The tree's sources, a fresh dict to plant in, read and parsed once for every test."""
    return module_sources(ROOT)


def test_the_tree_breaks_no_rule(sources: dict[str, str]) -> None:
    assert violations(sources) == []


def test_no_sql_outside_the_warehouse_layer(sources: dict[str, str]) -> None:
    assert sql_outside_its_homes(sources) == []


@pytest.mark.parametrize(
    "planted",
    [
        'ROWS = "SELECT paper_id FROM papers"',
        'con.execute("UPDATE targets SET status = ?", ["x"])',
        'q = f"SELECT {x} FROM qrels WHERE version_id = ?"',
        'Q = ("DELETE FROM grades "\n     "WHERE target_id = ?")',
    ],
)
def test_planted_sql_is_caught(sources: dict[str, str], planted: str) -> None:
    sources["inspire_build.exports"] += "\n" + planted + "\n"
    assert any(line.startswith("inspire_build.exports:") for line in sql_outside_its_homes(sources))
    sources["inspire_build.tables.versions"] += "\n" + planted + "\n"  # its home: allowed
    assert not any("tables.versions" in line for line in sql_outside_its_homes(sources))


# The crosswalk's query as it stood in warehouse.py before it moved to tables/crosswalk.py.
CROSSWALK_IN_WAREHOUSE = (
    "def crosswalk(con):\n"
    '    return con.execute("SELECT scheme, value, paper_id FROM paper_ids").fetchall()'
)


@pytest.mark.parametrize(
    ("module", "planted", "said"),
    [
        ("inspire_build.cutoff", "import duckdb", "core inspire_build.cutoff imports duckdb"),
        ("inspire_build.lineage", "from inspire_build import warehouse", "is not core"),
        ("inspire_build.gold", "import openai", "imports openai, which only"),
        ("inspire_build.splits", "from flows import console", "imports flows, which only"),
        ("inspire_build.cli.building", "import flows.runners", "imports flows, which only"),
        ("inspire_build.cli", "from flows.runners import run_build", "imports flows, which only"),
        # the module relying on Prefect's private API imports it only as a function runs
        ("inspire_build.prefect_runtime", "from prefect import flow", "prefect as it loads"),
        ("inspire_build.prefect_runtime", "import flows.build_split", "imports flows, which only"),
        ("inspire_build.exports", "import prefect", "imports prefect, which only"),
        ("inspire_build.evaluation.report", "from inspire_build import resolve", "reaches"),
        # transitively: a module evaluation imports that imports the LLM
        ("inspire_build.warehouse", "from inspire_build import llm", "reaches inspire_build.llm"),
        # the LLM as a package: a module beside it is not it
        ("inspire_build.llm_rules", "import openai", "imports openai, which only"),
        ("inspire_build.llm.client", "import openai", "imports openai, which only"),
        # the package's build driver runs the steps without Prefect; flows/ adds the task runs
        ("inspire_build.driver.build", "import prefect", "imports prefect, which only"),
        ("inspire_build.driver", "from prefect import flow", "imports prefect, which only"),
        # evaluation reads versions and qrels through tables/, not through the step that writes
        ("inspire_build.evaluation.evaluate", "from inspire_build import splits",
         "evaluation.evaluate reaches inspire_build.splits"),
        ("inspire_build.tables.versions", "from inspire_build.splits import latest_version",
         "evaluation.evaluate reaches inspire_build.splits"),
        # the review pages never reach the tool server, directly or through what they import
        ("inspire_build.review.app", "from inspire_build.env.server import BodyLimit",
         "review.app reaches inspire_build.env.server, the tool server"),
        ("inspire_build.audit_checks", "from inspire_build.env import mcp_server",
         "review.curation reaches inspire_build.env.mcp_server, the tool server"),
        # the product never imports the emulator
        ("inspire_build.env.corpus", "from inspire_build.sandbox.world import Record",
         "env.corpus imports inspire_build.sandbox.world, the emulator"),
        ("inspire_build.cli.building", "from inspire_build import sandbox",
         "cli.building imports inspire_build.sandbox, the emulator"),
        ("flows.build_split", "import inspire_build.sandbox.server", "the emulator"),
        # warehouse.py queries no table: the crosswalk, search and the corpus are in tables/
        ("inspire_build.warehouse", CROSSWALK_IN_WAREHOUSE, "names the table paper_ids"),
        ("inspire_build.warehouse", "Q = \"PRAGMA create_fts_index('corpus', 'paper_id')\"",
         "names the table corpus"),
        ("inspire_build.warehouse", "import duckdb_extension_fts",
         "imports duckdb_extension_fts, which only"),
        # a health check is HTTP too: http.py's
        ("inspire_build.flow_server", "import httpx", "imports httpx, which only"),
        # a dependency is used through its public API, never a private module of it
        ("inspire_build.sources.arxiv", "from arxiv import _feed",
         "imports arxiv._feed, a dependency's private module"),
        ("inspire_build.http", "import requests._internal_utils",
         "imports requests._internal_utils, a dependency's private module"),
    ],
)  # fmt: skip
def test_a_planted_violation_is_caught(
    sources: dict[str, str], module: str, planted: str, said: str
) -> None:
    sources[module] = planted + "\n" + sources.get(module, "")
    assert any(said in line for line in violations(sources)), violations(sources)


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("inspire_build.llm.backend", "import openai"),  # the backend alone
        ("inspire_build.cli.environment", "from inspire_build.sandbox import corpus"),
        ("inspire_build.sandbox.corpus", "from inspire_build.env import corpus"),
        ("inspire_build.tables.search", "import duckdb_extension_fts"),
        ("inspire_build.tables.crosswalk", CROSSWALK_IN_WAREHOUSE),
        ("inspire_build.review.app", "from inspire_build.local_server import BodyLimit"),
        ("inspire_build.prefect_runtime", "def f():\n    import prefect.main"),
    ],
)
def test_what_a_rule_allows_is_not_caught(
    sources: dict[str, str], module: str, planted: str
) -> None:
    sources[module] = planted + "\n" + sources.get(module, "")
    assert violations(sources) == []


def test_planting_reparses_only_the_planted_module(sources: dict[str, str]) -> None:
    violations(sources)
    before = _parse.cache_info()
    sources["inspire_build.exports"] += "\nimport prefect\n"
    violations(sources)
    sql_outside_its_homes(sources)
    after = _parse.cache_info()
    assert after.misses - before.misses == 1


MAX_FUNCTION_LINES = 80


def long_functions(sources: Mapping[str, str]) -> list[str]:
    """Every function longer than ``MAX_FUNCTION_LINES`` (a screen), one line each."""
    return [line for name, text in sorted(sources.items()) for line in _long(name, text)]


@functools.cache
def _long(name: str, source: str) -> tuple[str, ...]:
    return tuple(
        f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(_parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    )


def test_no_function_is_longer_than_a_screen(sources: dict[str, str]) -> None:
    assert long_functions(sources) == []


def test_a_planted_long_function_is_caught(sources: dict[str, str]) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    sources["inspire_build.cutoff"] += f"\n\ndef planted() -> None:\n{body}"
    assert long_functions(sources) == [
        f"inspire_build.cutoff.planted: {MAX_FUNCTION_LINES + 1} lines"
    ]
