"""Prefect's console in our processes (the CLI's in-process flows, the served deployments)."""

from __future__ import annotations

import logging

from inspire_build.errors import InspireError


def one_line_errors_in_prefect_console() -> None:
    """Our errors are told in one line (by the CLI's main(), or by the flow run's final state in
    a served process); Prefect's console repeats no traceback of them.

    Prefect's API handler (on the flow- and task-run loggers) sees a record before the console
    handler (on "prefect" and the root) does, so the Prefect UI still holds the traceback.
    """
    from prefect.logging.handlers import PrefectConsoleHandler

    def untraced(record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], InspireError):
            record.exc_info, record.exc_text = None, None
        return True

    for logger in (logging.getLogger(), logging.getLogger("prefect")):
        for handler in logger.handlers:
            if isinstance(handler, PrefectConsoleHandler):
                handler.addFilter(untraced)
