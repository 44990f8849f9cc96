"""Stage progress: watchers see each step, a terminal gets a bar per stage that ends full,
anything else no bar at all."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import IO

from rich.console import Console

from inspire_build import progress


def test_watchers_see_every_step_while_they_watch() -> None:
    seen: list[tuple[str, int, int]] = []
    with progress.watching(lambda *step: seen.append(step)):
        progress.advance("lineage", 1, 3)
        progress.advance("lineage", 3, 3)
    progress.advance("lineage", 4, 4)  # after the block: no one watches
    assert seen == [("lineage", 1, 3), ("lineage", 3, 3)]


def test_a_terminal_gets_a_bar_per_stage() -> None:
    screen = io.StringIO()
    with progress.bars(Console(file=screen, force_terminal=True, width=100)):
        progress.advance("lineage", 2, 7)
        progress.advance("lineage", 7, 7)
        progress.advance("briefs", 5, 5)
    text = screen.getvalue()
    assert "7/7" in text and "5/5" in text and "lineage" in text and "briefs" in text


def test_elsewhere_no_bar() -> None:
    screen = io.StringIO()
    with progress.bars(Console(file=screen, force_terminal=False)):
        progress.advance("lineage", 7, 7)
    assert screen.getvalue() == ""


def test_lines_print_whole_above_the_bars() -> None:
    screen = io.StringIO()
    above = progress._Above(Console(file=screen, force_terminal=False, width=100))
    above.write("12:00 | INFO | lin")
    assert screen.getvalue() == ""
    above.write("eage done\nnext")
    assert screen.getvalue() == "12:00 | INFO | lineage done\n"


def test_what_above_redirects_prints_above_the_bars_while_they_show() -> None:
    screen = io.StringIO()
    files: list[object] = []

    @contextlib.contextmanager
    def above(file: IO[str]) -> Iterator[None]:
        files.append(file)
        yield
        files.append(None)

    with progress.bars(Console(file=screen, force_terminal=True, width=100), above):
        assert len(files) == 1
        files[0].write("12:00 | INFO | lineage done\n")  # type: ignore[attr-defined]
    assert files[1] is None and "12:00 | INFO | lineage done" in screen.getvalue()
    with progress.bars(Console(file=io.StringIO(), force_terminal=False), above):
        pass
    assert len(files) == 2  # no bars, nothing redirected
