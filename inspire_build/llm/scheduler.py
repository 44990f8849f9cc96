"""When each chat call goes: its turn under the provider's limits, then a slot among the calls in
flight, the most urgent call first; and a target's independent calls, run at once.

The limits are ``llm_rpm`` and ``llm_tpm``, paced evenly by a :class:`~inspire_build.pacing.Pacer`
shared by every thread of a build, with the server's own word when it sends one. A 429 that
outlasts the client's own retries waits as the server asks and asks again, without failing the
target, until ``llm_rate_wait_max_s`` of waiting is spent. At most ``llm_concurrency`` calls are
in flight (:class:`Slots` in one process; a Dask cluster shares a semaphore instead).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Generic, Protocol, TypeVar

from inspire_build.config import Settings
from inspire_build.pacing import Pacer

T = TypeVar("T")


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


class RateLimited(Exception):
    """The server refused a call for its rate (a 429 the client's own retries did not outlast):
    ``headers`` say how long to wait; ``error`` is the backend's own, raised once the wait is
    spent."""

    def __init__(self, headers: Mapping[str, str], error: Exception) -> None:
        super().__init__(str(error))
        self.headers, self.error = headers, error


class Scheduler:
    """The turn of each chat call: under the limits (``pacer``, shared by every thread: a Dask
    worker's is its share of the cluster's rpm and tpm), then in a slot (``slots``), which goes
    to the call of lowest ``urgency`` (by its step), then to the target of lowest rank."""

    def __init__(
        self,
        settings: Settings,
        urgency: Mapping[str, int] | None = None,
        slots: InFlight | None = None,
        pacer: Pacer | None = None,
    ) -> None:
        self.pacer = pacer or Pacer.per_minute(settings.llm_rpm, settings.llm_tpm)
        self.slots = slots or Slots(settings.llm_concurrency)
        self.urgency = dict(urgency or {})
        self.wait_max_s = settings.llm_rate_wait_max_s

    def urgency_of(self, step: str, rank: int) -> tuple[int, int]:
        """A call's urgency: its step's (an unknown step after every known one), then its rank."""
        return (self.urgency.get(step, len(self.urgency)), rank)

    def sent(self, send: Callable[[], Any], tokens: int, urgency: tuple[int, ...]) -> Any:
        """``send()`` (one chat call, which may raise :class:`RateLimited`) in its turn under the
        limits and in a slot; its answer's headers (and a 429's) are the server's word."""
        waited = 0.0
        while True:
            waited += self.pacer.acquire(tokens)
            try:
                with self.slots.held(urgency):
                    raw = send()
            except RateLimited as limited:
                # the server's word, else a second: the next acquire() sleeps it
                pause = self.pacer.heard(limited.headers) or self.pacer.pause(1.0)
                if waited + pause > self.wait_max_s:
                    raise limited.error from None
                continue
            self.pacer.heard(raw.headers)
            return raw


def each(
    calls: Sequence[Callable[[], T]],
    handed: Callable[[Callable[[], T]], Callable[[], T]] | None,
    width: int,
) -> list[T]:
    """Run independent ``calls`` at once, up to ``width``, each made ready for a thread of its
    own by ``handed`` (here, before any starts); their results in order, or the first error in
    order once all have ended. One after another where they may not run beside (no ``handed``)."""
    if len(calls) < 2 or handed is None:
        return [call() for call in calls]
    runs = [handed(call) for call in calls]
    with ThreadPoolExecutor(min(len(calls), width), thread_name_prefix="llm-parts") as pool:
        futures = [pool.submit(run) for run in runs]
    return [future.result() for future in futures]


class Later(Generic[T]):
    """A call that may run in a thread of its own (``LLM.later``): started by :meth:`start`,
    else run by :meth:`result` in the asking thread; never run twice."""

    def __init__(
        self, call: Callable[[], T], shared: Callable[[Callable[[], T]], Callable[[], T]] | None
    ) -> None:
        self._call, self._shared = call, shared
        self._future: Future[T] | None = None

    def start(self) -> None:
        if self._shared is None or self._future is not None:
            return
        run, future = self._shared(self._call), Future[T]()
        self._future = future

        def worker() -> None:
            try:
                future.set_result(run())
            except BaseException as error:  # the asker's result() raises it
                future.set_exception(error)

        threading.Thread(target=worker, name="llm-later", daemon=True).start()

    def result(self) -> T:
        if self._future is None:
            self._shared = None  # run here, now: a start() after this does nothing
            return self._call()
        return self._future.result()

    def settle(self) -> None:
        """Wait until a started call has ended, whatever its outcome (its rows are logged with
        the asker's)."""
        if self._future is not None:
            wait([self._future])
