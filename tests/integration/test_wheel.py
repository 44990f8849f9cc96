"""Installed as a package, not run from a checkout: the wheel carries its prompts (from the
top-level prompts/, which it loads from the installed package), its migrations and every module,
and a fresh environment outside the checkout initialises a warehouse and builds against the
sandbox with the rules backend.

The fresh venv gets the wheel alone (``--no-deps``); its dependencies come from this test's own
environment through a path entry, whose ``.pth`` files (the checkout's editable install among
them) are not processed, so ``inspire_build`` can only come from the wheel.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

from inspire_build.config import PROJECT_ROOT
from inspire_build.sandbox import server, world


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def wheel_misses(names: set[str]) -> list[str]:
    """What the checkout has and the wheel lacks: every template of the top-level prompts/ (as
    ``inspire_build/prompts/``), and every module of inspire_build/ and flows/ (pyproject.toml
    lists the packages: a new one left off that list is caught here)."""
    wanted = [f"inspire_build/prompts/{p.name}" for p in (PROJECT_ROOT / "prompts").glob("*.md")]
    wanted += [
        p.relative_to(PROJECT_ROOT).as_posix()
        for folder in ("inspire_build", "flows")
        for p in (PROJECT_ROOT / folder).rglob("*.py")
    ]
    return sorted(set(wanted) - names)


def test_the_wheel_installs_and_builds_outside_the_checkout(
    tmp_path: Path, prefect_api: str
) -> None:
    dist = tmp_path / "dist"
    run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--wheel-dir", dist, PROJECT_ROOT, cwd=tmp_path,
    )  # fmt: skip
    [wheel] = dist.glob("inspire_build-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert wheel_misses(names) == []
    assert "inspire_build/review/templates/instance.html" in names  # the review pages
    assert any(n.startswith("inspire_build/migrations/0001_") for n in names)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPIRE_", "PREFECT_"))}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "PYTHONPATH": ""}
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path, env=env)
    python = venv / "bin" / "python"
    run(
        sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
        "--no-index", wheel, cwd=tmp_path, env=env,
    )  # fmt: skip
    [packages] = (venv / "lib").glob("python3*/site-packages")
    (packages / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    where = run(
        python, "-c", "import inspire_build; print(inspire_build.__file__)", cwd=work, env=env
    )
    assert where.startswith(str(packages)), where
    code = "from inspire_build.templates import PROMPTS_DIR as d, load_prompts as p; print(d, *p())"
    folder, *prompts = run(python, "-c", code, cwd=work, env=env).split()
    assert folder == str(packages / "inspire_build" / "prompts"), folder
    assert len(prompts) == 5 and "grade" in prompts, prompts
    run(venv / "bin" / "inspire", "warehouse", "init", cwd=work, env=env)
    assert (work / "warehouse" / "inspire.duckdb").exists()  # relative to where it runs

    generated = world.generate(world.WorldConfig(seed=5, papers=300))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        lines = server.env_lines(base, time_scale=1000)
        env |= dict(line.split("=", 1) for line in lines)
        env["PREFECT_API_URL"] = prefect_api  # the session's server: no temporary one
        built = run(venv / "bin" / "inspire", "build", "--limit", "3", cwd=work, env=env)
    assert built.startswith("eval-"), built
