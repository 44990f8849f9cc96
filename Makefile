# inspire-build: every gate is one command. `make` alone lists the targets.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: help setup test lint typecheck unit schemas clean

help: ## List the targets with what they do
	@grep -E '^[a-z][a-zA-Z_-]*:.*?## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*?## "}; {printf "  make %-12s %s\n", $$1, $$2}'

setup: ## Create .venv and install the project with its dev extra
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'

test: lint typecheck unit ## Run every gate: ruff, mypy, pytest

lint: ## ruff: lint and formatting
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: ## mypy (strict) on inspire_build/ and flows/
	$(PY) -m mypy inspire_build flows

unit: ## pytest: unit, conformance and integration tests
	$(PY) -m pytest -q

schemas: ## Regenerate schemas/ (warehouse.sql, models/*.json) from the code
	$(PY) -m inspire_build.schemas

clean: ## Remove caches (keeps .venv and the warehouse)
	rm -rf .mypy_cache .ruff_cache .pytest_cache .hypothesis
