"""Checker programs (special judges): mode ``checker`` of OutputCompare, run in the sandbox.

Competitive programming's special judges accept any of several correct outputs (a permutation,
any shortest path, a float answer checked by formula). The dataset gives a *checker*: a program
in any language this sandbox runs (``OutputCompare.checker_code`` in
``OutputCompare.checker_language``, Python by default). The interface is testlib's
(https://github.com/MikeMirzayanov/testlib, ``registerTestlibCmd``), so testlib checkers work
unchanged:

* it is started as ``<run command> input.txt output.txt answer.txt``: the test's input, the
  **program's** output and the **expected** output (the jury's answer), three files in its
  working directory (its scratch directory); its stdin is empty;
* its exit status is the verdict: ``0`` accepted; ``1`` wrong answer, ``2`` presentation error
  and ``8`` unexpected end of the program's output (testlib's ``_wa``, ``_pe`` and
  ``_unexpected_eof``: verdicts on the program) reject the output; anything else -- testlib's
  ``3`` (``_fail``: the checker found the *answer* file or itself wrong), another status, a
  signal, a limit, a checker that does not compile -- is a **checker failure**;
* what it writes to stderr (testlib's message), else to stdout, is the case's detail.

A crash must not read as "wrong answer": a Python checker runs inside a small wrapper (its source
compiled and executed as ``__main__``; ``sys.exit`` passes through) that turns an uncaught
exception (a SyntaxError included) into exit status 3, a checker failure. Other languages whose
runtime exits 1 or 2 on an uncaught error (Java, JavaScript, Ruby, Go's panic: 2) must catch
their own errors and exit 3; C and C++ crashes are signals, failures already.

Whose fault a checker failure is: the program's output is the checker's input, and a naive
checker (``int(token)`` on whatever the program printed) crashes on garbage. Were that always
unscored, a policy could learn to print garbage to dodge its 0. So a checker that failed on a
case is run once more on that case's *expected answer* as the output: if it accepts it, the
checker works and it was the program's output that broke it -- a wrong answer (a 0, with the
checker's message). Only a checker that fails on the expected answer too (or does not compile,
or that the sandbox could not run) is a **checker failure**: that case is NOT_RUN with the case
verdict SANDBOX_ERROR, and the whole execution is SANDBOX_ERROR (unscored, never a 0 and never a
pass; its error starts with ``checker failed``; sandbox/verdict.py). Why not a verdict of its
own: the program may well be right, and a client treats SANDBOX_ERROR as "could not judge"
already (the ``code`` task answers ERROR, unscored); the text tells the dataset's fault from the
sandbox's. A checker reads hostile output: it must parse defensively (testlib does); the sandbox
keeps a subverted checker inside, but the checker's exit status is the verdict.

How it runs: after the program's execution, once per case that ran to completion (exit status 0,
no limit, output not truncated), as an ordinary execution of the same executor (the same slots,
isolation and limits machinery; no other sandbox path): a STDIO request of one case with the
three texts as ``files`` and their names as ``args``. The checker is untrusted like any program
(a dataset author wrote it); the expected output enters only the checker's execution, never the
program's, which has ended before the checker starts. Each case's checker is a separate
execution, so a compiled checker is compiled once per case (a binary never outlives its
execution); the cases' checkers run concurrently, up to the executor's concurrency.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Callable, Mapping

from reward_core.sandbox_contract import (
    Cancellation,
    ExecutionRequest,
    ExecutionResult,
    InvalidExecutionRequest,
    LimitHit,
    Limits,
    OutputCompare,
    TestCase,
    TestStyle,
    UnsupportedLanguage,
    Verdict,
)
from sandbox.languages import Language, resolve_language
from sandbox.verdict import CHECKER_FAILED, CheckerVerdict, cases_to_check, uses_checker

INPUT_FILE, OUTPUT_FILE, ANSWER_FILE = "input.txt", "output.txt", "answer.txt"
#: testlib's exit statuses that reject the program's output: _wa, _pe, _unexpected_eof.
REJECTING_EXIT_CODES = frozenset({1, 2, 8})
#: The checker's own limits; file size and scratch grow with the three texts.
CHECKER_LIMITS = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=512, output_bytes=65536)
_MB = 1 << 20
_MESSAGE_CHARS = 500

Execute = Callable[[ExecutionRequest, "Cancellation | None"], ExecutionResult]


def validate_checker(request: ExecutionRequest, languages: Mapping[str, Language] | None = None) -> None:
    """Mode checker: STDIO only, and the checker's language must run here. Raises InvalidExecutionRequest."""
    if request.compare.effective_mode != "checker":
        return
    if TestStyle(request.style) is not TestStyle.STDIO:
        raise InvalidExecutionRequest(f"compare mode 'checker' applies to stdio tests only, "
                                      f"not {TestStyle(request.style).value}")
    try:
        resolve_language(request.compare.checker_language or "python", languages)
    except UnsupportedLanguage:
        raise
    except InvalidExecutionRequest as exc:
        raise InvalidExecutionRequest(f"the checker's language: {exc}") from None


