"""The `verifiers` labeler against rollouts verifiers itself ran: verifiers' own eval (`run_eval`, its `null` chat
harness in its subprocess runtime, the calculator's toolset as its MCP server) drives `vllm serve` (CPU build) of the
default model through its interception server, and scores each trace with its own rubric. The same rollouts, written
as rewardmill rows, get the labeler's labels: on every trace, each reward function's label equals the score
verifiers recorded on the trace, and its weight too.

One stand-in, for what cannot happen here: verifiers installs its chat program's PEP 723 dependencies with `uv` from
the network when a rollout starts; the program runs instead with this interpreter, which has the same packages at
the lock's versions (openai, mcp, httpx, tenacity, certifi). The program itself, the harness, the interception server
and the model are the real ones."""

import asyncio
import hashlib
import json
import os
import sys
import uuid
from pathlib import Path

import pytest

from rewardmill.transforms.labelers.verifiers import VerifiersRubricVerifier
from rewardmill.transforms.sources import verifiers as source
from rewardmill.transforms.sources import vf_tasks

ENVS = Path(__file__).parents[1] / "environments/vf_envs"


@pytest.fixture
def verifiers_runs(monkeypatch, tmp_path, vllm_server, policy_dir):
    from verifiers.v1.runtimes.base import Runtime

    async def prepare_uv_script(self, script, env=None, *, activate=True):
        data = script.encode() if isinstance(script, str) else script
        path = f"{self.scripts_dir}/{hashlib.sha256(data).hexdigest()}.py"
        temporary = f"{path}.{uuid.uuid4().hex}.tmp"  # concurrent rollouts write the same script: publish it whole
        await self.write(temporary, data)
        os.replace(temporary, path)
        return [sys.executable, path]

    monkeypatch.setattr(Runtime, "prepare_uv_script", prepare_uv_script)
    monkeypatch.syspath_prepend(str(ENVS))
    monkeypatch.setenv("PYTHONPATH", str(ENVS))  # the toolset's server runs as `python -m vf_calc_env`
    monkeypatch.setenv("VF_TEST_KEY", "none")

    def run(env_id: str, args: dict) -> list:
        from verifiers.v1.cli.eval.runner import run_eval
        from verifiers.v1.configs.cli.eval import EvalConfig

        agent = {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}, "max_turns": 3}
        config = EvalConfig(
            env={"taskset": {"id": env_id, **args}, "agent": agent},
            num_rollouts=2,
            sampling={"max_tokens": 24, "temperature": 0.8},
            rich=None,
            push=False,
            output_dir=tmp_path / "outputs",
            run={"dir": env_id},
            model=str(policy_dir),
            client={"base_url": f"{vllm_server}/v1", "api_key_var": "VF_TEST_KEY"},
        )
        return [trace for record in asyncio.run(run_eval(config)) for trace in record.traces]

    return run


def as_row(trace, opening: int) -> dict:
    """A verifiers trace as the rollout columns the labeler reads: the turns after the task's opening messages."""
    turns = []
    for message in trace.messages[opening:]:
        turn = {"role": message.role, "content": message.content}
        if message.role == "assistant":
            calls = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.tool_calls or []
            ]
            turn.update(tool_calls=calls or None, reasoning=message.reasoning_content)
        if message.role == "tool":
            turn.update(tool_call_id=message.tool_call_id, name=message.name)
        turns.append(turn)
    return {"completion": trace.last_reply, "turns": turns}


@pytest.mark.parametrize("env_id", ["vf_math_env", "vf_calc_env"])
def test_every_label_equals_the_score_verifiers_gave_its_own_rollout(verifiers_runs, env_id):
    args = {"count": 2}
    traces = verifiers_runs(env_id, args)
    assert len(traces) == 4 and all(t.ok and not t.errors for t in traces), [t.errors for t in traces]
    metadata = {
        r["metadata"]["verifiers"]["task"]["key"]: json.dumps(r["metadata"])
        for _, r in source.generate("vf", env_id, args, None)
    }
    labeler = VerifiersRubricVerifier()
    for trace in traces:
        opening = len(vf_tasks.prompt_messages(trace.task.data))
        row = as_row(trace, opening)
        labels = labeler.label(row["completion"], row["turns"], metadata[trace.task.key])
        assert {label.aspect: label.score for label in labels} == {n: r.score for n, r in trace.rewards.items()}
        assert {label.aspect: json.loads(label.raw)["weight"] for label in labels} == {
            n: r.weight for n, r in trace.rewards.items()
        }
        assert all(json.loads(label.raw)["reward"] == pytest.approx(trace.reward) for label in labels)
