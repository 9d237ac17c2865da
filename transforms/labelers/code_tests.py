"""CodeTestsVerifier: run the completion's code against the prompt's tests in a sandbox; score = pass rate."""

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.code_extract import extract
from rewardmill.transforms.labelers.code_harness import (
    TestsSpec,
    completion_plan,
    humaneval_program,
    parse_tests,
    same_output,
    tests_plan,
)
from rewardmill.transforms.sandbox.isolation import MECHANISMS
from rewardmill.transforms.sandbox.relay import run_session
from rewardmill.transforms.sandbox.runner import (
    Sandbox,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    describe,
)
from rewardmill.transforms.sandbox.scripts import candidate_script, tests_script

# A failing test is a concrete counterexample; passing tests can under-specify the task; a timeout or a crash is
# verified not correct (the code did not finish what the tests asked), though a loaded machine can slow it.
CONFIDENCE_CORRECT = 0.95
CONFIDENCE_INCORRECT = 0.99
CONFIDENCE_STOPPED = 0.9
STARTUP_SECONDS = 2.0  # interpreter start-up allowance on top of the per-test budget
STOPPED = ("timeout", "crash")  # the completion's run stopped: score 0, whatever passed before


@dataclass(frozen=True)
class CodeTestsConfig:
    timeout_seconds: float = 5.0  # per test (an assert, a HumanEval check, a stdio case) and for loading the code
    memory_mb: int = 512  # address-space limit of the sandboxed process
    max_output_bytes: int = 65536  # stdout/stderr kept per run; a stdio answer longer than this fails
    workers: int = 4  # sandbox processes at once (stdio cases of one completion; rows in label_many)
    max_processes: int = 32  # processes + threads the code may have (fork bombs stop here)
    isolation: str = "auto"  # auto (bwrap, else refuse) | bwrap | unshare | none
    # Let `auto` use unshare where bwrap is missing: no network, the host read-only with homes and temp dirs hidden,
    # but the rest of the host filesystem readable. Off: without bwrap every label is an error naming the reason.
    allow_weaker_sandbox: bool = False
    # Without bwrap or unshare the code would run with network access; refuse (verdict error, "sandbox: ...")
    # unless this is true. Only for machines where you accept that risk.
    allow_unisolated_network: bool = False
    python: str | None = None  # interpreter for the code (stdlib only); None = the one running rewardmill

    def __post_init__(self):
        if not self.timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be > 0, got {self.timeout_seconds}")
        for name in ("memory_mb", "workers", "max_processes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_output_bytes < 1024:
            raise ValueError(f"max_output_bytes must be >= 1024, got {self.max_output_bytes}")
        if self.isolation not in ("auto", *MECHANISMS):
            raise ValueError(f"isolation must be auto or one of {MECHANISMS}, got {self.isolation!r}")
        if self.isolation == "none" and not self.allow_unisolated_network:
            raise ValueError("isolation 'none' runs code with network access: set allow_unisolated_network: true")


class CodeTestsVerifier:
    """Score = fraction of the prompt's tests the completion's code passes, run in a sandbox (transforms/sandbox).

    Input columns: completion (the code its answer submits, after any leading reasoning block: the blocks defining
    what the tests call, code_extract.py),
    tests (JSON; styles in code_harness.py). Output: score, verdict correct (all pass) | incorrect (score = pass
    rate when tests fail or the code raises; 0.0 when the code does not compile, raises on load, or times out or
    crashes anywhere: a run that never finished must not rank above an honest wrong answer) | error (score None,
    only for what is provably not the completion's doing: malformed tests, tests that fail on their own in a dry
    run, or "sandbox: ..." when the sandbox could not run) | abstain (no tests); rationale names the code run;
    raw = per-test results JSON.
    """

    name = "code_tests"
    # 2: the completion and the tests run in two sandboxes (sandbox/programs); 3: no per-test timings in `raw` (a
    # label's bytes must not depend on the machine's speed); 4: the tests see only declared names, the relay wraps
    # the completion's lines, timeouts and crashes are incorrect/0, the code run is chosen by the names tested; 5: only
    # the answer after a leading reasoning block runs (unclosed: incorrect/0), any fence info string (py3) opens a
    # block and an indented fence dedents it, exit()/quit() exist, a HumanEval body at column 0 is indented; 6: only
    # the completion's defs and classes reach the tests (a name it imports the tests import themselves, any other
    # binding is a NameError), a builtin subclass (Counter, namedtuple) crosses as its base value, a Fraction or
    # Decimal as a real one
    version = "6"
    reads = ("completion", "tests")
    tasks = ("code",)
    Config = CodeTestsConfig

    def __init__(self, config: CodeTestsConfig | None = None):
        self.config = config or CodeTestsConfig()
        cfg = self.config
        self.sandbox = Sandbox(
            cfg.isolation, cfg.allow_unisolated_network, cfg.python, allow_weaker=cfg.allow_weaker_sandbox
        )
        self._pool = None
        self._slots = None
        self._lock = threading.Lock()

    def __getstate__(self):  # pools, semaphores and locks don't pickle; a copy makes its own on first use
        return {"config": self.config, "sandbox": self.sandbox}

    def __setstate__(self, state):
        self.__init__(state["config"])

    def label(self, completion: str | None, tests) -> Label:
        if tests is None or tests == "":
            return Label(None, 0.0, "abstain", "no tests for this prompt")
        try:
            spec = parse_tests(tests)
        except ValueError as exc:
            return Label(None, 0.0, "error", f"tests: {exc}"[:500])
        plan = tests_plan(spec) if spec.style != "stdio" else None
        extracted = extract(completion or "", tuple(plan["declared"]) if plan else ())
        code = extracted.code
        if not extracted.finished:  # only an answer is graded: code drafted in unfinished reasoning is not one
            rationale = "no finished answer: the leading reasoning block never closes"
            return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", rationale, _raw(spec, []))
        if not code.strip():
            return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", "no code in the completion", _raw(spec, []))
        try:
            if plan is None:
                results, isolation = self._run_stdio(code, spec)
            else:
                results, isolation = self._run_harness(code, spec, plan)
        except SandboxUnavailable as exc:
            return Label(None, 0.0, "error", f"sandbox: {exc}"[:500])
        except (SandboxFailed, OSError) as exc:  # e.g. bwrap could not set up, or the machine is out of processes
            return Label(None, 0.0, "error", f"sandbox: {type(exc).__name__}: {exc}"[:500], _raw(spec, []))
        label = summarize(spec, results, isolation)
        return replace(label, rationale=f"{label.rationale[:440]} (ran {extracted.source})")

    @classmethod
    def summarize(cls, labels: list[dict]) -> dict:
        """How many labels each sandbox mechanism produced (bwrap | unshare | none), from every label's raw."""
        counts: dict[str, int] = {}
        for row in labels:
            isolation = json.loads(row["raw"]).get("isolation") if row.get("raw") else None
            if isolation:
                counts[isolation] = counts.get(isolation, 0) + 1
        return {"isolation": dict(sorted(counts.items()))}

    def label_many(self, rows) -> list[Label]:
        """label(*row) for each (completion, tests) row, `workers` at a time, in order."""
        rows = list(rows)
        with ThreadPoolExecutor(max_workers=min(self.config.workers, max(len(rows), 1))) as pool:
            return list(pool.map(lambda row: self.label(*row), rows))

    def teardown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    # -- execution ---------------------------------------------------------------------------------------------

    def _limits(self, timeout: float, output_bytes: int = 0) -> SandboxLimits:
        cfg = self.config
        return SandboxLimits(
            timeout_seconds=timeout,
            memory_mb=cfg.memory_mb,
            max_processes=cfg.max_processes,
            max_output_bytes=max(cfg.max_output_bytes, output_bytes),
        )

    def _run(self, code: str, stdin: str, limits: SandboxLimits) -> SandboxResult:
        with self._lock:
            if self._slots is None:
                self._slots = threading.BoundedSemaphore(self.config.workers)
        with self._slots:  # bounds processes across label_many threads and stdio cases together
            result = self.sandbox.run(code, stdin, limits)
        if result.sandbox_error:
            raise SandboxFailed(result.sandbox_error)
        return result

    def _run_harness(self, code: str, spec: TestsSpec, plan: dict) -> tuple[list[dict], str]:
        """The completion and the tests in two sandboxes (sandbox/programs): the tests compare plain values."""
        timeout = self.config.timeout_seconds
        if spec.style == "humaneval":
            code = humaneval_program(code, spec)
        # load + setup + each test and its dry run (only a failing test has one), two interpreters
        wall = timeout * (2 * spec.n_tests + 2) + 2 * STARTUP_SECONDS
        report_bytes = 1024 * (spec.n_tests + 3)  # room for every report line, however long the test list
        limits = self._limits(wall, report_bytes)
        plan = completion_plan(plan, code, spec.entry_point)
        candidate = candidate_script(code, plan["export"])
        tests = tests_script(spec.setup, list(spec.asserts), plan, timeout, STARTUP_SECONDS)
        with self._lock:
            if self._slots is None:
                self._slots = threading.BoundedSemaphore(self.config.workers)
        with self._slots:
            session = run_session(self.sandbox, candidate, tests, limits, timeout, timeout + STARTUP_SECONDS)
        for run in (session.candidate, session.tests):
            if run.sandbox_error:
                raise SandboxFailed(run.sandbox_error)
        stopped = session.timed_out or session.call_timed_out or session.candidate.killed_by_signal == 24  # SIGXCPU
        why = session.candidate_killed or describe(session.candidate if not session.timed_out else session.tests)
        return harness_results(spec, session.reports, stopped, why), session.candidate.isolation

    def _run_stdio(self, code: str, spec: TestsSpec) -> tuple[list[dict], str]:
        limits = self._limits(self.config.timeout_seconds + STARTUP_SECONDS)

        def one(indexed):
            i, (stdin, expected) = indexed
            result, isolation = stdio_result(expected, self._run(code, stdin, limits))
            return {"test": i, **result}, isolation

        if self.config.workers > 1 and len(spec.cases) > 1:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.config.workers, thread_name_prefix="code-tests")
            runs = list(self._pool.map(one, enumerate(spec.cases)))
        else:
            runs = [one(case) for case in enumerate(spec.cases)]
        return [result for result, _ in runs], runs[0][1]


