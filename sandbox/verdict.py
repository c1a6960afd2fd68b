"""Raw report + request -> ExecutionResult: the host-side pass/fail decision (pure).

The report comes from the trusted supervisor A (sandbox/runtime/supervisor.py)
but is still parsed defensively: a field of the wrong type, an unknown status,
or a case count that differs from what the host computed from the request
makes the whole result SANDBOX_ERROR -- never a pass. Expected outputs only
exist here: STDIO stdout is compared with :mod:`sandbox.output_compare`,
FUNCTION_CALL return values (decoded strictly from the codec) with
:mod:`sandbox.value_compare`. HUMANEVAL asserts were evaluated by A on values
it rebuilt from plain data, so a case passes only on A's explicit "passed".

Verdict order, first match wins: SANDBOX_ERROR (harness failure or bad
report) > COMPILE_ERROR > TIMEOUT (a case timed out, or a wall/CPU limit) >
MEMORY_LIMIT > OUTPUT_LIMIT (output or file size) > RUNTIME_ERROR (a case
raised, crashed, exited non-zero, or hit the process limit) > WRONG_ANSWER >
ACCEPTED, which needs every case PASSED and no limit hit.

A program SIGKILLed from outside (the report's ``killed_outside``: a SIGKILL
that A did not send and that no limit explains -- no OOM kill in the cgroup's
counters, no CPU rlimit, no output or wall limit) was stopped by the host's OOM
killer or an operator: a failure of ours, so the result is SANDBOX_ERROR
(unscored), never a 0 -- unless every case had already passed. The program
itself cannot send SIGKILL (B's seccomp filter, runtime/seccomp.py: kill, killpg,
raise, tgkill, pidfd_send_signal, F_SETSIG with signal 9 get EPERM), so it cannot
dodge its 0 by killing itself. Left open: timer_create / mq_notify asking for
SIGKILL (the signal sits in a struct seccomp cannot read); such a program gets an
unscored result.

Per case (TestResult): the case's own verdict (the same order, for that case alone), its wall
time, its peak memory (STDIO: each case is its own process) and the heads of its stdout and stderr
(STDIO; the partial output of a case stopped by a limit included). A timed-out STDIO case's
partial output is also the result's stdout/stderr when it is the first case that did not pass.

Mode ``checker`` (sandbox/checker.py): the cases that ran to completion (exit 0, no limit, output
not truncated) are listed by :func:`cases_to_check`; the host runs the checker on each and hands
its :class:`CheckerVerdict` per case to :func:`build_result`. A case whose checker failed (it did
not compile, crashed or exceeded a limit on the expected answer too, exited other than 0/1/2/8,
or gave no verdict; checker.py decides) is NOT_RUN with the case verdict SANDBOX_ERROR, and the
whole result is SANDBOX_ERROR: the checker belongs to the reference, so its failure says nothing
about the program and must never become a 0 (nor a pass); the error text starts with ``checker
failed`` so an operator can tell it from the sandbox's own failures.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass
from typing import Any

from reward_core.sandbox_contract import (
    FETCH_BYTES_CAP,
    HEAD_CHARS,
    CaseOutcome,
    CompileResult,
    ExecutionRequest,
    ExecutionResult,
    LimitHit,
    TestResult,
    TestStyle,
    Verdict,
)
from sandbox.output_compare import describe_mismatch as describe_output_mismatch
from sandbox.runtime import codec
from sandbox.value_compare import describe_mismatch as describe_value_mismatch
from sandbox.value_compare import values_equal

_LIMITS = {h.value: h for h in LimitHit if h is not LimitHit.NONE}
_LIMIT_PRIORITY = (LimitHit.WALL_TIME, LimitHit.CPU_TIME, LimitHit.MEMORY, LimitHit.OUTPUT, LimitHit.FILE_SIZE,
                   LimitHit.PROCESSES)
_LIMIT_TEXT = {LimitHit.WALL_TIME: "wall-clock limit exceeded", LimitHit.CPU_TIME: "CPU time limit exceeded",
               LimitHit.MEMORY: "memory limit exceeded", LimitHit.OUTPUT: "output limit exceeded",
               LimitHit.FILE_SIZE: "file size limit exceeded", LimitHit.PROCESSES: "process limit hit"}


KILLED_OUTSIDE = ("the program was killed from outside the sandbox (SIGKILL sent by none of our limits: the "
                  "host's OOM killer or an operator); this is not a verdict on the code")


CHECKER_FAILED = "checker failed"


class MalformedReport(ValueError):
    """The report does not have the shape A produces."""


@dataclass(frozen=True)
class CheckerVerdict:
    """What the checker said about one case: accepted, or not (``message``); ``failed``: no verdict at all."""

    accepted: bool = False
    message: str = ""
    failed: bool = False          # the checker itself failed: not a verdict on the program


def sandbox_error(request: ExecutionRequest, error: str, backend: str, wall_s: float = 0.0) -> ExecutionResult:
    """The result for an execution the sandbox could not carry out: unscored, never a pass."""
    return ExecutionResult(id=request.id, verdict=Verdict.SANDBOX_ERROR, error=error, backend=backend,
                           wall_s=round(wall_s, 6))


def _get(d: Any, key: str, types: type | tuple, default: Any = None, required: bool = False) -> Any:
    if type(d) is not dict:
        raise MalformedReport(f"expected an object around {key!r}")
    if key not in d or d[key] is None:
        if required:
            raise MalformedReport(f"missing {key!r}")
        return default
    value = d[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise MalformedReport(f"{key!r} has the wrong type")
    if not isinstance(value, types):
        raise MalformedReport(f"{key!r} has the wrong type ({type(value).__name__})")
    return value


def _limit(d: Any) -> LimitHit:
    name = _get(d, "limit", str, "")
    if name and name not in _LIMITS and name != "cleanup":
        raise MalformedReport(f"unknown limit {name!r}")
    return _LIMITS.get(name, LimitHit.NONE)


def uses_checker(request: ExecutionRequest) -> bool:
    """Does this request's verdict need a checker program (mode checker, STDIO)?"""
    return TestStyle(request.style) is TestStyle.STDIO and request.compare.effective_mode == "checker"


