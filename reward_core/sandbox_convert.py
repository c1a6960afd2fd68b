"""Conversion between ``reward.v1.sandbox_pb2`` messages and the execution dataclasses: the one place.

Only the gRPC front end (``sandbox/servicer.py``) and the sandbox clients
(``reward_core/clients/sandbox.py``) touch protobuf; both go through here.

Two conventions of the wire format (``proto/reward/v1/sandbox.proto``):

* FUNCTION_CALL values travel as JSON text (``args_json``, ``kwargs_json``,
  ``expected_json``); an empty string means "none" ([] / {} / null).
* A limit left at 0 takes the default of :class:`reward_core.sandbox_contract.Limits`.
* Files (``ExecutionRequest.files``, ``ExecutionResult.files``) travel as raw bytes; their names
  are checked when the dataclass is built (a name outside the scratch directory is an
  InvalidExecutionRequest). An unset ``ExecutionResult.compile`` is "no compile step".

proto3 strings must be valid UTF-8, and a program may print anything, so
every string put into a message passes through :func:`utf8_safe` first: bytes
that were not valid UTF-8 (surrogate escapes in a Python ``str``) become U+FFFD
instead of failing the whole response.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from reward.v1 import sandbox_pb2 as pb
from reward_core.sandbox_contract import (
    CaseOutcome,
    CompileResult,
    ExecutionRequest,
    ExecutionResult,
    InvalidExecutionRequest,
    LanguageInfo,
    LimitHit,
    Limits,
    OutputCompare,
    TestCase,
    TestResult,
    TestStyle,
    Verdict,
)

_STYLE_TO_PB = {s: pb.TestStyle.Value(f"TEST_STYLE_{s.name}") for s in TestStyle}
_STYLE_FROM_PB = {v: k for k, v in _STYLE_TO_PB.items()}
_VERDICT_TO_PB = {v: pb.Verdict.Value(f"VERDICT_{v.name}") for v in Verdict}
_VERDICT_FROM_PB = {v: k for k, v in _VERDICT_TO_PB.items()}
_OUTCOME_TO_PB = {o: pb.CaseOutcome.Value(f"CASE_OUTCOME_{o.name}") for o in CaseOutcome}
_OUTCOME_FROM_PB = {v: k for k, v in _OUTCOME_TO_PB.items()}
_LIMIT_TO_PB = {h: pb.LimitHit.Value(f"LIMIT_HIT_{h.name}") for h in LimitHit}
_LIMIT_FROM_PB = {v: k for k, v in _LIMIT_TO_PB.items()}
_LIMIT_FIELDS = tuple(f.name for f in fields(Limits))
_DEFAULT_LIMITS = Limits()
_OTHER_SURROGATES = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def utf8_safe(text: str) -> str:
    """``text`` as valid UTF-8: surrogates (undecodable bytes, lone halves) become U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    # Undecodable bytes kept as surrogate escapes (U+DC80..U+DCFF) are recovered, then each is
    # replaced; any other lone surrogate is replaced directly.
    raw = _OTHER_SURROGATES.sub("\ufffd", text).encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "replace")


# --- requests -------------------------------------------------------------------------------


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidExecutionRequest(f"{what} is not JSON-serializable: {exc}") from None


def case_to_proto(case: TestCase, index: int = 0) -> pb.TestCase:
    msg = pb.TestCase(stdin=utf8_safe(case.stdin),
                      args_json=_dumps(list(case.args), f"case {index} args") if case.args else "",
                      kwargs_json=_dumps(dict(case.kwargs), f"case {index} kwargs") if case.kwargs else "",
                      expected_json=_dumps(case.expected, f"case {index} expected"))
    if case.expected_stdout is not None:
        msg.expected_stdout = utf8_safe(case.expected_stdout)
    return msg


def _loads(text: str, what: str, kind: type, empty: Any) -> Any:
    if text == "":
        return empty
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidExecutionRequest(f"{what} is not valid JSON ({exc}): {text[:80]!r}") from None
    if kind is not object and not isinstance(value, kind):
        raise InvalidExecutionRequest(f"{what} must be a JSON {'array' if kind is list else 'object'}, "
                                      f"got {type(value).__name__}")
    return value


