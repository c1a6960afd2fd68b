"""What an execution is: the request (program, tests, limits) and its typed result.

Every backend (process, docker) and every front end (CLI, gRPC service, the
``code`` reward task) speaks these dataclasses; only ``reward_core/sandbox_convert.py``
touches protobuf. An executor never raises on hostile code: whatever the
program does, the caller gets an :class:`ExecutionResult` whose ``verdict``
says what happened. Expected outputs stay on the host: they are never sent into
the sandbox, and the pass/fail decision is made by ``sandbox/verdict.py`` on
the host side from the raw outcomes the sandbox reports.

Three test styles (:class:`TestStyle`):

* ``HUMANEVAL`` -- ``code`` defines a function (prompt + completion);
  ``check_code`` defines ``check(candidate)`` with asserts; ``entry_point`` names
  the function. Each top-level statement of ``check``'s body that contains an
  assert is one test case. The check code runs in a trusted process; the
  candidate runs in the untrusted one and only plain data crosses over.
  Optional ``prompt``: the dataset's prompt, trusted like the check code. The
  trusted process runs it too, so the names it defines (helpers such as
  HumanEval/38's ``encode_cyclic`` or /32's ``poly``, which the check calls)
  come from this copy, not from the program, which may have redefined them;
  the entry point's name always stays the candidate's. ``code`` still holds
  the whole program (prompt + completion).
* ``STDIO`` -- each :class:`TestCase` gives ``stdin`` and ``expected_stdout``;
  the program's stdout is compared on the host (:mod:`sandbox.output_compare`).
* ``FUNCTION_CALL`` -- each case gives ``args`` (a JSON list), optional
  ``kwargs`` and ``expected`` (JSON); ``entry_point(*args, **kwargs)``'s return
  value is serialized out of the sandbox and compared on the host.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)


class InvalidExecutionRequest(ValueError):
    """The request itself is unusable (unknown language, no tests, bad limits): fix the caller."""


class UnsupportedLanguage(InvalidExecutionRequest):
    """The language is known but its toolchain is not installed where programs run (UNSUPPORTED_LANGUAGE).

    Its message starts with ``UNSUPPORTED_LANGUAGE:`` and says what to install. Never a score:
    front ends answer it as an error (gRPC INVALID_ARGUMENT with that message, SandboxFusion's
    ``SandboxError``, an unscored status in the ``code`` task).
    """

    KIND = "UNSUPPORTED_LANGUAGE"

    def __init__(self, language: str, hint: str) -> None:
        self.language, self.hint = language, hint
        super().__init__(f"{self.KIND}: language {language!r} cannot run on this sandbox: {hint}")


class SandboxUnavailable(RuntimeError):
    """The backend cannot run on this host at all (no bwrap, no namespaces, no Docker engine).

    Raised by ``create_executor`` / an executor's constructor, never by ``execute``:
    once an executor exists, sandbox failures are SANDBOX_ERROR results.
    """


class Verdict(str, enum.Enum):
    """The overall outcome of one execution. Only ``ACCEPTED`` is a pass."""

    ACCEPTED = "accepted"                  # every test case passed
    WRONG_ANSWER = "wrong_answer"          # ran, at least one case failed (an assert, a mismatch)
    RUNTIME_ERROR = "runtime_error"        # the program raised / crashed / exited non-zero
    TIMEOUT = "timeout"                    # the wall or CPU limit was hit
    MEMORY_LIMIT = "memory_limit"          # the memory limit was hit
    OUTPUT_LIMIT = "output_limit"          # stdout/stderr or a file exceeded its cap
    COMPILE_ERROR = "compile_error"        # the source did not compile (or did not parse)
    SANDBOX_ERROR = "sandbox_error"        # our fault: the sandbox failed; the result is not a verdict on the code

    @property
    def passed(self) -> bool:
        return self is Verdict.ACCEPTED

    @property
    def is_verdict_on_code(self) -> bool:
        """False only for SANDBOX_ERROR: such a result must be reported as unscored, never as 0."""
        return self is not Verdict.SANDBOX_ERROR


class LimitHit(str, enum.Enum):
    """Which limit stopped the program, if any."""

    NONE = ""
    WALL_TIME = "wall_time"
    CPU_TIME = "cpu_time"
    MEMORY = "memory"
    OUTPUT = "output"
    FILE_SIZE = "file_size"
    PROCESSES = "processes"


class TestStyle(str, enum.Enum):
    HUMANEVAL = "humaneval"
    STDIO = "stdio"
    FUNCTION_CALL = "function_call"


class CaseOutcome(str, enum.Enum):
    """What happened to one test case (decided on the host)."""

    PASSED = "passed"
    FAILED = "failed"        # ran to completion, wrong answer / assert failed
    ERROR = "error"          # raised or crashed
    TIMEOUT = "timeout"      # not finished in time (or never reached because time ran out)
    NOT_RUN = "not_run"      # an earlier fatal problem (compile error, sandbox died) stopped it


@dataclass(frozen=True)
class Limits:
    """Resource limits for one execution (all tests of one program together)."""

    wall_s: float = 10.0          # whole execution incl. compilation; kills the process tree
    cpu_s: float = 10.0           # RLIMIT_CPU of the untrusted process
    memory_mb: int = 512          # address space (RLIMIT_AS) and cgroup memory where available
    max_processes: int = 32       # RLIMIT_NPROC / pids cgroup / container pids-limit
    file_size_mb: int = 16        # RLIMIT_FSIZE
    scratch_mb: int = 64          # size of the private writable scratch directory
    open_files: int = 64          # RLIMIT_NOFILE
    output_bytes: int = 65536     # cap on captured stdout and on stderr (each); more is an OUTPUT_LIMIT
    compile_wall_s: float = 30.0  # g++ gets its own, larger limit

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_mb", "max_processes", "file_size_mb", "scratch_mb",
                     "open_files", "output_bytes", "compile_wall_s"):
            if not getattr(self, name) > 0:
                raise InvalidExecutionRequest(f"limit {name} must be > 0, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class TestCase:
    """One STDIO or FUNCTION_CALL case. Expected values never leave the host."""

    stdin: str = ""
    expected_stdout: str | None = None     # STDIO
    args: Sequence[Any] = ()               # FUNCTION_CALL (JSON values)
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected: Any = None                   # FUNCTION_CALL (JSON value)


@dataclass(frozen=True)
class OutputCompare:
    """How STDIO output and FUNCTION_CALL values are compared on the host."""

    float_tolerance: float | None = None   # abs/rel tolerance for numbers (None: exact)
    ignore_trailing_whitespace: bool = True
    normalize_line_endings: bool = True


@dataclass(frozen=True)
class ExecutionRequest:
    """A program and its tests. ``id`` is echoed back in the result."""

    code: str
    style: TestStyle
    language: str = "python"
    id: str = ""
    check_code: str = ""                   # HUMANEVAL
    prompt: str = ""                       # HUMANEVAL, optional: trusted prompt whose helpers the check calls
    entry_point: str = ""                  # HUMANEVAL, FUNCTION_CALL
    cases: Sequence[TestCase] = ()         # STDIO, FUNCTION_CALL
    limits: Limits = field(default_factory=Limits)
    compare: OutputCompare = field(default_factory=OutputCompare)


@dataclass(frozen=True)
class TestResult:
    """The outcome of one test case, with what the host saw."""

    index: int
    outcome: CaseOutcome
    detail: str = ""                       # e.g. "expected 3, got 4", "AssertionError", exception text
    wall_s: float = 0.0


@dataclass(frozen=True)
class ExecutionResult:
    """Everything a caller needs to know about one execution. ``passed`` is true only on ACCEPTED."""

    id: str
    verdict: Verdict
    tests: tuple[TestResult, ...] = ()
    stdout: str = ""                       # truncated to Limits.output_bytes
    stderr: str = ""                       # truncated to Limits.output_bytes
    exit_code: int | None = None
    signal: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_memory_mb: float = 0.0
    limit_hit: LimitHit = LimitHit.NONE
    error: str = ""                        # compile errors, sandbox errors, the first failure's text
    backend: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def tests_total(self) -> int:
        return len(self.tests)

    @property
    def tests_passed(self) -> int:
        return sum(1 for t in self.tests if t.outcome is CaseOutcome.PASSED)

    @property
    def pass_fraction(self) -> float:
        return self.tests_passed / self.tests_total if self.tests else 0.0

    def summary(self) -> dict[str, Any]:
        """The JSON object the CLIs print: passed, verdict, tests_passed, tests_total, error."""
        out: dict[str, Any] = {"id": self.id, "passed": self.passed, "verdict": self.verdict.value,
                               "tests_passed": self.tests_passed, "tests_total": self.tests_total}
        if self.error:
            out["error"] = self.error
        return out


class Cancellation:
    """Set once the caller no longer wants a result (its gRPC call was cancelled, or its deadline passed).

    The executor checks ``cancelled`` before it starts a program, and while one runs it registers,
    with :meth:`on_cancel`, what stops it (the process backend kills the slot's sandbox: the
    program's whole PID namespace; the docker backend its container). Callbacks run once, on the
    thread that calls :meth:`cancel`. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Cancel (idempotent): runs every registered callback now."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = list(self._callbacks.values()), {}
        for callback in callbacks:
            _run_callback(callback)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on cancellation (at once if already cancelled); returns a function that unregisters it."""
        with self._lock:
            if not self._cancelled:
                key, self._next = self._next, self._next + 1
                self._callbacks[key] = callback
                return lambda: self._callbacks.pop(key, None)
        _run_callback(callback)
        return lambda: None


def _run_callback(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:  # noqa: BLE001 - stopping work is best effort; one failing callback must not stop the rest
        log.exception("a cancellation callback failed")


class Executor(Protocol):
    """Runs programs in isolation. Thread-safe; never raises on hostile code.

    ``execute_batch`` runs up to the executor's concurrency at once and returns
    one result per request, in order. InvalidExecutionRequest is raised before
    anything runs when a request is unusable; a sandbox failure during a run is a
    SANDBOX_ERROR result, not an exception.

    ``execute`` takes ``cancel`` (a :class:`Cancellation`, or None): a program not yet started is
    not started, and a running one is killed (the result is then SANDBOX_ERROR). Every executor,
    test stand-ins included, accepts it; callers pass it without checking.
    """

    name: str

    def execute(self, request: ExecutionRequest, cancel: Cancellation | None = None) -> ExecutionResult: ...

    def execute_batch(self, requests: Sequence[ExecutionRequest]) -> list[ExecutionResult]: ...

    def close(self) -> None: ...
