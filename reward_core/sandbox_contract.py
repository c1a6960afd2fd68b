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

STDIO requests may also carry ``files`` (written into the program's scratch
directory before it is compiled and before each case runs), ``fetch_files``
(read back after the last case: :attr:`ExecutionResult.files`) and ``args``
(appended to the run command of every case). SandboxFusion's ``/run_code``
``files``/``fetch_files``/``args`` map onto them.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
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

    @classmethod
    def from_message(cls, message: str) -> UnsupportedLanguage | None:
        """The error a message (a gRPC status's details) carries, or None when it is not this kind."""
        if not message.startswith(cls.KIND + ":"):
            return None
        head, _, hint = message.partition(" cannot run on this sandbox: ")
        language = head.removeprefix(cls.KIND + ":").strip().removeprefix("language ").strip("'\"")
        return cls(language, hint or message)


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
    """How STDIO output and FUNCTION_CALL values are compared on the host (``sandbox/output_compare.py``).

    ``mode`` names the comparator (COMPARE_MODES): ``tokens`` (the default: whitespace-insensitive
    tokens, as competitive judges compare), ``float`` (tokens; numbers within ``float_tolerance``,
    1e-6 unless set), ``exact`` (byte-exact after line-ending normalization, if set), ``lines`` (line
    by line, trailing whitespace and trailing blank lines ignored: the only comparison before modes
    existed), ``lines_unordered`` (the multiset of non-empty lines) or ``checker`` (a checker program,
    ``checker_code`` in ``checker_language``, decides each case: ``sandbox/checker.py``). ``mode`` ""
    keeps what such a request meant before modes existed: ``float`` when ``float_tolerance`` is set,
    ``lines`` when a whitespace flag is turned off, else ``tokens`` (see :attr:`effective_mode`).
    """

    float_tolerance: float | None = None   # abs/rel tolerance for numbers (None: exact; 1e-6 in mode float)
    ignore_trailing_whitespace: bool = True   # mode lines
    normalize_line_endings: bool = True       # modes exact, lines, lines_unordered
    mode: str = ""
    checker_code: str = ""                 # mode checker: the checker's source
    checker_language: str = ""             # mode checker: its language ("" = python)

    def __post_init__(self) -> None:
        if self.mode not in COMPARE_MODES and self.mode != "":
            raise InvalidExecutionRequest(f"compare mode must be one of {list(COMPARE_MODES)}, got {self.mode!r}")
        tol = self.float_tolerance
        if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < 1e308):
            raise InvalidExecutionRequest(f"float_tolerance must be a finite number >= 0, got {tol!r}")
        if self.effective_mode == "checker" and not (isinstance(self.checker_code, str) and self.checker_code.strip()):
            raise InvalidExecutionRequest("compare mode 'checker' needs checker_code (the checker program's source)")
        if self.checker_code and self.effective_mode != "checker":
            raise InvalidExecutionRequest(f"checker_code is given but the compare mode is {self.effective_mode!r}: "
                                          "set mode 'checker'")

    @property
    def effective_mode(self) -> str:
        """The comparator used: ``mode``, or for "" the pre-mode meaning of the other fields."""
        if self.mode:
            return self.mode
        if self.float_tolerance is not None:
            return "float"
        if not (self.ignore_trailing_whitespace and self.normalize_line_endings):
            return "lines"
        return "tokens"

    @property
    def tolerance(self) -> float | None:
        """The numeric tolerance in force (FUNCTION_CALL values too): ``float_tolerance``, 1e-6 in mode float."""
        if self.float_tolerance is not None:
            return float(self.float_tolerance)
        return DEFAULT_FLOAT_TOLERANCE if self.effective_mode == "float" else None


#: The comparators of OutputCompare.mode.
COMPARE_MODES = ("tokens", "float", "exact", "lines", "lines_unordered", "checker")
DEFAULT_FLOAT_TOLERANCE = 1e-6


#: All fetched files of one execution together, at most (a file beyond it is left out).
FETCH_BYTES_CAP = 32 << 20
_MB = 1 << 20


def check_file_name(name: object, what: str = "file") -> str:
    """``name`` if it is a relative path inside the scratch directory, else InvalidExecutionRequest.

    No absolute path, no ``..`` or ``.`` component, no empty component, no NUL, at most 255 bytes
    per component and 4096 in all: a name never leaves the scratch directory.
    """
    if not isinstance(name, str) or not name:
        raise InvalidExecutionRequest(f"{what} name must be a non-empty string, got {name!r}")
    parts = name.split("/")
    if (name.startswith("/") or "\0" in name or any(p in ("", ".", "..") for p in parts)
            or len(name.encode("utf-8", "surrogatepass")) > 4096
            or any(len(p.encode("utf-8", "surrogatepass")) > 255 for p in parts)):
        raise InvalidExecutionRequest(f"{what} name {name[:200]!r} must be a relative path inside the scratch "
                                      "directory (no leading '/', no '.' or '..' or empty components, no NUL)")
    return name


