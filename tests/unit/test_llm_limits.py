"""The LLM call limiter on a fake clock: pacing under rpm and tpm, and the server's word; and the
slots of calls in flight, which go to the most urgent call first."""

from __future__ import annotations

import threading
import time

import pytest

from inspire_build.llm_limits import CallLimiter, Slots, reset_seconds, server_wait


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("20ms", 0.02), ("1.5s", 1.5), ("6m0s", 360.0), ("1m30.5s", 90.5), ("0s", 0.0)],
)
def test_reset_durations_in_openais_format(text: str, seconds: float) -> None:
    assert reset_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "5", "1h"])
def test_what_is_not_a_duration_is_none(text: str) -> None:
    assert reset_seconds(text) is None


def test_the_server_wait_prefers_retry_after_then_an_exhausted_limits_reset() -> None:
    assert server_wait({"Retry-After": "7", "x-ratelimit-remaining-requests": "0"}) == 7.0
    exhausted = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1.5s",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    assert server_wait(exhausted) == 360.0
    # room left: the resets are no reason to wait
    assert (
        server_wait({"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "9s"})
        is None
    )
    assert server_wait({"retry-after": "a date we do not read"}) is None


def test_calls_are_paced_evenly_under_rpm() -> None:
    fake = FakeTime()
    limiter = CallLimiter(rpm=120, tpm=None, clock=fake.clock, sleep=fake.sleep)
    waited = [limiter.acquire(tokens=1000) for _ in range(4)]
    assert waited == [0.0, 0.5, 0.5, 0.5]  # 60 s / 120 requests, each waiting its slot
    assert fake.now == 101.5


def test_tokens_per_minute_space_large_calls_further() -> None:
    fake = FakeTime()
    limiter = CallLimiter(rpm=600, tpm=60_000, clock=fake.clock, sleep=fake.sleep)
    limiter.acquire(tokens=3000)  # next token slot: 60 s * 3000 / 60000 = 3 s later
    assert limiter.acquire(tokens=10) == pytest.approx(3.0)
    assert limiter.acquire(tokens=10) == pytest.approx(0.1)  # then rpm's 0.1 s is the longer


def test_a_retry_after_holds_every_call_until_it_passes() -> None:
    fake = FakeTime()
    limiter = CallLimiter(rpm=None, tpm=None, clock=fake.clock, sleep=fake.sleep)
    assert limiter.acquire(tokens=5) == 0.0
    assert limiter.heard({"retry-after": "2"}) == 2.0
    assert limiter.acquire(tokens=5) == 2.0
    assert limiter.acquire(tokens=5) == 0.0  # the pause is over
    assert limiter.heard({"x-ratelimit-remaining-requests": "12"}) is None
    assert limiter.pause(0.5) == 0.5 and limiter.acquire(tokens=5) == 0.5  # a pause of our own


def _waiters(
    slots: Slots, urgencies: list[tuple[int, ...]], taken: list[tuple[int, ...]]
) -> list[threading.Thread]:
    """A thread per urgency, each queued (in this order) behind the held slot, noting its turn."""

    def take(urgency: tuple[int, ...]) -> None:
        with slots.held(urgency):
            taken.append(urgency)

    threads = []
    for urgency in urgencies:
        threads.append(threading.Thread(target=take, args=(urgency,)))
        threads[-1].start()
        while len(slots._waiting) < len(threads):  # queued before the next one comes
            time.sleep(0.001)
    return threads


def test_a_free_slot_goes_to_the_most_urgent_call_then_the_first_come() -> None:
    slots = Slots(1)
    taken: list[tuple[int, ...]] = []
    slots.acquire()
    threads = _waiters(slots, [(3, 0), (0, 5), (2, 1), (0, 2), (0, 2)], taken)
    slots.release()
    for thread in threads:
        thread.join(5)
    assert taken == [(0, 2), (0, 2), (0, 5), (2, 1), (3, 0)]
    assert slots.most_held == 1


def test_slots_hold_at_most_their_size() -> None:
    slots = Slots(3)
    held, most = [0], [0]
    lock = threading.Lock()

    def work() -> None:
        with slots.held((0,)):
            with lock:
                held[0] += 1
                most[0] = max(most[0], held[0])
            time.sleep(0.01)
            with lock:
                held[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert most[0] == slots.most_held == 3