#: A Python checker's wrapper: an uncaught exception is exit status 3 (testlib's _fail), not 1 (= wrong answer).
_PYTHON_WRAPPER = """import os as _os, sys as _sys, traceback as _tb
_source = {source!r}
try:
    exec(compile(_source, "checker.py", "exec"), {{"__name__": "__main__", "__builtins__": __builtins__}})
except SystemExit:
    raise
except BaseException:
    _tb.print_exc()
    _sys.stdout.flush()
    _sys.stderr.flush()
    _os._exit(3)
"""


def checker_source(compare: OutputCompare, languages: Mapping[str, Language] | None = None) -> str:
    """The source that runs: a Python checker wrapped (see the module docstring), any other as given."""
    language = resolve_language(compare.checker_language or "python", languages)
    if language.fast_path_python:
        return _PYTHON_WRAPPER.format(source=compare.checker_code)
    return compare.checker_code


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "replace")


def checker_request(request: ExecutionRequest, index: int, output: str,
                    languages: Mapping[str, Language] | None = None) -> ExecutionRequest:
    """The checker's execution for case ``index``, whose program printed ``output``."""
    case = request.cases[index]
    files = {INPUT_FILE: _encode(case.stdin), OUTPUT_FILE: _encode(output),
             ANSWER_FILE: _encode(case.expected_stdout or "")}
    largest = max(len(f) for f in files.values())
    total = sum(len(f) for f in files.values())
    base = CHECKER_LIMITS
    limits = Limits(wall_s=base.wall_s, cpu_s=base.cpu_s, memory_mb=base.memory_mb,
                    output_bytes=base.output_bytes, compile_wall_s=request.limits.compile_wall_s,
                    file_size_mb=max(base.file_size_mb, math.ceil(largest / _MB) + 1),
                    scratch_mb=max(base.scratch_mb, base.scratch_mb + math.ceil(total / _MB)))
    compare: OutputCompare = request.compare
    return ExecutionRequest(code=checker_source(compare, languages), style=TestStyle.STDIO,
                            language=compare.checker_language or "python", id=f"{request.id}#checker{index}",
                            cases=(TestCase(stdin="", expected_stdout=""),), limits=limits,
                            compare=OutputCompare(mode="tokens"), files=files,
                            args=(INPUT_FILE, OUTPUT_FILE, ANSWER_FILE))


