"""The versioned prompt templates (``*.md``), installed as the package ``inspire_build.prompts``.

This folder is their one copy. pyproject.toml maps the package here, so an editable install and
the wheel both serve them to ``importlib.resources`` (``inspire_build/templates.py``). This file
makes the folder a regular package, which setuptools' editable finder can map to a folder
outside ``inspire_build/``.
"""
