"""tests/unit mirrors the package: the tests of inspire_build/X/Y.py are in tests/unit/X/test_Y.py,
of inspire_build/Y.py in tests/unit/test_Y.py, of flows/Y.py in tests/unit/flows/test_Y.py, and of
a package's own __init__.py in test_init.py beside them. Only the tests of the project as a whole,
listed below, name no module."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

UNIT = Path(__file__).resolve().parent
ROOT = UNIT.parents[1]
# The tests of the project as a whole, at the top of tests/unit/.
PROJECT_WIDE = {
    "test_architecture.py",  # the layers' import rules, over every module
    "test_bench.py",  # bench/'s scripts measure the checkout they sit in
    "test_conformance_gate.py",  # tests/conformance/ skips, or fails under CI=true
    "test_layout.py",  # this file
}


def module_of(test: str) -> str:
    """The module that a test file's path (relative to tests/unit/) names."""
    *folders, name = Path(test).parts
    stem = name.removeprefix("test_").removesuffix(".py")
    root = [] if folders[:1] == ["flows"] else ["inspire_build"]
    return Path(*root, *folders, "__init__.py" if stem == "init" else f"{stem}.py").as_posix()


def strays(tests: Iterable[str], modules: Iterable[str]) -> list[str]:
    """The test files that are not project-wide and name no module of ``modules``."""
    known = set(modules)
    return sorted(t for t in tests if t not in PROJECT_WIDE and module_of(t) not in known)


def tree() -> tuple[list[str], list[str]]:
    tests = [path.relative_to(UNIT).as_posix() for path in UNIT.rglob("test_*.py")]
    packages = [ROOT / "inspire_build", ROOT / "flows"]
    modules = [
        p.relative_to(ROOT).as_posix() for package in packages for p in package.rglob("*.py")
    ]
    return tests, modules


def test_every_test_file_names_its_module_and_sits_in_a_package() -> None:
    tests, modules = tree()
    assert strays(tests, modules) == []
    assert PROJECT_WIDE.issubset(tests)  # the list names no file that is gone
    assert [t for t in tests if not (UNIT / t).with_name("__init__.py").exists()] == []


def test_the_mirrored_paths_and_a_planted_stray() -> None:
    assert module_of("test_http.py") == "inspire_build/http.py"
    assert module_of("sandbox/test_world.py") == "inspire_build/sandbox/world.py"
    assert module_of("cli/test_init.py") == "inspire_build/cli/__init__.py"
    assert module_of("flows/test_console.py") == "flows/console.py"
    tests, modules = tree()
    planted = ["test_sandbox_world.py", "sandbox/test_openai.py", "cli/test_architecture.py"]
    assert strays([*tests, *planted], modules) == sorted(planted)
