"""The project's exception tree.

Modules raise these; `cli.py` translates them into a one-line message and an exit code, once.
"""


class InspireError(Exception):
    """Base class for every error the product raises on purpose."""

    exit_code = 1


class InputError(InspireError):
    """The user gave us something we cannot use (a junk ID, a bad file, a bad option)."""

    exit_code = 2


class InvalidIdError(InputError, ValueError):
    """A string is not a paper identifier in any scheme we know."""


class WarehouseError(InspireError):
    """The DuckDB warehouse cannot be opened, migrated or written."""


class WarehouseLockedError(WarehouseError):
    """Another process holds the warehouse's write lock (DuckDB allows one writer process)."""

    exit_code = 3


class WarehouseCorruptError(WarehouseError):
    """The warehouse file is damaged (a checksum mismatch) or is not a DuckDB database at all."""


class MigrationError(WarehouseError):
    """A migration failed, is registered twice, or was edited after it was applied."""


class DataFileError(InspireError):
    """A bulk data file cannot be read whole (a truncated ``.gz``, a malformed line): the
    command was right, the file is not, so nothing of it is kept (exit 1)."""


class Cancelled(InspireError):
    """Ctrl-C or SIGTERM stopped a build or an audit: what was half-written is rolled back, and
    its ``build_runs`` row and Prefect flow run say cancelled."""

    exit_code = 130


class LLMError(InspireError):
    """An LLM call failed for good."""


class BudgetExceeded(InspireError):
    """The next LLM call would pass the build's budget (``INSPIRE_LLM_BUDGET_USD``): it is not
    made, and the build stops with what it did kept in the call log, so a rerun with a larger
    budget resumes. Not an :class:`LLMError`, which is one target's failure: no target can go
    on."""
