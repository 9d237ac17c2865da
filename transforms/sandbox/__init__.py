"""Run untrusted generated code: isolated processes (bubblewrap, else `unshare` when allowed), resource limits, a
wall-clock timeout, no network, and the two-process protocol a code check runs in.

- runner.py: `Sandbox.run` / `Sandbox.spawn`, the limits, the result, and how a run ends (timeout, signal, exit).
- isolation.py: how the command is wrapped (bwrap, unshare, nothing) around the bootstrap that sets the limits.
- relay.py: a completion and its tests in two sandboxes, and the relay between them (the only link).
- scripts.py: the one script each side runs, bundled from the programs in programs/ with the run's spec.
- programs/: the Python that runs inside the sandbox, as real modules (linted, unit-tested in process): the
  bootstrap, the network probe, and the two sides of a code check with the modules they share.

Import from the modules (`rewardmill.transforms.sandbox.runner`), not from this package: the label cache's code
digest follows module imports (transforms/labelers/code_digest.py).
"""
