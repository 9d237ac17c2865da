"""The batch client's lifecycle logic against a scripted provider: resubmission of failed and expired requests only,
adoption of an earlier run's batch, the wait limit, and results mapped back by custom_id whatever their order.

The provider here is a stand-in on purpose: these are the provider's failure modes (a batch that expires, a status
check that errors, a batch still running when the run's wait ends), which no real service shows on cue. The same
lifecycle runs against vLLM's real batch runner in tests/transforms/batch/test_local_server.py."""

import json

import pytest

from rewardmill.transforms.batch.client import BatchJudgeClient, BatchPending
from rewardmill.transforms.batch.ledger import Ledger
from rewardmill.transforms.batch.openai_provider import parse_result
from rewardmill.transforms.batch.provider import BatchResult, BatchState, UnknownProvider, provider_class
from rewardmill.transforms.judges.call_cache import call_key
from rewardmill.transforms.judges.client import BackendConfig, BatchConfig, JudgeRequest, Sampling


def body(text: str) -> dict:
    return {
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }  # fmt: skip


class ScriptedProvider:
    """Answers each request with its own question reversed, after `polls` status checks; `fail` (custom id -> times)
    and `expire` (batch ordinals) script failures; results come back in reverse order."""

    name = "scripted"

    def __init__(self, polls=1, fail=None, expire=(), broken_checks=0):
        self.polls, self.fail, self.expire, self.broken_checks = polls, dict(fail or {}), set(expire), broken_checks
        self.batches: dict[str, list[dict]] = {}
        self.checks: dict[str, int] = {}
        self.sent: list[str] = []
        self.metadata: dict[str, dict] = {}

    def line(self, custom_id, body):
        return {"custom_id": custom_id, "body": body}

    def submit(self, lines, window, metadata):
        batch_id = f"b{len(self.batches) + 1}"
        self.batches[batch_id] = lines
        self.metadata[batch_id] = dict(metadata)
        self.sent += [line["custom_id"] for line in lines]
        return batch_id

    def find(self, key, value, since):
        return next((b for b, m in reversed(self.metadata.items()) if m.get(key) == value), None)

    def state(self, batch_id):
        if self.broken_checks:
            self.broken_checks -= 1
            raise ConnectionError("status check failed")
        self.checks[batch_id] = self.checks.get(batch_id, 0) + 1
        if self.checks[batch_id] < self.polls:
            return BatchState(batch_id, "in_progress")
        ordinal = int(batch_id[1:])
        return BatchState(batch_id, "expired" if ordinal in self.expire else "completed", "out", "err")

    def results(self, state):
        lines = self.batches[state.id]
        if int(state.id[1:]) in self.expire:
            lines = lines[: len(lines) // 2]
        out = []
        for line in lines:
            cid = line["custom_id"]
            if self.fail.get(cid, 0) > 0:
                self.fail[cid] -= 1
                out.append(BatchResult(cid, None, "server_error: injected"))
            else:
                out.append(BatchResult(cid, body(line["body"]["messages"][0]["content"][::-1])))
        return out[::-1]


def client(tmp_path, provider, **batch) -> BatchJudgeClient:
    config = BackendConfig(
        kind="openai", model="m", base_url="http://127.0.0.1:1/v1", cache_dir=str(tmp_path),
        batch=BatchConfig(poll_seconds=0.01, max_poll_seconds=0.02, **batch),
    )  # fmt: skip
    return BatchJudgeClient(config, provider, sleep=lambda s: None)


def requests(n: int) -> list[JudgeRequest]:
    return [JudgeRequest(({"role": "user", "content": f"question {i}"},)) for i in range(n)]


def test_answers_come_back_in_request_order_and_equal_requests_go_once(tmp_path):
    provider = ScriptedProvider(polls=3)
    asked = requests(3) + requests(1)  # the last repeats the first
    got = client(tmp_path, provider).complete(asked)
    assert [r.text for r in got] == ["0 noitseuq", "1 noitseuq", "2 noitseuq", "0 noitseuq"]
    assert len(provider.sent) == 3 and got[0].prompt_tokens == 3 and got[0].completion_tokens == 2


def test_failed_and_expired_requests_alone_are_resubmitted(tmp_path):
    asked = requests(4)
    ids = [call_key("http://127.0.0.1:1/v1|m", r) for r in asked]
    provider = ScriptedProvider(fail={ids[0]: 1}, expire={1})  # batch 1 runs half, and fails request 0 once
    c = client(tmp_path, provider)
    got = c.complete(asked)
    assert all(r.error is None for r in got)
    assert provider.sent[:4] == ids and sorted(provider.sent[4:]) == sorted([ids[0], ids[2], ids[3]])
    assert c.usage()["batches"] == 2 and c.usage()["batch_resubmitted"] == 3 and c.usage()["batch_failures"] == 0


def test_a_request_that_keeps_failing_stops_after_max_resubmits_with_its_error(tmp_path):
    asked = requests(2)
    bad = call_key("http://127.0.0.1:1/v1|m", asked[1])
    provider = ScriptedProvider(fail={bad: 99})
    got = client(tmp_path, provider, max_resubmits=1).complete(asked)
    assert got[0].error is None and got[1].error == "server_error: injected"
    assert provider.sent.count(bad) == 2  # the first try and one resubmission


def test_a_rerun_polls_the_recorded_batch_instead_of_submitting(tmp_path):
    asked = requests(3)
    slow = ScriptedProvider(polls=10**6)
    with pytest.raises(BatchPending, match="rerun the stage to poll it again"):
        client(tmp_path, slow, max_wait_seconds=0.05).complete(asked)  # the run's wait ends with the batch in flight
    (entry,) = Ledger(str(tmp_path), "http://127.0.0.1:1/v1|m").entries()
    assert len(entry.ids) == 3
    slow.polls = 1  # the batch finishes meanwhile
    rerun = client(tmp_path, slow)
    assert [r.text for r in rerun.complete(asked)] == ["0 noitseuq", "1 noitseuq", "2 noitseuq"]
    assert len(slow.sent) == 3 and rerun.usage()["batch_adopted"] == 1 and rerun.usage()["batches"] == 0


def test_status_checks_that_fail_are_retried_then_reported(tmp_path):
    flaky = ScriptedProvider(broken_checks=2)
    assert client(tmp_path, flaky).complete(requests(1))[0].text == "0 noitseuq"
    dead = ScriptedProvider(broken_checks=99)
    with pytest.raises(BatchPending, match="status checks failed"):
        client(tmp_path / "dead", dead).complete(requests(1))


def test_unseeded_samples_are_not_batched(tmp_path):
    provider = ScriptedProvider()
    sampled = JudgeRequest(({"role": "user", "content": "q"},), Sampling(temperature=0.7, seed=None))
    (got,) = client(tmp_path, provider).complete([sampled])
    assert got.error.startswith("not batched") and provider.sent == []


@pytest.mark.parametrize(
    ("line", "body", "error"),
    [
        ({"custom_id": "a", "response": {"status_code": 200, "body": {"x": 1}}, "error": None}, {"x": 1}, None),
        # a non-2xx response: its body's message
        (
            {"custom_id": "a", "response": {"status_code": 400, "body": {"error": {"message": "bad"}}}, "error": None},
            None,
            "status 400: bad",
        ),  # fmt: skip
        # an error line of an expired batch
        (
            {"custom_id": "a", "response": None, "error": {"code": "batch_expired", "message": "late"}},
            None,
            "batch_expired: late",
        ),  # fmt: skip
        # a 200 without a body is not an answer
        ({"custom_id": "a", "response": {"status_code": 200}, "error": None}, None, "status 200: None"),
    ],
)
def test_parse_result(line, body, error):
    result = parse_result(json.loads(json.dumps(line)))
    assert (result.custom_id, result.body, result.error) == ("a", body, error)


def test_config_checks():
    with pytest.raises(ValueError, match="kind openai"):
        BackendConfig(kind="transformers", batch=BatchConfig())
    with pytest.raises(ValueError, match="poll_seconds"):
        BatchConfig(poll_seconds=0)
    with pytest.raises(ValueError, match="provider"):
        BatchConfig(provider="")
    with pytest.raises(UnknownProvider, match=r"unknown batch provider 'carrier-pigeon'; known: \['openai'\]"):
        provider_class("carrier-pigeon")
    with pytest.raises(ValueError, match="--cache"):
        BatchJudgeClient(BackendConfig(kind="openai", base_url="http://127.0.0.1:1/v1", batch=BatchConfig()))


def test_a_batch_the_provider_no_longer_knows_is_resubmitted(tmp_path):
    """A ledger naming a batch the provider forgot (a restarted local server answers 404): its requests go again
    in a new batch instead of stopping every rerun. The real server and SDK answer the status check here (no
    batch runs, so no model is loaded)."""
    from rewardmill.transforms.batch.local_server import LocalBatchServer
    from rewardmill.transforms.batch.openai_provider import OpenAIBatchProvider

    with LocalBatchServer("unused-model", tmp_path / "work") as server:
        state = OpenAIBatchProvider(server.url, "EMPTY", 10.0).state("batch-999999")
    assert state.done and state.status == "cancelled" and "no longer knows" in state.errors[0]

    class Forgetful(ScriptedProvider):
        def state(self, batch_id):
            return BatchState(batch_id, "cancelled") if batch_id == "b1" else super().state(batch_id)

    provider = Forgetful()
    asked = requests(2)
    ids = [call_key("http://127.0.0.1:1/v1|m", r) for r in asked]
    ledger = Ledger(str(tmp_path / "cache"), "http://127.0.0.1:1/v1|m")
    ledger.confirm(ledger.intend(ids, 0), "b1")  # an earlier run's, now gone
    provider.batches["b1"] = []
    c = client(tmp_path / "cache", provider)
    assert [r.text for r in c.complete(asked)] == ["0 noitseuq", "1 noitseuq"]
    assert provider.sent == ids and c.usage()["batch_adopted"] == 1 and c.usage()["batch_resubmitted"] == 2


class Killed(BaseException):
    """The process dies here (kill -9 between two statements; BaseException, so no `except Exception` catches it)."""


def test_a_run_killed_after_the_provider_created_its_batch_but_before_the_ledger_named_it_pays_once(tmp_path):
    """The window between the provider's answer to `create batch` and the ledger's write: the batch exists and runs,
    the killed run never learnt its id. The rerun must find it (by the submission token in its metadata) and poll it,
    not submit the same requests again."""

    class DiesAfterCreate(ScriptedProvider):
        def submit(self, lines, window, metadata):
            super().submit(lines, window, metadata)
            raise Killed  # the batch is created; its id never comes back

    asked = requests(3)
    dying = DiesAfterCreate()
    with pytest.raises(Killed):
        client(tmp_path, dying).complete(asked)
    survivor = ScriptedProvider()
    survivor.batches, survivor.sent, survivor.metadata = dying.batches, dying.sent, dying.metadata
    rerun = client(tmp_path, survivor)
    assert [r.text for r in rerun.complete(asked)] == ["0 noitseuq", "1 noitseuq", "2 noitseuq"]
    assert len(survivor.sent) == 3  # every request ran once
    assert rerun.usage()["batches"] == 0 and rerun.usage()["batch_adopted"] == 1
    (entry,) = Ledger(str(tmp_path), "http://127.0.0.1:1/v1|m").entries()
    assert entry.id == "b1" and len(entry.ids) == 3


def test_a_run_killed_before_its_batch_was_created_submits_on_the_rerun(tmp_path):
    """The other side of the same window: killed after the ledger's intent and before the provider created anything
    (an upload, or nothing, reached it). The rerun finds no batch with that token and submits the requests once."""

    class DiesBeforeCreate(ScriptedProvider):
        def submit(self, lines, window, metadata):
            raise Killed

    asked = requests(2)
    with pytest.raises(Killed):
        client(tmp_path, DiesBeforeCreate()).complete(asked)
    provider = ScriptedProvider()
    rerun = client(tmp_path, provider)
    assert [r.text for r in rerun.complete(asked)] == ["0 noitseuq", "1 noitseuq"]
    assert len(provider.sent) == 2 and rerun.usage()["batches"] == 1 and rerun.usage()["batch_adopted"] == 0
    (entry,) = Ledger(str(tmp_path), "http://127.0.0.1:1/v1|m").entries()
    assert entry.id == "b1"  # the never-created batch's intent is gone


def test_find_pages_the_real_batch_list_for_a_metadata_value(tmp_path):
    """`find` through the openai SDK against the local server's batch list (newest first, cursor pages of 2 here):
    the batch carrying the token, none for a token no batch carries, and none when the batches are all older than
    `since` (the search stops there instead of paging the whole history). Empty batch files: no model runs."""
    import time

    from rewardmill.transforms.batch.local_server import LocalBatchServer
    from rewardmill.transforms.batch.openai_provider import OpenAIBatchProvider

    with LocalBatchServer("unused-model", tmp_path / "work") as server:
        provider = OpenAIBatchProvider(server.url, "EMPTY", 10.0)
        provider.page_size = 2
        ids = [provider.submit([], "24h", {"rewardmill_submission": f"t{i}"}) for i in range(5)]
        assert [provider.find("rewardmill_submission", f"t{i}", time.time() - 5) for i in range(5)] == ids
        assert provider.find("rewardmill_submission", "t9", time.time() - 5) is None
        assert provider.find("rewardmill_submission", "t0", time.time() + 3600) is None
