"""Imported first by every bench script: this checkout's package and prompts ahead of any
installed copy. ``python bench/x.py`` puts ``bench/`` first on the path, not the checkout, so
a copy's edits (a sabotaged prompt, a change under test) would silently not be measured."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))
