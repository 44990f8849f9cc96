"""Counting how many are in flight at once, for the tests of concurrency limits."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class InFlight:
    """Counts the calls inside and the most at once (``most``). The first ones wait until
    ``together`` are inside (10 s at most from the first: code that never has that many in
    flight fails on ``most``, slowly, not forever), then each stays ``stay`` seconds, where more
    than allowed would meet. A fixed stay alone let a loaded machine end the first call before
    the last had started."""

    def __init__(self, together: int = 1, stay: float = 0.0, cap_s: float = 10.0) -> None:
        self.together, self.stay, self.cap_s = together, stay, cap_s
        self.now = self.most = 0
        self._changed = threading.Condition()
        self._until: float | None = None

    @contextmanager
    def inside(self) -> Iterator[None]:
        with self._changed:
            self.now += 1
            self.most = max(self.most, self.now)
            self._changed.notify_all()
            self._until = self._until or time.monotonic() + self.cap_s
            left = max(0.0, self._until - time.monotonic())
            self._changed.wait_for(lambda: self.most >= self.together, timeout=left)
        time.sleep(self.stay)
        try:
            yield
        finally:
            with self._changed:
                self.now -= 1