def case_from_proto(msg: pb.TestCase, index: int = 0) -> TestCase:
    """Raises InvalidExecutionRequest when a JSON field does not parse (or has the wrong shape)."""
    return TestCase(
        stdin=msg.stdin,
        expected_stdout=msg.expected_stdout if msg.HasField("expected_stdout") else None,
        args=tuple(_loads(msg.args_json, f"case {index}: args_json", list, [])),
        kwargs=_loads(msg.kwargs_json, f"case {index}: kwargs_json", dict, {}),
        expected=_loads(msg.expected_json, f"case {index}: expected_json", object, None),
    )


def limits_to_proto(limits: Limits) -> pb.Limits:
    return pb.Limits(**{name: getattr(limits, name) for name in _LIMIT_FIELDS})


def limits_from_proto(msg: pb.Limits, defaults: Limits = _DEFAULT_LIMITS) -> Limits:
    """0 takes the default; a negative (or NaN) limit raises InvalidExecutionRequest."""
    return Limits(**{name: getattr(msg, name) or getattr(defaults, name) for name in _LIMIT_FIELDS})


def compare_to_proto(compare: OutputCompare) -> pb.OutputCompare:
    msg = pb.OutputCompare(ignore_trailing_whitespace=compare.ignore_trailing_whitespace,
                           normalize_line_endings=compare.normalize_line_endings, mode=compare.mode,
                           checker_code=utf8_safe(compare.checker_code), checker_language=compare.checker_language)
    if compare.float_tolerance is not None:
        msg.float_tolerance = compare.float_tolerance
    return msg


def compare_from_proto(msg: pb.OutputCompare) -> OutputCompare:
    """Raises InvalidExecutionRequest for an unknown mode or a checker mode without a checker."""
    default = OutputCompare()
    return OutputCompare(
        mode=msg.mode, checker_code=msg.checker_code, checker_language=msg.checker_language,
        float_tolerance=msg.float_tolerance if msg.HasField("float_tolerance") else None,
        ignore_trailing_whitespace=(msg.ignore_trailing_whitespace if msg.HasField("ignore_trailing_whitespace")
                                    else default.ignore_trailing_whitespace),
        normalize_line_endings=(msg.normalize_line_endings if msg.HasField("normalize_line_endings")
                                else default.normalize_line_endings),
    )


def request_to_proto(request: ExecutionRequest) -> pb.ExecutionRequest:
    """Raises InvalidExecutionRequest when a FUNCTION_CALL value is not JSON-serializable."""
    return pb.ExecutionRequest(
        id=utf8_safe(request.id), code=utf8_safe(request.code), language=request.language,
        style=_STYLE_TO_PB[TestStyle(request.style)], check_code=utf8_safe(request.check_code),
        entry_point=request.entry_point, prompt=utf8_safe(request.prompt),
        cases=[case_to_proto(c, i) for i, c in enumerate(request.cases)],
        limits=limits_to_proto(request.limits), compare=compare_to_proto(request.compare),
        files={name: bytes(content) for name, content in request.files.items()},
        fetch_files=list(request.fetch_files), args=[utf8_safe(a) for a in request.args])


def request_from_proto(msg: pb.ExecutionRequest, defaults: Limits = _DEFAULT_LIMITS) -> ExecutionRequest:
    """Raises InvalidExecutionRequest for an unspecified style, bad JSON in a case, or a bad limit."""
    style = _STYLE_FROM_PB.get(msg.style)
    if style is None:
        choices = ", ".join(n for n in pb.TestStyle.keys() if n != "TEST_STYLE_UNSPECIFIED")
        raise InvalidExecutionRequest(f"request {msg.id!r}: style is required: one of {choices}")
    return ExecutionRequest(
        code=msg.code, style=style, language=msg.language or "python", id=msg.id,
        check_code=msg.check_code, entry_point=msg.entry_point, prompt=msg.prompt,
        cases=tuple(case_from_proto(c, i) for i, c in enumerate(msg.cases)),
        limits=limits_from_proto(msg.limits, defaults), compare=compare_from_proto(msg.compare),
        files=dict(msg.files), fetch_files=tuple(msg.fetch_files), args=tuple(msg.args))


def batch_request_to_proto(requests: Sequence[ExecutionRequest]) -> pb.ExecuteBatchRequest:
    return pb.ExecuteBatchRequest(requests=[request_to_proto(r) for r in requests])


# --- results --------------------------------------------------------------------------------


def case_result_to_proto(test: TestResult) -> pb.TestResult:
    return pb.TestResult(index=test.index, outcome=_OUTCOME_TO_PB[test.outcome], detail=utf8_safe(test.detail),
                         wall_s=test.wall_s,
                         verdict=_VERDICT_TO_PB[test.verdict] if test.verdict is not None else 0,
                         peak_memory_mb=test.peak_memory_mb, stdout_head=utf8_safe(test.stdout_head),
                         stderr_head=utf8_safe(test.stderr_head))