def cases_to_check(request: ExecutionRequest, report: Any) -> list[tuple[int, str]]:
    """Mode checker: (index, program's stdout) of each case that ran to completion; [] for a bad report."""
    if not uses_checker(request) or type(report) is not dict or report.get("status") != "ok":
        return []
    raw_cases = report.get("cases")
    if type(raw_cases) is not list or len(raw_cases) != len(request.cases):
        return []
    out = []
    for i, raw in enumerate(raw_cases):
        try:
            if _ran_to_completion(raw):
                out.append((i, _get(raw, "stdout", str, "")))
        except MalformedReport:
            return []
    return out


def _ran_to_completion(raw: Any) -> bool:
    return (_get(raw, "status", str, "") == "exited" and _limit(raw) is LimitHit.NONE
            and _get(raw, "signal", int) is None and _get(raw, "exit_code", int) == 0
            and not _get(raw, "stdout_truncated", bool, False))


def build_result(request: ExecutionRequest, report: Any, n_cases: int, backend: str,
                 checks: dict[int, CheckerVerdict] | None = None) -> ExecutionResult:
    """The typed result for a raw report. Any malformation is SANDBOX_ERROR.

    ``checks``: mode checker, the checker's verdict per case index (see :func:`cases_to_check`);
    a case that needs one and has none is not judged (SANDBOX_ERROR, never a pass).
    """
    try:
        return _build(request, report, n_cases, backend, checks or {})
    except (MalformedReport, TypeError, ValueError, KeyError) as exc:
        return sandbox_error(request, f"malformed sandbox report: {exc}", backend)


def _build(request: ExecutionRequest, report: Any, n_cases: int, backend: str,
           checks: dict[int, CheckerVerdict]) -> ExecutionResult:
    status = _get(report, "status", str, required=True)
    if status != "ok":
        return sandbox_error(request, f"sandbox harness error: {_get(report, 'error', str, '')[:2000]}", backend)
    raw_cases = _get(report, "cases", list, required=True)
    if len(raw_cases) != n_cases:
        raise MalformedReport(f"{len(raw_cases)} case outcomes for {n_cases} cases")
    style = TestStyle(request.style)
    judge = {TestStyle.HUMANEVAL: _judge_humaneval, TestStyle.FUNCTION_CALL: _judge_function_call,
             TestStyle.STDIO: _judge_stdio}[style]
    compile_error, compile_limit = _compile_failure(report, style)
    tests, limits, checker_failures = [], [], []
    for i, raw in enumerate(raw_cases):
        outcome, detail, case_limit = judge(request, i, raw)
        unjudged = False
        if outcome is _CHECK:
            outcome, detail, unjudged = _checked(checks.get(i))
            if unjudged:
                checker_failures.append(f"{CHECKER_FAILED} on case {i}: {detail}")
        tests.append(_test_result(i, outcome, detail, case_limit, raw, style, bool(compile_error), unjudged))
        limits.append(case_limit)
    process = _get(report, "process", dict, {})
    limits.append(_limit(process))
    hit = next((h for h in _LIMIT_PRIORITY if h in limits), LimitHit.NONE)
    out = _output_source(report, raw_cases, tests, style)
    verdict, error = _verdict(tests, hit, compile_error)
    if verdict is not Verdict.ACCEPTED and _killed_outside(report, raw_cases, process, style):
        return sandbox_error(request, KILLED_OUTSIDE, backend, _usage(report, raw_cases, process, style)[0])
    if compile_error:
        hit = compile_limit
    elif checker_failures:
        verdict, error = Verdict.SANDBOX_ERROR, checker_failures[0][:2000]
    wall, cpu, rss = _usage(report, raw_cases, process, style)
    cap = request.limits.output_bytes
    return ExecutionResult(
        id=request.id, verdict=verdict, tests=tuple(tests),
        stdout=_get(out, "stdout", str, "")[:cap], stderr=_get(out, "stderr", str, "")[:cap],
        exit_code=_get(out, "exit_code", int), signal=_get(out, "signal", int),
        wall_s=round(wall, 6), cpu_s=round(cpu, 6), peak_memory_mb=round(rss / 1024.0, 3),
        limit_hit=hit, error=error, backend=backend, compile=_compile_step(report, style, cap),
        files=_fetched(request, report))


