"""pacing.py on a fake clock: the one pacer of HTTP sources and the LLM endpoint. Calls spaced an
interval apart (and their departures, for servers that count exact windows), paced under
requests and tokens a minute, and held while the server asks every call to wait."""

from __future__ import annotations

import pytest

from inspire_build.pacing import Pacer, reset_seconds, server_wait


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
    limiter = Pacer.per_minute(120, None, clock=fake.clock, sleep=fake.sleep)
    waited = [limiter.acquire(tokens=1000) for _ in range(4)]
    assert waited == [0.0, 0.5, 0.5, 0.5]  # 60 s / 120 requests, each waiting its slot
    assert fake.now == 101.5


def test_tokens_per_minute_space_large_calls_further() -> None:
    fake = FakeTime()
    limiter = Pacer.per_minute(600, 60_000, clock=fake.clock, sleep=fake.sleep)
    limiter.acquire(tokens=3000)  # next token slot: 60 s * 3000 / 60000 = 3 s later
    assert limiter.acquire(tokens=10) == pytest.approx(3.0)
    assert limiter.acquire(tokens=10) == pytest.approx(0.1)  # then rpm's 0.1 s is the longer


def test_a_retry_after_holds_every_call_until_it_passes() -> None:
    fake = FakeTime()
    limiter = Pacer.per_minute(None, None, clock=fake.clock, sleep=fake.sleep)
    assert limiter.acquire(tokens=5) == 0.0
    assert limiter.heard({"retry-after": "2"}) == 2.0
    assert limiter.acquire(tokens=5) == 2.0
    assert limiter.acquire(tokens=5) == 0.0  # the pause is over
    assert limiter.heard({"x-ratelimit-remaining-requests": "12"}) is None
    assert limiter.pause(0.5) == 0.5 and limiter.acquire(tokens=5) == 0.5  # a pause of our own


def test_rate_limiter_spacing_is_exact_with_a_fake_clock() -> None:
    now = [0.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)

    limiter = Pacer(0.5, clock=lambda: now[0], sleep=sleep)
    for _ in range(4):
        limiter.acquire()
    assert waits == [0.5, 1.0, 1.5]


def _fake_clock_limiter(interval: float) -> tuple[Pacer, list[float], list[float]]:
    """A limiter on a fake clock that its sleeps move on; the clock and the sleeps, to read."""
    now, waits = [0.0], []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    return Pacer(interval, clock=lambda: now[0], sleep=sleep), now, waits


def test_a_request_that_leaves_late_pushes_the_next_a_full_interval_after_it() -> None:
    limiter, now, waits = _fake_clock_limiter(0.5)
    limiter.acquire()  # the slot at 0
    now[0] = 0.2
    limiter.sent()  # it left 0.2 s late
    limiter.acquire()  # not at 0.5, which would be 0.3 s after it left
    assert now[0] == pytest.approx(0.7) and waits == [pytest.approx(0.5)]
    limiter.sent()  # on time: nothing waits
    assert waits == [pytest.approx(0.5)]


def test_a_slot_taken_before_another_request_left_late_still_leaves_an_interval_after_it() -> None:
    limiter, now, waits = _fake_clock_limiter(0.5)
    # Threads A and B took the slots at 0 and 0.5 before either left; A leaves 0.3 s late.
    now[0] = 0.3
    limiter.sent()
    now[0] = 0.5
    limiter.sent()  # B's slot has come, but A left only 0.2 s ago: B waits 0.3 s more
    assert now[0] == pytest.approx(0.8) and waits == [pytest.approx(0.3)]
