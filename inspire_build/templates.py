"""The prompts: versioned Jinja templates, each with a hash that is stored with every output it
produced and in a version's config hash.

Their one copy is the top-level ``prompts/`` folder, installed as the package
``inspire_build.prompts`` (pyproject.toml maps it): they are read through importlib.resources, so
an editable install and the wheel find them alike, whatever the working directory.

Paper text reaches a prompt only as data: templates are rendered with HTML autoescaping, so an
abstract cannot close the ``<data>`` block it sits in.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.resources
import re
from collections.abc import Mapping
from importlib.resources.abc import Traversable
from typing import Any

import jinja2

from inspire_build.errors import LLMError

PROMPTS_DIR = importlib.resources.files("inspire_build.prompts")  # prompts/, as package data
_VERSION = re.compile(r"\{#\s*version:\s*(?P<version>[\w.-]+)\s*#\}")


@dataclasses.dataclass(frozen=True)
class Prompt:
    """A versioned template. ``hash`` is stored with every output it produced."""

    name: str
    version: str
    source: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def render(self, context: Mapping[str, Any]) -> str:
        return _template(self.source).render(**context).strip()


@functools.lru_cache(maxsize=64)
def _template(source: str) -> jinja2.Template:
    """A template compiled once per source (grading renders one per part and per reference)."""
    environment = jinja2.Environment(
        autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    return environment.from_string(source)


def load_prompts(folder: Traversable = PROMPTS_DIR) -> dict[str, Prompt]:
    """Every ``*.md`` template with a version header. Refuses a template without one."""
    prompts: dict[str, Prompt] = {}
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if not path.name.endswith(".md") or path.name.upper() == "README.MD":
            continue
        source = path.read_text(encoding="utf-8")
        match = _VERSION.search(source.splitlines()[0] if source else "")
        if not match:
            raise LLMError(f"prompt {path.name} has no '{{# version: N #}}' header on line 1")
        stem = path.name.removesuffix(".md")
        prompts[stem] = Prompt(stem, match.group("version"), source)
    return prompts
