"""OpenAIJudgeClient's adaptive concurrency against real HTTP servers on 127.0.0.1 (paced_server.PacedServer).

The serial server stands in for `transformers serve` on a CPU (one request at a time, the rest queue), because the
real one is too slow and its timing too variable for a unit test; the README's measurement on the real server is
bench/judge_concurrency.py. With `max_concurrency: 8` pinned (the client before the adaptive limit), queued requests
hit the per-attempt timeout, their retries queue behind the abandoned work, and calls fail; the adaptive client holds
the serial server at one or two in flight, loses nothing, and is no slower than concurrency 1. Against a server with
room for every request, the limit ramps above 1.
"""

import time

import pytest

from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, Sampling
from rewardmill.transforms.judges.openai_client import OpenAIJudgeClient
from tests.transforms.judges.paced_server import PacedServer

SERVICE = 0.1  # seconds per request on the paced server
TIMEOUT = 0.7  # per attempt: seven services; 8 queued requests need eight


def requests(n: int) -> list[JudgeRequest]:
    return [JudgeRequest(({"role": "user", "content": f"question {i}"},), Sampling(max_tokens=1)) for i in range(n)]


def run(server: PacedServer, n: int, **backend) -> tuple[OpenAIJudgeClient, list, float]:
    config = {"kind": "openai", "model": "m", "base_url": server.url + "/v1", "request_timeout": TIMEOUT, **backend}
    client = OpenAIJudgeClient(BackendConfig(**config), backoff=0.01, max_backoff=0.05)
    start = time.monotonic()
    responses = client.complete(requests(n))
    return client, responses, time.monotonic() - start


@pytest.mark.slow
def test_pinned_concurrency_8_loses_calls_on_a_serial_server():
    """The behaviour before the adaptive limit, as the new user met it: a burst of 8 on a one-at-a-time server."""
    with PacedServer(SERVICE, serial=True) as server:
        client, responses, _ = run(server, 16, max_concurrency=8, max_retries=2, adaptive_concurrency=False)
    usage = client.usage()
    assert server.max_in_flight > 8  # the 8 in flight and the abandoned ones the server still works on
    assert usage["failures"] > 0 and sum(r.error is not None for r in responses) == usage["failures"]
    assert usage["retries"] > usage["failures"]  # every failure spent its retries first
    assert (usage["concurrency_limit"], usage["concurrency_peak"], usage["concurrency_decreases"]) == (8, 8, 0)


@pytest.mark.slow
def test_adaptive_concurrency_finishes_a_serial_server_without_failures_as_fast_as_one_at_a_time():
    with PacedServer(SERVICE, serial=True) as server:
        one, one_responses, one_seconds = run(server, 16, max_concurrency=1, max_retries=2)
    with PacedServer(SERVICE, serial=True) as server:
        client, responses, seconds = run(server, 16, max_concurrency=8, max_retries=2)
    assert all(r.error is None and r.text == "Yes" for r in one_responses + responses)
    usage = client.usage()
    assert usage["failures"] == 0 and usage["retries"] == 0 and usage["requests"] == 16
    assert server.max_in_flight <= 3 and usage["concurrency_peak"] <= 3  # never a burst of 8
    assert seconds <= one_seconds * 1.25 + 0.3, (seconds, one_seconds)  # slack for a loaded machine


def test_adaptive_concurrency_ramps_up_on_a_server_that_takes_requests_in_parallel():
    with PacedServer(SERVICE, serial=False) as server:
        client, responses, _ = run(server, 40, max_concurrency=8, max_retries=2)
    usage = client.usage()
    assert all(r.error is None for r in responses) and usage["failures"] == 0
    assert usage["concurrency_peak"] >= 3 and server.max_in_flight >= 3  # latency stayed flat: more bought more
    assert server.max_in_flight <= 8  # the ceiling holds


@pytest.mark.slow
def test_overload_answers_halve_the_limit_and_retries_wait_for_a_slot():
    """A server with room for all that answers 503 to requests 20-27 (when the limit has ramped to about 5): the
    limit halves, once per generation however many of one burst are refused, the retries go out within the lowered
    limit, and everything completes."""
    with PacedServer(SERVICE, serial=False, refuse=range(20, 28)) as server:
        client, responses, _ = run(server, 40, max_concurrency=8, max_retries=4)
    usage = client.usage()
    assert all(r.error is None for r in responses) and usage["failures"] == 0
    assert usage["retries"] == 8 and usage["requests"] == 40
    assert 1 <= usage["concurrency_decreases"] <= 4
    assert server.max_in_flight <= usage["concurrency_peak"]
