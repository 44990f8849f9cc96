"""Imported first by every bench script: this checkout's package and prompts ahead of any
installed copy. ``python bench/x.py`` puts ``bench/`` first on the path, not the checkout, so
a copy's edits (a sabotaged prompt, a change under test) would silently not be measured.

Run: .venv/bin/python bench/_checkout.py
prints which checkout the bench scripts here measure, and whether the package and the prompts
they import are that checkout's (the figures: 1 where they are, 0 where another copy would
answer), then one JSON line of them.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class _Prompts(importlib.abc.MetaPathFinder):
    """``inspire_build.prompts`` from this checkout's top-level prompts/, as pyproject.toml maps
    it: an installed checkout's finder would answer with its own prompts otherwise."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "inspire_build.prompts":
            return None
        folder = ROOT / "prompts"
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))
if not any(isinstance(finder, _Prompts) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Prompts())


def main() -> None:
    import json

    import inspire_build
    from inspire_build.templates import PROMPTS_DIR

    package = Path(inspire_build.__file__).resolve().parent
    prompts = Path(str(PROMPTS_DIR)).resolve()
    figures = {
        "package_is_this_checkouts": int(package == ROOT / "inspire_build"),
        "prompts_are_this_checkouts": int(prompts == ROOT / "prompts"),
    }
    print(f"bench scripts in {ROOT / 'bench'} measure {ROOT}")
    print(f"  inspire_build from {package} ({figures['package_is_this_checkouts']} of 1 expected)")
    print(f"  prompts from {prompts} ({figures['prompts_are_this_checkouts']} of 1 expected)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