def interpret(result: ExecutionResult) -> CheckerVerdict:
    """The checker's execution as a verdict on one case (see the module docstring)."""
    message = (result.stderr.strip() or result.stdout.strip())[:_MESSAGE_CHARS]
    if result.verdict is Verdict.SANDBOX_ERROR:
        return CheckerVerdict(failed=True, message=f"{CHECKER_FAILED}: the sandbox could not run it: {result.error}")
    if result.verdict is Verdict.COMPILE_ERROR:
        return CheckerVerdict(failed=True, message=f"{CHECKER_FAILED}: it does not compile: "
                                                   f"{result.error[-_MESSAGE_CHARS:]}")
    if result.limit_hit is not LimitHit.NONE or result.verdict in (Verdict.TIMEOUT, Verdict.MEMORY_LIMIT,
                                                                   Verdict.OUTPUT_LIMIT):
        return CheckerVerdict(failed=True, message=f"{CHECKER_FAILED}: it exceeded a limit ({result.verdict.value}: "
                                                   f"{result.error})")
    if result.signal is not None:
        return CheckerVerdict(failed=True, message=f"{CHECKER_FAILED}: it was killed by signal {result.signal}")
    if result.exit_code == 0:
        return CheckerVerdict(accepted=True, message=message)
    if result.exit_code in REJECTING_EXIT_CODES:
        return CheckerVerdict(message=f"checker: {message}" if message else
                              f"the checker rejected the output (exit status {result.exit_code})")
    return CheckerVerdict(failed=True, message=f"{CHECKER_FAILED}: exit status {result.exit_code} (0 accepts, "
                                               f"1, 2 or 8 reject; testlib's 3 is its own failure)"
                                               + (f": {message}" if message else ""))


def run_checker(execute: Execute, request: ExecutionRequest, report: object, pool: concurrent.futures.Executor,
                cancel: Cancellation | None = None,
                languages: Mapping[str, Language] | None = None) -> dict[int, CheckerVerdict]:
    """The checker's verdict for every case of ``report`` that needs one ({} when none does).

    ``execute(request, cancel)`` runs one execution (the executor's own); ``pool`` runs the cases'
    checkers concurrently. A checker that failed on a case is tried once more on that case's
    expected answer as the output (see the module docstring). Never raises: a checker execution
    that raises is a checker failure.
    """
    if not uses_checker(request):
        return {}
    outputs = dict(cases_to_check(request, report))
    verdicts = _run_all(execute, request, outputs, pool, cancel, languages)
    # A failure of the checker itself (not of the sandbox running it): does it judge the answer?
    broken = {i: request.cases[i].expected_stdout or "" for i, (v, sandbox) in verdicts.items()
              if v.failed and not sandbox}
    if broken:
        selfcheck = _run_all(execute, request, broken, pool, cancel, languages)
        for i, (v, _) in selfcheck.items():
            if v.accepted:
                message = verdicts[i][0].message.removeprefix(f"{CHECKER_FAILED}: ")
                verdicts[i] = (CheckerVerdict(message=f"the checker failed on this output, though it accepts the "
                                                      f"expected answer: {message}"[:_MESSAGE_CHARS]), False)
    return {i: v for i, (v, _) in verdicts.items()}


def _run_all(execute: Execute, request: ExecutionRequest, outputs: Mapping[int, str],
             pool: concurrent.futures.Executor, cancel: Cancellation | None,
             languages: Mapping[str, Language] | None) -> dict[int, tuple[CheckerVerdict, bool]]:
    """Case index -> (verdict, whether the *sandbox* failed to run the checker), for these outputs."""
    out: dict[int, tuple[CheckerVerdict, bool]] = {}
    futures = {}
    for i, output in outputs.items():
        try:
            futures[i] = pool.submit(execute, checker_request(request, i, output, languages), cancel)
        except Exception as exc:  # noqa: BLE001 - e.g. the texts exceed what a request may carry
            out[i] = (_failure(exc), True)
    for i, future in futures.items():
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001 - an unusable checker request is a checker failure, not a crash
            out[i] = (_failure(exc), True)
            continue
        out[i] = (interpret(result), result.verdict is Verdict.SANDBOX_ERROR)
    return out


def _failure(exc: Exception) -> CheckerVerdict:
    return CheckerVerdict(failed=True, message=f"{CHECKER_FAILED}: {type(exc).__name__}: {exc}"[:_MESSAGE_CHARS])
