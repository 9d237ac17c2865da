"""AdaptiveLimit on plain numbers: overload halves the limit, flat latency grows it, queueing latency shrinks it.

The limiter has no clock: each test plays a server by handing it latencies, so every step is deterministic.
"""

import pickle
import threading
import time
from dataclasses import replace

import pytest

from rewardmill.transforms.judges.concurrency import AdaptiveLimit


def play(limit: AdaptiveLimit, latency, rounds: int) -> list[int]:
    """`rounds` windows in steady state (every answer's slot taken at once by the next request, so each was sent
    with the limit in flight): each answered in `latency(in_flight)` seconds. The limit after each round."""
    seen = []
    for _ in range(rounds):
        tickets = [limit.acquire() for _ in range(limit.limit)]
        for ticket in tickets:
            limit.succeeded(replace(ticket, in_flight=len(tickets)), latency(len(tickets)))
        seen.append(limit.limit)
    return seen


def parallel(in_flight: int) -> float:
    return 1.0  # a server with a core per request: latency does not depend on concurrency


def serial(in_flight: int) -> float:
    return float(in_flight)  # one at a time: with c in flight each waits for all c


def test_starts_at_one_and_ramps_additively_to_the_ceiling_while_latency_stays_flat():
    limit = AdaptiveLimit(ceiling=4)
    assert limit.limit == 1
    assert play(limit, parallel, 5) == [1, 2, 3, 4, 4]  # the first window at 1 takes two answers
    assert limit.stats() == {"concurrency_limit": 4, "concurrency_peak": 4, "concurrency_decreases": 0}


def test_a_serial_server_is_held_at_one_or_two_and_never_sees_the_ceiling():
    limit = AdaptiveLimit(ceiling=8)
    seen = play(limit, serial, 12)
    assert max(seen) <= 2 and limit.peak == 2
    assert limit.decreases >= 4  # each probe at 2 showed latency doubling with concurrency, and was taken back


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        (8, 4),  # halved
        (5, 2),  # halved, rounded down
        (1, 1),  # the floor
    ],
)
def test_overload_halves_the_limit_down_to_the_floor(start, expected):
    limit = AdaptiveLimit(ceiling=8, initial=start)
    limit.overloaded(limit.acquire())
    assert limit.limit == expected and limit.decreases == (start != expected)


def test_a_burst_of_failures_sent_under_one_limit_lowers_it_once():
    """All eight requests time out together: they saw the same limit, so it halves once, not to the floor."""
    limit = AdaptiveLimit(ceiling=8, initial=8)
    tickets = [limit.acquire() for _ in range(8)]
    for ticket in tickets:
        limit.overloaded(ticket)
    assert limit.limit == 4 and limit.decreases == 1
    limit.overloaded(limit.acquire())  # sent under the new limit: it counts
    assert limit.limit == 2 and limit.decreases == 2


def test_latency_that_grows_with_concurrency_drops_the_limit_to_the_throughput_it_buys():
    """A server that runs two at a time: with c in flight latency is c/2 of the baseline, so 6 slots buy 2x."""
    limit = AdaptiveLimit(ceiling=8, initial=1)
    play(limit, parallel, 2)  # baseline 1.0 s
    limit.limit = 6  # as if it had ramped there
    play(limit, lambda c: max(1.0, c / 2), 1)
    assert limit.limit == 2 and limit.decreases == 1


def test_latency_a_little_above_baseline_holds_the_limit():
    limit = AdaptiveLimit(ceiling=8, initial=1)
    play(limit, parallel, 3)
    assert limit.limit == 3
    play(limit, lambda c: 1.8, 2)  # beyond the tolerance (1.5), but 3 in flight still buy 1.7x
    assert limit.limit == 3 and limit.decreases == 0


def test_answers_sent_under_an_older_limit_do_not_move_the_new_one():
    limit = AdaptiveLimit(ceiling=8, initial=4)
    old = limit.acquire()
    limit.overloaded(limit.acquire())  # 4 -> 2, a new generation
    limit.succeeded(old, 100.0)  # a slow answer from before: neither a baseline nor a queueing signal
    assert limit.limit == 2 and limit.baseline is None


def test_a_window_that_never_filled_the_limit_does_not_raise_it():
    """Fewer requests than slots: flat latency says nothing about more concurrency."""
    limit = AdaptiveLimit(ceiling=8, initial=4)
    for _ in range(4):
        limit.succeeded(limit.acquire(), 1.0)  # one in flight at a time
    assert limit.limit == 4


@pytest.mark.parametrize(
    ("cap", "expected"),
    [
        (None, 8),  # no cap: flat latency ramps to the ceiling
        (2.5, 8),  # 1.0 s answers: even queued behind one more they stay under 2.5 s
        (1.9, 1),  # queued behind one more, a 1.0 s answer would take 2.0 s: past the cap, so it never grows
    ],
)
def test_the_latency_cap_keeps_a_queue_away_from_the_timeout(cap, expected):
    limit = AdaptiveLimit(ceiling=8, latency_cap=cap)
    play(limit, parallel, 10)
    assert limit.limit == expected


def test_answers_above_the_latency_cap_step_the_limit_down():
    limit = AdaptiveLimit(ceiling=8, initial=4, latency_cap=2.5)
    play(limit, lambda c: 2.6, 1)  # flat against no baseline yet, but past the cap at 4 in flight
    assert limit.limit == 3 and limit.decreases == 1


def test_pinned_limit_is_the_ceiling_and_never_moves():
    limit = AdaptiveLimit(ceiling=8, adaptive=False)
    assert limit.limit == 8
    limit.overloaded(limit.acquire())
    play(limit, serial, 2)
    assert limit.stats() == {"concurrency_limit": 8, "concurrency_peak": 8, "concurrency_decreases": 0}


@pytest.mark.parametrize(("ceiling", "floor"), [(0, 1), (4, 0), (2, 3)])
def test_impossible_bounds_are_refused(ceiling, floor):
    with pytest.raises(ValueError, match="floor"):
        AdaptiveLimit(ceiling=ceiling, floor=floor)


def test_pickles_as_settings_and_starts_over():
    limit = AdaptiveLimit(ceiling=6, tolerance=0.25)
    play(limit, parallel, 4)
    held = limit.acquire()
    copy = pickle.loads(pickle.dumps(limit))
    assert (copy.ceiling, copy.tolerance, copy.limit, copy.peak, copy.baseline) == (6, 0.25, 1, 1, None)
    assert copy.acquire().in_flight == 1  # the original's slot is not the copy's
    limit.released(held)


def test_threads_never_hold_more_slots_than_the_limit():
    """16 threads through a limit that ramps from 1 to 3: at no moment are more than `limit` inside."""
    limit = AdaptiveLimit(ceiling=3)
    inside, most, lock = 0, 0, threading.Lock()

    def work():
        nonlocal inside, most
        for _ in range(5):
            ticket = limit.acquire()
            with lock:
                inside += 1
                most = max(most, inside)
                assert inside <= limit.limit
            time.sleep(0.002)
            with lock:
                inside -= 1
            limit.succeeded(ticket, 1.0)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert most == 3 and limit.limit == 3 and limit._in_flight == 0
