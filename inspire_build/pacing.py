"""The one pacer of calls to a server that counts them: each source's requests (``http.py``) and
the LLM endpoint's chat calls (``llm/scheduler.py``).

A :class:`Pacer` is shared by every thread that calls the server. It hands out slots evenly
rather than letting calls go in a burst: at least ``interval_s`` apart, and, where calls weigh
tokens (an LLM's prompt and answer), far enough apart that ``tokens_per_minute`` holds. When the
server asks every call to wait (``retry-after``, or an ``x-ratelimit-remaining-*`` of 0 with its
``x-ratelimit-reset-*``), every call waits until then.

Pure but for the clock and the sleep it is given: tests drive it with a fake clock.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Mapping

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?")


def reset_seconds(value: str) -> float | None:
    """OpenAI's reset durations ("20ms", "1.5s", "6m0s", "1m30.5s") in seconds; None if not one."""
    found = _DURATION.fullmatch(value.strip())
    if not value.strip() or found is None or not any(found.groups()):
        return None
    minutes, seconds, millis = (float(g) if g else 0.0 for g in found.groups())
    return minutes * 60 + seconds + millis / 1000


def server_wait(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks every call to wait: its ``retry-after`` (seconds), else the reset
    of a limit whose remaining count is 0; None when it asks nothing."""
    lowered = {k.lower(): v for k, v in headers.items()}
    retry_after = lowered.get("retry-after", "").strip()
    try:
        if retry_after:
            return max(0.0, float(retry_after))
    except ValueError:
        pass
    waits = [
        reset_seconds(lowered.get(f"x-ratelimit-reset-{kind}", ""))
        for kind in ("requests", "tokens")
        if lowered.get(f"x-ratelimit-remaining-{kind}", "").strip() == "0"
    ]
    known = [w for w in waits if w is not None]
    return max(known) if known else None


class Pacer:
    """Spaces calls at least ``interval_s`` apart (0: no limit) across every thread that shares
    it, and under ``tokens_per_minute`` (None: no limit) where they weigh tokens; holds every
    call while the server has asked to wait; and makes requests leave (:meth:`sent`)
    ``margin_s`` more than an interval apart."""

    def __init__(
        self,
        interval_s: float = 0.0,
        *,
        tokens_per_minute: int | None = None,
        margin_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval_s, self.tokens_per_minute, self.margin_s = (
            interval_s,
            tokens_per_minute,
            margin_s,
        )
        self._clock, self._sleep = clock, sleep
        self._next = self._next_tokens = self._paused_until = 0.0
        self._last_sent = -math.inf  # the first request leaves at once
        self._lock = threading.Lock()

    @classmethod
    def per_minute(
        cls,
        requests: int | None,
        tokens: int | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Pacer:
        """A pacer for ``requests`` and ``tokens`` a minute (None: no limit), as an LLM provider
        states its limits (rpm, tpm)."""
        interval_s = 60.0 / requests if requests else 0.0
        return cls(interval_s, tokens_per_minute=tokens, clock=clock, sleep=sleep)

    def acquire(self, tokens: int = 0) -> float:
        """Wait for this call's turn (``tokens``: what it weighs, its estimated prompt and
        answer); returns the seconds waited."""
        with self._lock:
            now = self._clock()
            slot = max(now, self._next, self._next_tokens, self._paused_until)
            self._next = slot + self.interval_s
            if self.tokens_per_minute:
                self._next_tokens = slot + 60.0 * tokens / self.tokens_per_minute
        if slot > now:
            self._sleep(slot - now)
        return slot - now

    def sent(self) -> None:
        """A request leaves now: at least an interval (and the margin) after the last one left,
        waiting if need be, and the next slot a full interval after it. A request that left
        some ms after its slot (a busy machine, or another thread's request that left late)
        would otherwise reach a server that counts exact windows (S2, arXiv) too soon."""
        while True:
            with self._lock:
                now = self._clock()
                due = self._last_sent + self.interval_s + self.margin_s
                if now >= due:
                    self._last_sent = now
                    self._next = max(self._next, now + self.interval_s)
                    return
            self._sleep(due - now)

    def heard(self, headers: Mapping[str, str]) -> float | None:
        """Take the server's word from a response's (or a 429's) headers; returns the pause it
        asked for, if any."""
        wait = server_wait(headers)
        return None if wait is None else self.pause(wait)

    def pause(self, seconds: float) -> float:
        """Hold every call for ``seconds`` from now (unless held longer already); returns them."""
        with self._lock:
            self._paused_until = max(self._paused_until, self._clock() + seconds)
        return seconds
