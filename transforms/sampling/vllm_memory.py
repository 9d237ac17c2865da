"""How much memory vLLM's CPU build takes for its KV cache: sized from the memory free now, not a fixed share.

Left alone, the CPU build reserves `gpu_memory_utilization` (0.92) of the NUMA node's memory and refuses to start
unless that much is free ("Available memory on node 0 (12.97/15.21 GiB) ... is less than desired CPU memory
utilization (0.92, 14.0 GiB)"): with a warm page cache or one other server running, a laptop cannot start it, and
when it can, most of the machine goes to a KV cache a small model never fills. So on CPU, unless the user chose
(`kv_cache_memory_bytes` or `gpu_memory_utilization` in the `vllm:` settings, or VLLM_CPU_KVCACHE_SPACE), the engine
gets an explicit KV cache: half the memory available at start, at most the CPU build's long-standing default of
4 GiB; below 256 MiB it does not start and the error says how much is free and what to set. An explicit size also
skips the CPU build's warm-up pass. `rewardmill doctor` runs the same sizing (transforms/doctor/host.py).
"""

import os
from collections.abc import Mapping

from rewardmill.transforms.errors import UserError

MiB = 1 << 20
GiB = 1 << 30
DEFAULT_KV_BYTES = 4 * GiB  # what VLLM_CPU_KVCACHE_SPACE defaulted to in the CPU build's older releases
SHARE = 0.5  # at most this share of the memory free at start: the weights, activations and the rest need room
MIN_KV_BYTES = 256 * MiB  # less, and a batch of the default model's prompts no longer fits
USER_SETTINGS = ("kv_cache_memory_bytes", "gpu_memory_utilization")
ENV_SETTING = "VLLM_CPU_KVCACHE_SPACE"


class VLLMMemoryError(UserError, MemoryError):
    """Too little memory is free for vLLM's CPU KV cache."""


def available_memory() -> int:
    """Bytes of memory available now: Linux's MemAvailable (free plus what the page cache would give back), else the
    free pages the C library reports."""
    try:
        with open("/proc/meminfo") as fh:
            fields = dict(line.split(":", 1) for line in fh if ":" in line)
        return int(fields["MemAvailable"].strip().split()[0]) * 1024
    except (OSError, KeyError, ValueError):  # no /proc (macOS): free pages only, the page cache not counted
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def kv_cache_bytes(available: int) -> int:
    """The KV cache for `available` bytes free (pure): half of it, at most DEFAULT_KV_BYTES, whole MiB."""
    size = min(DEFAULT_KV_BYTES, int(available * SHARE)) // MiB * MiB
    if size < MIN_KV_BYTES:
        raise VLLMMemoryError(
            f"vLLM's CPU build needs at least {MIN_KV_BYTES // MiB} MiB for its KV cache, and {available / GiB:.2f} "
            f"GiB of memory is available ({SHARE:.0%} of it may go to the cache): stop other model processes, or "
            "set a smaller `kv_cache_memory_bytes` in the stage's `vllm:` settings knowingly"
        )
    return size


def user_chose(llm_kwargs: Mapping, environ: Mapping[str, str] = os.environ) -> str | None:
    """The setting by which the user sized the memory themselves, or None (then `kv_cache_bytes` sizes it)."""
    chosen = next((k for k in USER_SETTINGS if llm_kwargs.get(k) is not None), None)
    if chosen is None and environ.get(ENV_SETTING):
        chosen = ENV_SETTING
    return chosen