class SandboxFailed(RuntimeError):
    """The sandbox could not start the code (distinct from the code failing)."""


def harness_results(spec: TestsSpec, report: list[dict], stopped: bool, why: str) -> list[dict]:
    """One result per test from the tests' report; tests it never reached are timeouts (`stopped`: the wall clock,
    the CPU limit or an unanswered call stopped the run) or crashes (a process died; `why` says how), and all are
    `not_run` when the code did not compile or load."""
    stage = {r["phase"]: r for r in report if "phase" in r}
    by_test = {r["test"]: r for r in report if "test" in r}
    for phase in ("compile", "load", "setup"):
        if phase in stage and stage[phase]["status"] != "pass":
            detail = stage[phase].get("detail", "")
            return [
                {"test": i, "status": "not_run", "phase": phase, "why": stage[phase]["status"], "detail": detail}
                for i in range(spec.n_tests)
            ]
    status = "timeout" if stopped else "crash"
    detail = why if stopped else f"the process ended before reporting ({why})"
    if "load" not in stage:  # died before the code was even loaded
        return [{"test": i, "status": status, "phase": "load", "detail": detail} for i in range(spec.n_tests)]
    return [by_test.get(i, {"test": i, "status": status, "detail": detail}) for i in range(spec.n_tests)]


