"""transforms/sampling/vllm_memory.py: vLLM's CPU KV cache sized from the memory free now, and doctor saying so."""

import pytest

from rewardmill.transforms.doctor.host import vllm_memory_check
from rewardmill.transforms.doctor.report import FAIL, OK, WARN
from rewardmill.transforms.sampling.vllm_memory import (
    DEFAULT_KV_BYTES,
    GiB,
    MiB,
    VLLMMemoryError,
    available_memory,
    kv_cache_bytes,
    user_chose,
)


@pytest.mark.parametrize(
    "available, expected",
    [
        (64 * GiB, DEFAULT_KV_BYTES),  # a big machine: the CPU build's old default, not 92 % of it
        (12.97 * GiB, DEFAULT_KV_BYTES),  # the laptop (12.97 of 15.21 GiB free): starts, with 4 GiB
        (3 * GiB, 1536 * MiB),  # half of what is free
        (600 * MiB, 300 * MiB),
        (512 * MiB, 256 * MiB),  # the least it starts with
    ],
)
def test_the_cache_is_half_the_free_memory_at_most_the_default(available, expected):
    assert kv_cache_bytes(int(available)) == expected


def test_too_little_memory_is_a_clear_error():
    with pytest.raises(VLLMMemoryError, match=r"at least 256 MiB .* 0\.39 GiB of memory is available"):
        kv_cache_bytes(400 * MiB)


@pytest.mark.parametrize(
    "kwargs, env, chosen",
    [
        ({}, {}, None),  # sized here
        ({"kv_cache_memory_bytes": 2 * GiB}, {}, "kv_cache_memory_bytes"),
        ({"gpu_memory_utilization": 0.5}, {}, "gpu_memory_utilization"),  # the workaround still works
        ({}, {"VLLM_CPU_KVCACHE_SPACE": "1"}, "VLLM_CPU_KVCACHE_SPACE"),
        ({"kv_cache_memory_bytes": None}, {"VLLM_CPU_KVCACHE_SPACE": ""}, None),
    ],
)
def test_a_users_own_setting_wins(kwargs, env, chosen):
    assert user_chose(kwargs, env) == chosen


def test_the_machine_reports_its_free_memory():
    assert 0 < available_memory()


def test_doctor_says_what_the_engine_would_take():
    ok = vllm_memory_check(["rollouts"], available=12 * GiB)
    assert ok.status == OK and "4.00 GiB KV cache of 12.00 GiB free" in ok.detail
    low = vllm_memory_check(["rollouts"], available=300 * MiB)
    assert low.status == FAIL and "available" in low.detail and "stop other model processes" in low.fix
    assert vllm_memory_check([], available=300 * MiB).status == WARN  # nothing asks for vLLM: a warning only
