"""A scripted judge client for the judge labelers' unit tests (replies given by the test, not a model)."""

from rewardmill.transforms.judges.client import Completion, JudgeResponse


def replies(*items) -> list[JudgeResponse]:
    """One reply per call: a text, or a JudgeResponse as given (one with `error`: a call failed beyond retries)."""
    return [item if isinstance(item, JudgeResponse) else JudgeResponse((Completion(item, "stop"),)) for item in items]


class ScriptedClient:
    """A judge client answering from a function of the request; records each complete() call."""

    model_id = "scripted"

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def complete(self, requests):
        self.calls.append(list(requests))
        return replies(*(self.answer(r) for r in requests))

    def usage(self):
        return {"requests": sum(map(len, self.calls))}

    def close(self):
        pass
