"""templates.py: the prompts' one copy is the top-level prompts/, read through importlib.resources
as the package ``inspire_build.prompts``, from any working directory (the wheel's side is
tests/integration/test_wheel.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from inspire_build.config import PROJECT_ROOT
from inspire_build.templates import PROMPTS_DIR, load_prompts

PROMPTS = PROJECT_ROOT / "prompts"


def test_the_templates_are_read_from_the_top_level_prompts_folder() -> None:
    assert Path(str(PROMPTS_DIR)).resolve() == PROMPTS.resolve()
    on_disk = {p.stem for p in PROMPTS.glob("*.md") if p.name != "README.md"}
    assert set(load_prompts()) == on_disk and len(on_disk) == 5
    for name, prompt in load_prompts().items():
        assert prompt.source == (PROMPTS / f"{name}.md").read_text(encoding="utf-8")


def test_no_second_copy_of_a_template_is_left_in_the_package() -> None:
    assert not (PROJECT_ROOT / "inspire_build" / "prompts").exists()
    names = {p.name for p in PROMPTS.glob("*.md")}
    elsewhere = [
        p
        for folder in ("inspire_build", "flows")
        for p in (PROJECT_ROOT / folder).rglob("*.md")
        if p.name in names
    ]
    assert elsewhere == []


def test_the_installed_package_finds_them_from_another_directory(tmp_path: Path) -> None:
    """The checkout's install (``pip install -e .``) maps the package to prompts/: a process
    whose working directory is not the checkout still loads every template."""
    code = (
        "from inspire_build.templates import PROMPTS_DIR, load_prompts; "
        "print(PROMPTS_DIR); print(','.join(sorted(load_prompts())))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    folder, names = done.stdout.splitlines()
    assert Path(folder).resolve() == PROMPTS.resolve()
    assert names.split(",") == sorted(load_prompts())