def _compile_step(report: dict, style: TestStyle, cap: int) -> CompileResult | None:
    """The compile step as the supervisor saw it (STDIO: compiled languages, or a Python syntax error)."""
    comp = _get(report, "compile", dict) if style is TestStyle.STDIO else None
    if comp is None:
        return None
    return CompileResult(exit_code=_get(comp, "exit_code", int), signal=_get(comp, "signal", int),
                         stdout=_get(comp, "stdout", str, "")[:cap], stderr=_get(comp, "stderr", str, "")[:cap],
                         wall_s=round(float(_get(comp, "wall_s", (int, float), 0.0)), 6),
                         timed_out=_get(comp, "timed_out", bool, False), cached=_get(comp, "cached", bool, False))


def _fetched(request: ExecutionRequest, report: dict) -> dict[str, bytes]:
    """The files read back after the run (base64 in the report): only those asked for, within their caps."""
    raw = _get(report, "files", dict, {})
    wanted, each = set(request.fetch_files), request.limits.file_size_mb << 20
    out: dict[str, bytes] = {}
    for name, text in raw.items():
        if name not in wanted or type(text) is not str:
            raise MalformedReport(f"fetched file {str(name)[:100]!r} was not asked for or is not base64 text")
        try:
            out[name] = binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
        except (binascii.Error, UnicodeEncodeError):
            raise MalformedReport(f"fetched file {name[:100]!r} is not valid base64") from None
        if len(out[name]) > each:
            raise MalformedReport(f"fetched file {name[:100]!r} is over its cap")
    if sum(len(v) for v in out.values()) > FETCH_BYTES_CAP:
        raise MalformedReport("fetched files are over their cap")
    return out


def _checked(check: CheckerVerdict | None) -> tuple[CaseOutcome, str, bool]:
    """A checked case's (outcome, detail, unjudged) from the checker's verdict."""
    if check is None:
        return CaseOutcome.NOT_RUN, f"{CHECKER_FAILED}: no checker verdict for this case", True
    if check.failed:
        return CaseOutcome.NOT_RUN, check.message or CHECKER_FAILED, True
    if check.accepted:
        return CaseOutcome.PASSED, "", False
    return CaseOutcome.FAILED, check.message or "the checker rejected the output", False


_LIMIT_VERDICT = {LimitHit.WALL_TIME: Verdict.TIMEOUT, LimitHit.CPU_TIME: Verdict.TIMEOUT,
                  LimitHit.MEMORY: Verdict.MEMORY_LIMIT, LimitHit.OUTPUT: Verdict.OUTPUT_LIMIT,
                  LimitHit.FILE_SIZE: Verdict.OUTPUT_LIMIT}
_OUTCOME_VERDICT = {CaseOutcome.PASSED: Verdict.ACCEPTED, CaseOutcome.FAILED: Verdict.WRONG_ANSWER,
                    CaseOutcome.TIMEOUT: Verdict.TIMEOUT, CaseOutcome.ERROR: Verdict.RUNTIME_ERROR}