@dataclass(frozen=True)
class CompileResult:
    """What the compile step did (compiled languages; Python: only a syntax error)."""

    exit_code: int | None = None           # None: it did not exit (killed, e.g. by the time limit)
    stdout: str = ""                       # each truncated to Limits.output_bytes
    stderr: str = ""
    wall_s: float = 0.0
    timed_out: bool = False                # compile_wall_s ran out
    signal: int | None = None              # the signal that ended it, if any
    #: Answered from the sandbox's compile-artifact cache (sandbox/compile_artifacts.py): the compiler did
    #: not run; stdout/stderr are the first compile's, wall_s is 0.
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class ExecutionRequest:
    """A program and its tests. ``id`` is echoed back in the result.

    STDIO only: ``files`` (relative name -> content, written into the scratch directory before
    compiling and before every case; each at most ``limits.file_size_mb``, all together at most
    ``limits.scratch_mb``), ``fetch_files`` (names read back after the last case into
    :attr:`ExecutionResult.files`) and ``args`` (extra argv of every case's run command).
    """

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
    files: Mapping[str, bytes] = field(default_factory=dict)   # STDIO: written into the scratch dir first
    fetch_files: Sequence[str] = ()        # STDIO: read back after the last case (ExecutionResult.files)
    args: Sequence[str] = ()               # STDIO: appended to every case's run command

    def __post_init__(self) -> None:
        if not (self.files or self.fetch_files or self.args):
            return
        if not isinstance(self.files, Mapping):
            raise InvalidExecutionRequest(f"files must be a mapping of name -> bytes, got {type(self.files).__name__}")
        total = 0
        for name, content in self.files.items():
            check_file_name(name)
            if not isinstance(content, (bytes, bytearray)):
                raise InvalidExecutionRequest(f"file {name!r}: content must be bytes, got {type(content).__name__}")
            if len(content) > self.limits.file_size_mb * _MB:
                raise InvalidExecutionRequest(f"file {name!r} is {len(content)} bytes, above the file size limit "
                                              f"file_size_mb={self.limits.file_size_mb}")
            total += len(content)
        names = set(self.files)
        for name in names:
            parent = name.rpartition("/")[0]
            while parent:
                if parent in names:
                    raise InvalidExecutionRequest(f"file {parent!r} is also a directory of file {name!r}")
                parent = parent.rpartition("/")[0]
        if total > self.limits.scratch_mb * _MB:
            raise InvalidExecutionRequest(f"files total {total} bytes, above the scratch limit "
                                          f"scratch_mb={self.limits.scratch_mb}")
        if isinstance(self.fetch_files, str) or isinstance(self.args, str):
            raise InvalidExecutionRequest("fetch_files and args must be sequences of strings, not a string")
        for name in self.fetch_files:
            check_file_name(name, "fetch_files")
        for arg in self.args:
            if not isinstance(arg, str) or "\0" in arg:
                raise InvalidExecutionRequest(f"args must be strings without NUL, got {arg!r}")


@dataclass(frozen=True)
class TestResult:
    """The outcome of one test case, with what the host saw.

    ``verdict`` is the case's own reason, from the Verdict values: ACCEPTED, WRONG_ANSWER,
    RUNTIME_ERROR, TIMEOUT, MEMORY_LIMIT, OUTPUT_LIMIT, COMPILE_ERROR (not run: the program did not
    compile) or SANDBOX_ERROR (not judged: the sandbox or a checker failed); None when not known
    (a peer that does not send it). The heads are the case's first HEAD_CHARS characters of stdout
    and stderr (STDIO: partial output of a case stopped by a limit included).
    """

    index: int
    outcome: CaseOutcome
    detail: str = ""                       # e.g. "expected 3, got 4", "AssertionError", exception text
    wall_s: float = 0.0
    verdict: Verdict | None = None
    peak_memory_mb: float = 0.0
    stdout_head: str = ""
    stderr_head: str = ""


#: How much of a case's stdout and stderr a TestResult keeps (characters each).
HEAD_CHARS = 1024


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
    compile: CompileResult | None = None   # the compile step, when there was one (or a Python syntax error)
    files: Mapping[str, bytes] = field(default_factory=dict)   # the request's fetch_files that existed

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


@dataclass(frozen=True)
class LanguageInfo:
    """One language a sandbox knows, as ``ListLanguages`` reports it."""

    name: str
    aliases: tuple[str, ...] = ()
    available: bool = False                # its toolchain is installed where programs run
    version: str = ""                      # first line of its version command ("" when unavailable)
    compiled: bool = False
    reason: str = ""                       # unavailable: why
    install_hint: str = ""                 # unavailable: what to install
    test_framework: bool = False           # pytest, junit, go_test, jest: the program is a test file
    set: str = ""                          # "core", "all" or "" (the SANDBOX_LANGUAGES set installing it)
    packages: tuple[str, ...] = ()         # Debian packages of its toolchain


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
