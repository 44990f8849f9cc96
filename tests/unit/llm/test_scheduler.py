"""llm/scheduler.py: the slots of calls in flight, which go to the most urgent call first; and a
call's turn under the pacer, where a 429 waits as the server asks, up to llm_rate_wait_max_s."""

from __future__ import annotations

import threading
import time
import types
from typing import Any

import pytest

from inspire_build.config import Settings
from inspire_build.llm.scheduler import RateLimited, Scheduler, Slots
from inspire_build.pacing import Pacer
from tests.in_flight import InFlight
from tests.unit.test_pacing import FakeTime  # a clock that sleeps by moving on


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
    flight = InFlight(together=3, stay=0.01)

    def work() -> None:
        with slots.held((0,)), flight.inside():
            pass

    threads = [threading.Thread(target=work) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert flight.most == slots.most_held == 3


class Limited(Exception):
    """A backend's own 429 error, which its send() raises as RateLimited."""


def test_a_429_waits_as_the_server_asks_and_gives_up_with_the_backends_error() -> None:
    fake = FakeTime()
    pacer = Pacer(clock=fake.clock, sleep=fake.sleep)
    scheduler = Scheduler(Settings(llm_rate_wait_max_s=5.0), pacer=pacer)  # type: ignore[call-arg]
    answered = types.SimpleNamespace(headers={})
    replies: list[Any] = [RateLimited({"retry-after": "2"}, Limited()), RateLimited({}, Limited())]

    def send() -> Any:
        if replies:
            raise replies.pop(0)
        return answered

    assert scheduler.sent(send, 10, (0,)) is answered
    assert fake.slept == [2.0, 1.0]  # the server's word, else a second
    error = Limited("still limited")

    def refused() -> Any:
        raise RateLimited({"retry-after": "3"}, error)

    with pytest.raises(Limited) as raised:  # 3 s waited, and 3 more would pass 5
        scheduler.sent(refused, 10, (0,))
    assert raised.value is error and fake.slept == [2.0, 1.0, 3.0]


def test_an_unknown_step_waits_behind_every_known_one_then_the_rank_decides() -> None:
    scheduler = Scheduler(Settings(), urgency={"brief": 0, "grade": 1})
    assert scheduler.urgency_of("brief", 5) == (0, 5)
    assert scheduler.urgency_of("something else", 0) == (2, 0) > scheduler.urgency_of("grade", 9)