def case_result_from_proto(msg: pb.TestResult) -> TestResult:
    # An outcome this side does not know fails closed: it is not a pass.
    outcome = _OUTCOME_FROM_PB.get(msg.outcome, CaseOutcome.ERROR)
    return TestResult(index=msg.index, outcome=outcome, detail=msg.detail, wall_s=msg.wall_s,
                      verdict=_VERDICT_FROM_PB.get(msg.verdict), peak_memory_mb=msg.peak_memory_mb,
                      stdout_head=msg.stdout_head, stderr_head=msg.stderr_head)


def result_to_proto(result: ExecutionResult) -> pb.ExecutionResult:
    msg = pb.ExecutionResult(
        id=utf8_safe(result.id), verdict=_VERDICT_TO_PB[result.verdict], passed=result.passed,
        tests=[case_result_to_proto(t) for t in result.tests], tests_passed=result.tests_passed,
        tests_total=result.tests_total, stdout=utf8_safe(result.stdout), stderr=utf8_safe(result.stderr),
        wall_s=result.wall_s, cpu_s=result.cpu_s, peak_memory_mb=result.peak_memory_mb,
        limit_hit=_LIMIT_TO_PB[result.limit_hit], error=utf8_safe(result.error), backend=result.backend)
    if result.exit_code is not None:
        msg.exit_code = result.exit_code
    if result.signal is not None:
        msg.signal = result.signal
    if result.compile is not None:
        msg.compile.CopyFrom(compile_to_proto(result.compile))
    for name, content in result.files.items():
        msg.files[name] = bytes(content)
    return msg


def compile_to_proto(step: CompileResult) -> pb.CompileResult:
    msg = pb.CompileResult(stdout=utf8_safe(step.stdout), stderr=utf8_safe(step.stderr), wall_s=step.wall_s,
                           timed_out=step.timed_out, cached=step.cached)
    if step.exit_code is not None:
        msg.exit_code = step.exit_code
    if step.signal is not None:
        msg.signal = step.signal
    return msg


def compile_from_proto(msg: pb.CompileResult) -> CompileResult:
    return CompileResult(exit_code=msg.exit_code if msg.HasField("exit_code") else None, stdout=msg.stdout,
                         stderr=msg.stderr, wall_s=msg.wall_s, timed_out=msg.timed_out,
                         signal=msg.signal if msg.HasField("signal") else None, cached=msg.cached)


def result_from_proto(msg: pb.ExecutionResult) -> ExecutionResult:
    """A missing or unknown verdict is a SANDBOX_ERROR (fail closed), never a pass."""
    verdict = _VERDICT_FROM_PB.get(msg.verdict)
    error = msg.error
    if verdict is None:
        verdict = Verdict.SANDBOX_ERROR
        error = f"sandbox answered no known verdict ({msg.verdict}); {error}".rstrip("; ")
    return ExecutionResult(
        id=msg.id, verdict=verdict, tests=tuple(case_result_from_proto(t) for t in msg.tests),
        stdout=msg.stdout, stderr=msg.stderr,
        exit_code=msg.exit_code if msg.HasField("exit_code") else None,
        signal=msg.signal if msg.HasField("signal") else None,
        wall_s=msg.wall_s, cpu_s=msg.cpu_s, peak_memory_mb=msg.peak_memory_mb,
        limit_hit=_LIMIT_FROM_PB.get(msg.limit_hit, LimitHit.NONE), error=error, backend=msg.backend,
        compile=compile_from_proto(msg.compile) if msg.HasField("compile") else None, files=dict(msg.files))


def language_to_proto(info: LanguageInfo) -> pb.LanguageInfo:
    return pb.LanguageInfo(name=info.name, aliases=list(info.aliases), available=info.available,
                           version=utf8_safe(info.version), compiled=info.compiled, reason=utf8_safe(info.reason),
                           install_hint=info.install_hint, test_framework=info.test_framework, set=info.set,
                           packages=list(info.packages))


def language_from_proto(msg: pb.LanguageInfo) -> LanguageInfo:
    return LanguageInfo(name=msg.name, aliases=tuple(msg.aliases), available=msg.available, version=msg.version,
                        compiled=msg.compiled, reason=msg.reason, install_hint=msg.install_hint,
                        test_framework=msg.test_framework, set=msg.set, packages=tuple(msg.packages))