def _test_result(i: int, outcome: CaseOutcome, detail: str, limit: LimitHit, raw: Any, style: TestStyle,
                 compile_error: bool, unjudged: bool) -> TestResult:
    """One case's TestResult: its own verdict, time, and (STDIO: one process per case) memory and output heads."""
    if unjudged:
        verdict = Verdict.SANDBOX_ERROR
    elif outcome is CaseOutcome.NOT_RUN:
        verdict = Verdict.COMPILE_ERROR if compile_error else Verdict.SANDBOX_ERROR
    elif outcome is CaseOutcome.ERROR and limit in _LIMIT_VERDICT:
        verdict = _LIMIT_VERDICT[limit]
    else:
        verdict = _OUTCOME_VERDICT[outcome]
    stdio = style is TestStyle.STDIO
    rss_kb = _get(raw, "max_rss_kb", (int, float), 0) if stdio else 0
    return TestResult(index=i, outcome=outcome, detail=detail[:2000],
                      wall_s=float(_get(raw, "wall_s", (int, float), 0.0)), verdict=verdict,
                      peak_memory_mb=round(rss_kb / 1024.0, 3),
                      stdout_head=_get(raw, "stdout", str, "")[:HEAD_CHARS] if stdio else "",
                      stderr_head=_get(raw, "stderr", str, "")[:HEAD_CHARS] if stdio else "")


def _verdict(tests: list[TestResult], hit: LimitHit, compile_error: str) -> tuple[Verdict, str]:
    outcomes = [t.outcome for t in tests]
    first_bad = next((t for t in tests if t.outcome is not CaseOutcome.PASSED), None)
    detail = first_bad.detail if first_bad is not None else ""
    if compile_error:
        return Verdict.COMPILE_ERROR, compile_error
    if CaseOutcome.TIMEOUT in outcomes or hit in (LimitHit.WALL_TIME, LimitHit.CPU_TIME):
        return Verdict.TIMEOUT, _LIMIT_TEXT.get(hit, "") or detail
    if hit is LimitHit.MEMORY:
        return Verdict.MEMORY_LIMIT, _LIMIT_TEXT[hit]
    if hit in (LimitHit.OUTPUT, LimitHit.FILE_SIZE):
        return Verdict.OUTPUT_LIMIT, _LIMIT_TEXT[hit]
    if CaseOutcome.ERROR in outcomes or hit is LimitHit.PROCESSES:
        return Verdict.RUNTIME_ERROR, detail or _LIMIT_TEXT.get(hit, "")
    if CaseOutcome.FAILED in outcomes:
        return Verdict.WRONG_ANSWER, detail
    if CaseOutcome.NOT_RUN in outcomes or not tests:
        return Verdict.SANDBOX_ERROR, "some test cases were not run"
    return Verdict.ACCEPTED, ""


def _killed_outside(report: dict, raw_cases: list, process: dict, style: TestStyle) -> bool:
    """Did the supervisor see a SIGKILL of the program (or its compiler) that no limit explains?"""
    parts = [process] + [c for c in raw_cases if type(c) is dict]
    if style is TestStyle.STDIO:
        parts.append(_get(report, "compile", dict) or {})
    return any(_get(d, "killed_outside", bool, False) and _limit(d) is LimitHit.NONE for d in parts)


def _compile_failure(report: dict, style: TestStyle) -> tuple[str, LimitHit]:
    if style is TestStyle.STDIO:
        comp = _get(report, "compile", dict)
        if comp is not None and not _get(comp, "ok", bool, required=True):
            text = (_get(comp, "stderr", str, "") + _get(comp, "stdout", str, ""))[-4000:]
            if _get(comp, "timed_out", bool, False):
                text = ("compilation timed out\n" + text).rstrip()
            return text or "compilation failed", _limit(comp)
        return "", LimitHit.NONE
    load = _get(report, "load", dict, {})
    if not _get(load, "ok", bool, True) and _get(load, "phase", str, "") == "compile":
        return _get(load, "detail", str, "") or "the program does not compile", LimitHit.NONE
    return "", LimitHit.NONE


_HUMANEVAL = {"passed": CaseOutcome.PASSED, "failed": CaseOutcome.FAILED, "error": CaseOutcome.ERROR,
              "timeout": CaseOutcome.TIMEOUT, "not_run": CaseOutcome.NOT_RUN}


def _judge_humaneval(request: ExecutionRequest, i: int, raw: Any) -> tuple[CaseOutcome, str, LimitHit]:
    status = _get(raw, "status", str, required=True)
    if status not in _HUMANEVAL:
        raise MalformedReport(f"unknown case status {status!r}")
    limit = LimitHit.MEMORY if _get(raw, "exc_type", str, "") == "MemoryError" else LimitHit.NONE
    return _HUMANEVAL[status], _get(raw, "detail", str, ""), limit


