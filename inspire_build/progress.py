"""A build's progress by stage, for whoever watches it in this process: `inspire build` draws a
progress bar per stage on a terminal. (Prefect's UI follows the build's progress artifact and
its log lines; those reach every process, this only the one the build runs in.)"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any, cast

Watcher = Callable[[str, int, int], None]
# Sends what other printers write (Prefect's console lines) through a file while a block runs.
Redirect = Callable[[IO[str]], contextlib.AbstractContextManager[None]]
_watchers: list[Watcher] = []


def advance(stage: str, done: int, total: int) -> None:
    """``done`` of ``total`` steps of ``stage`` are behind the build."""
    for watch in list(_watchers):
        watch(stage, done, total)


@contextlib.contextmanager
def watching(watch: Watcher) -> Iterator[None]:
    """Call ``watch(stage, done, total)`` at each step while the block runs."""
    _watchers.append(watch)
    try:
        yield
    finally:
        _watchers.remove(watch)


@contextlib.contextmanager
def bars(console: Any = None, above: Redirect | None = None) -> Iterator[None]:
    """A rich progress bar per stage while the block runs, on stderr when it is a terminal
    (elsewhere the log lines tell the same). What ``above`` redirects (Prefect's console lines,
    prefect_runtime.py) prints above the bars, line by line."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    shown: dict[str, Any] = {}
    with Progress(*columns, console=console, redirect_stderr=False) as progress:

        def watch(stage: str, done: int, total: int) -> None:
            if stage not in shown:
                shown[stage] = progress.add_task(stage, total=total)
            progress.update(shown[stage], completed=done, total=total)

        redirected = above(cast(IO[str], _Above(console))) if above else contextlib.nullcontext()
        with redirected, watching(watch):
            yield


class _Above:
    """A file whose lines print through a rich console, above its live display."""

    def __init__(self, console: Any) -> None:
        self._console = console
        self._pending = ""

    def write(self, text: str) -> int:
        from rich.text import Text

        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        for line in lines:
            self._console.print(Text.from_ansi(line), soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return bool(getattr(sys.stderr, "isatty", lambda: False)())
