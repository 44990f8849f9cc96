"""The provider's limits on LLM calls, shared by every thread of a build: requests and tokens per
minute (``llm_rpm``, ``llm_tpm``), paced evenly rather than spent in a burst, and the server's
own word when it sends one (``retry-after``, or ``x-ratelimit-remaining-*`` at 0 with its
``x-ratelimit-reset-*``), which pauses every call until then.

Pure but for the clock and the sleep it is given: tests drive it with a fake clock.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

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


class CallLimiter:
    """Paces LLM calls under ``rpm`` requests and ``tpm`` tokens a minute (None: no limit), and
    holds every call while the server has asked to wait."""

    def __init__(
        self,
        rpm: int | None,
        tpm: int | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.rpm, self.tpm = rpm, tpm
        self._clock, self._sleep = clock, sleep
        self._next_request = self._next_tokens = self._paused_until = 0.0
        self._lock = threading.Lock()

    def acquire(self, tokens: int) -> float:
        """Wait for this call's turn (``tokens``: its estimated prompt and answer); returns the
        seconds waited."""
        with self._lock:
            now = self._clock()
            slot = max(now, self._next_request, self._next_tokens, self._paused_until)
            if self.rpm:
                self._next_request = slot + 60.0 / self.rpm
            if self.tpm:
                self._next_tokens = slot + 60.0 * tokens / self.tpm
        if slot > now:
            self._sleep(slot - now)
        return slot - now

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


class InFlight(Protocol):
    """Bounds the chat calls in flight: :class:`Slots` in one process, a semaphore a Dask
    cluster shares (``dask_runner.SharedSlots``)."""

    def held(self, urgency: tuple[int, ...] = ()) -> contextlib.AbstractContextManager[None]:
        """Hold a slot for one call."""
        ...


class Slots:
    """At most ``size`` chat calls in flight over every thread. A freed slot goes to the waiting
    call with the lowest ``urgency`` (then the one that came first), not to whichever thread the
    scheduler wakes: the build asks first the calls with the most of their target's chain still
    ahead of them, so that no target is left alone with a long chain when the rest are done.

    A release hands its slot to that one caller and wakes it alone: with hundreds of calls
    waiting, waking them all on every release (and each taking the GIL to look) cost a build
    seconds of CPU."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.most_held = 0  # the most held at once: what the tests read
        self._held = 0
        # a heap of (urgency, arrival, the waiter's wake-up); while it is not empty, every slot
        # is held, so a newcomer queues behind it
        self._waiting: list[tuple[tuple[int, ...], int, threading.Event]] = []
        self._arrivals = itertools.count()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def held(self, urgency: tuple[int, ...] = ()) -> Iterator[None]:
        self.acquire(urgency)
        try:
            yield
        finally:
            self.release()

    def acquire(self, urgency: tuple[int, ...] = ()) -> None:
        with self._lock:
            if self._held < self.size:
                self._take()
                return
            turn = threading.Event()
            heapq.heappush(self._waiting, (urgency, next(self._arrivals), turn))
        turn.wait()  # the releasing thread took the slot on this caller's behalf

    def release(self) -> None:
        with self._lock:
            self._held -= 1
            if self._waiting:
                *_, turn = heapq.heappop(self._waiting)
                self._take()
                turn.set()

    def _take(self) -> None:
        self._held += 1
        self.most_held = max(self.most_held, self._held)