def stdio_result(expected: str, run: SandboxResult) -> tuple[dict, str]:
    if run.timed_out or run.killed_by_signal == 24:
        result = {"status": "timeout", "detail": describe(run)}
    elif run.exit_code != 0:
        last = run.stderr.strip().splitlines()[-1:] or [describe(run)]
        result = {"status": "error" if run.exit_code is not None else "crash", "detail": last[0][:300]}
    elif run.stdout_truncated:
        result = {"status": "fail", "detail": "output longer than max_output_bytes"}
    elif same_output(expected, run.stdout):
        result = {"status": "pass", "detail": ""}
    else:
        result = {"status": "fail", "detail": f"expected {expected[:100]!r}, got {run.stdout[:100]!r}"}
    return result, run.isolation


def summarize(spec: TestsSpec, results: list[dict], isolation: str) -> Label:
    """The verdict from the per-test results (statuses decided by the tests' program and the relay, never by the
    completion's process)."""
    raw = _raw(spec, results, isolation)
    n = len(results)
    stopped = [r for r in results if r["status"] == "not_run"]
    if stopped:
        why, detail = stopped[0]["why"], stopped[0]["detail"]
        during = "loading the code" if stopped[0]["phase"] in ("compile", "load") else "the tests' setup"
        if why == "test_error":
            return Label(None, 0.0, "error", f"tests: the tests' own code fails: {detail}"[:500], raw)
        if why == "syntax_error":
            return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"syntax error: {detail}"[:500], raw)
        if why in STOPPED:
            what = "timed out" if why == "timeout" else "crashed"
            rationale = f"{during} {what}: {detail}"[:500]
            return Label(0.0, CONFIDENCE_STOPPED, "incorrect", rationale, raw, cacheable=why != "timeout")
        return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"the code raised during {during}: {detail}"[:500], raw)
    broken = [r for r in results if r["status"] == "test_error"]
    if broken:
        test, detail = broken[0]["test"], broken[0]["detail"]
        rationale = f"tests: test {test} does not compile or fails before using the completion: {detail}"
        return Label(None, 0.0, "error", rationale[:500], raw)
    passed = sum(r["status"] == "pass" for r in results)
    if passed == n:
        return Label(1.0, CONFIDENCE_CORRECT, "correct", f"{n}/{n} tests passed", raw)
    first = next(r for r in results if r["status"] != "pass")
    halted = next((r for r in results if r["status"] in STOPPED), None)
    if halted is not None:
        index = results.index(halted)
        what = "timed out" if halted["status"] == "timeout" else "crashed"
        rationale = f"{passed}/{n} tests passed; test {index} {what}: {halted['detail']}"[:500]
        return Label(0.0, CONFIDENCE_STOPPED, "incorrect", rationale, raw, cacheable=halted["status"] != "timeout")
    index = results.index(first)
    rationale = f"{passed}/{n} tests passed; test {index} {first['status']}: {first['detail']}"[:500]
    return Label(passed / n, CONFIDENCE_INCORRECT, "incorrect", rationale, raw)


def _raw(spec: TestsSpec, results: list[dict], isolation: str | None = None) -> str:
    passed = sum(r.get("status") == "pass" for r in results)
    rate = passed / len(results) if results else 0.0
    payload = {"style": spec.style, "isolation": isolation, "pass_rate": rate, "tests": results}
    return json.dumps(payload, sort_keys=True)
