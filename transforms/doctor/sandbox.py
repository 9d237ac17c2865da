"""Check of the code sandbox: generated code runs only where the code_tests labeler's isolation really works."""

import shutil

from rewardmill.transforms.doctor.report import FAIL, OK, WARN, Check
from rewardmill.transforms.sandbox.runner import Sandbox, SandboxUnavailable


def sandbox_check(users: dict[str, dict]) -> Check:
    """`users`: labeler key -> its code_tests config (resolved). Probes the first one's isolation for real (a
    probe program runs in it and must see no network); without users, only says whether bwrap is there."""
    if not users:
        found = shutil.which("bwrap")
        if found:
            return Check("sandbox", OK, f"bwrap at {found} (no code_tests labeler in params)")
        return Check(
            "sandbox",
            WARN,
            "bwrap not found (no code_tests labeler in params needs it yet)",
            "apt-get install bubblewrap before adding a code_tests labeler",
        )
    key, config = next(iter(users.items()))
    sandbox = Sandbox(
        isolation=config.get("isolation", "auto"),
        allow_unisolated_network=config.get("allow_unisolated_network", False),
        python=config.get("python"),
        allow_weaker=config.get("allow_weaker_sandbox", False),
    )
    try:
        mechanism = sandbox.mechanism()
    except SandboxUnavailable as exc:
        return Check(
            "sandbox",
            FAIL,
            f"labelers.{key}: {exc}"[:400],
            "apt-get install bubblewrap (or see code_tests' isolation settings in docs/security.md)",
        )
    if mechanism == "none":
        return Check(
            "sandbox",
            WARN,
            f"labelers.{key}: generated code runs unisolated, with network access",
            "apt-get install bubblewrap and drop allow_unisolated_network",
        )
    return Check("sandbox", OK, f"labelers.{key}: generated code runs under {mechanism}, no network")