def _judge_function_call(request: ExecutionRequest, i: int, raw: Any) -> tuple[CaseOutcome, str, LimitHit]:
    status = _get(raw, "status", str, required=True)
    if status == "returned":
        try:
            actual = codec.decode(raw.get("value"))
        except (codec.CodecError, RecursionError) as exc:
            return CaseOutcome.ERROR, f"malformed return value: {exc}", LimitHit.NONE
        case = request.cases[i]
        if values_equal(case.expected, actual, request.compare.tolerance):
            return CaseOutcome.PASSED, "", LimitHit.NONE
        return CaseOutcome.FAILED, describe_value_mismatch(case.expected, actual), LimitHit.NONE
    if status in ("error", "timeout", "not_run"):
        limit = LimitHit.MEMORY if _get(raw, "exc_type", str, "") == "MemoryError" else LimitHit.NONE
        return _HUMANEVAL[status], _get(raw, "detail", str, ""), limit
    raise MalformedReport(f"unknown case status {status!r}")


def _judge_stdio(request: ExecutionRequest, i: int, raw: Any) -> tuple[CaseOutcome, str, LimitHit]:
    status = _get(raw, "status", str, required=True)
    if status in ("timeout", "not_run"):
        return _HUMANEVAL[status], "time limit exceeded" if status == "timeout" else "", _limit(raw)
    if status != "exited":
        raise MalformedReport(f"unknown case status {status!r}")
    limit = _limit(raw)
    if limit is not LimitHit.NONE:
        return (CaseOutcome.TIMEOUT if limit in (LimitHit.WALL_TIME, LimitHit.CPU_TIME) else CaseOutcome.ERROR,
                _LIMIT_TEXT[limit], limit)
    sig, code = _get(raw, "signal", int), _get(raw, "exit_code", int)
    if sig is not None:
        return CaseOutcome.ERROR, f"killed by signal {sig}", LimitHit.NONE
    if code != 0:
        tail = _get(raw, "stderr", str, "").strip().splitlines()[-1:] or [""]
        return CaseOutcome.ERROR, f"exit status {code}" + (f": {tail[0][:300]}" if tail[0] else ""), LimitHit.NONE
    if _get(raw, "stdout_truncated", bool, False):
        return CaseOutcome.ERROR, _LIMIT_TEXT[LimitHit.OUTPUT], LimitHit.OUTPUT
    if uses_checker(request):
        return _CHECK, "", LimitHit.NONE       # the checker decides (build_result)
    expected, actual = request.cases[i].expected_stdout or "", _get(raw, "stdout", str, "")
    mismatch = describe_output_mismatch(expected, actual, request.compare)
    if not mismatch:
        return CaseOutcome.PASSED, "", LimitHit.NONE
    return CaseOutcome.FAILED, mismatch, LimitHit.NONE


_CHECK: Any = object()    # _judge_stdio's outcome for a case the checker decides


def _output_source(report: dict, raw_cases: list, tests: list[TestResult], style: TestStyle) -> dict:
    """Whose stdout/stderr/exit status the result shows: the process, or (STDIO) the first failing case."""
    if style is not TestStyle.STDIO:
        return {**_get(report, "process", dict, {}), "stdout": _get(report, "stdout", str, ""),
                "stderr": _get(report, "stderr", str, "")}
    # a case stopped by the time limit shows its partial output (one that never started has none)
    ran = [(t, raw) for t, raw in zip(tests, raw_cases)
           if _get(raw, "status", str) == "exited" or (_get(raw, "status", str) == "timeout" and "stdout" in raw)]
    for t, raw in ran:
        if t.outcome is not CaseOutcome.PASSED:
            return raw
    if ran:
        return ran[-1][1]
    comp = _get(report, "compile", dict)
    return {"stderr": _get(comp, "stderr", str, "")} if comp else {}


def _usage(report: dict, raw_cases: list, process: dict, style: TestStyle) -> tuple[float, float, float]:
    num = (int, float)
    if style is not TestStyle.STDIO:
        return (_get(process, "wall_s", num, 0.0), _get(process, "cpu_s", num, 0.0),
                _get(process, "max_rss_kb", num, 0))
    ran = [c for c in raw_cases if type(c) is dict and c.get("status") in ("exited", "timeout")]
    comp = _get(report, "compile", dict) or {}
    wall = _get(comp, "wall_s", num, 0.0) + sum(_get(c, "wall_s", num, 0.0) for c in ran)
    cpu = sum(_get(c, "cpu_s", num, 0.0) for c in ran)
    rss = max([_get(c, "max_rss_kb", num, 0) for c in ran] or [0])
    return wall, cpu, rss
