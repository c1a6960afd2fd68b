"""Function-call tests (FUNCTION_CALL) in languages other than Python, from the language's ``call_harness``.

Python runs function calls in its warm interpreter, with the supervisor calling into B
(runtime/harness.py). Another language has no such runtime, so its FUNCTION_CALL request runs as a
STDIO one (:func:`as_stdio`): the program followed by the language's ``call_harness`` (data,
sandbox/languages.toml), one execution per case, whose stdin is the call ``{"args", "kwargs"}`` as
JSON; the harness calls ``{entry_point}`` and prints ``\\0CALL_RESULT <JSON>`` as its last line. The
host then reads each case's report back as a function call (:func:`as_function_report`): the JSON
after the last marker is the returned value, decoded here and compared to ``expected`` on the host
(value_compare.py) as for Python -- expected values never enter the sandbox. A case that exits
non-zero, is killed or prints no marker is an error; a limit keeps its verdict.

The harness runs in the program's own process, so a program can break it (redefine ``JSON``, exit
first): it then fails its own tests, never passes someone else's. What it can print is a value it
returned itself, judged against an expected value it never sees.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from reward_core.sandbox_contract import ExecutionRequest, InvalidExecutionRequest
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.languages import Language
from sandbox.runtime import codec

MARKER = "\0CALL_RESULT "
#: ``name`` or ``Class.method``: the only text of the request that enters the harness's source.
ENTRY_POINT_RE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)?\Z")
_ERROR_LINE = re.compile(r"\s*[\w.]*(?:Error|Exception)\b")


def applies(request: ExecutionRequest, language: Language) -> bool:
    """Whether ``request`` is a function-call test that runs through ``language``'s call harness."""
    return Style(request.style) is Style.FUNCTION_CALL and not language.fast_path_python \
        and bool(language.call_harness)


def as_stdio(request: ExecutionRequest, language: Language) -> ExecutionRequest:
    """The STDIO request that runs ``request``'s calls: program + harness, one case per call (the calls'
    arguments as JSON on stdin; no expected output: :func:`as_function_report` judges). Raises
    InvalidExecutionRequest for an entry point or arguments the harness cannot take."""
    if not ENTRY_POINT_RE.match(request.entry_point or ""):
        raise InvalidExecutionRequest(f"{language.name} function calls need entry_point to be a name or "
                                      f"Class.method, got {request.entry_point!r}")
    cases = []
    for i, case in enumerate(request.cases):
        if case.kwargs:
            raise InvalidExecutionRequest(f"case {i}: {language.name} functions take no keyword arguments "
                                          "(kwargs need Python)")
        try:
            stdin = json.dumps({"args": list(case.args), "kwargs": {}}, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidExecutionRequest(f"case {i}: arguments must be JSON values: {exc}") from None
        cases.append(Case(stdin=stdin, expected_stdout=""))
    harness = language.call_harness.replace("{entry_point}", request.entry_point)
    return replace(request, style=Style.STDIO, code=request.code.rstrip("\n") + "\n" + harness, cases=tuple(cases))


def _case(raw: Any) -> dict:
    """One STDIO case report as a function-call case report."""
    if type(raw) is not dict:
        return {"status": "error", "detail": "no report for this call"}
    status = raw.get("status")
    if status in ("timeout", "not_run"):
        return {"status": status, "detail": "time limit exceeded" if status == "timeout" else ""}
    stdout, stderr = str(raw.get("stdout", "")), str(raw.get("stderr", ""))
    lines = stderr.strip().splitlines()
    errors = [line.strip() for line in lines if _ERROR_LINE.match(line)]     # "TypeError: ..." over a stack frame
    tail = (errors or lines or [""])[-1][:300]
    if raw.get("limit"):
        kind = str(raw["limit"])
        return {"status": "error", "detail": f"{kind} limit exceeded",
                "exc_type": "MemoryError" if kind == "memory" else ""}
    if raw.get("signal") is not None:
        return {"status": "error", "detail": f"killed by signal {raw['signal']}"}
    if raw.get("exit_code") != 0:
        return {"status": "error", "detail": f"exit status {raw.get('exit_code')}" + (f": {tail}" if tail else "")}
    at = stdout.rfind(MARKER)
    if at < 0 or raw.get("stdout_truncated"):
        return {"status": "error", "detail": "the call returned nothing (the program exited before the harness "
                                             "printed the value, or its output was cut)"}
    try:
        value = json.loads(stdout[at + len(MARKER):].split("\n", 1)[0])
        return {"status": "returned", "value": codec.encode(value)}
    except (ValueError, RecursionError, codec.Unserializable) as exc:
        return {"status": "error", "detail": f"the returned value is not JSON: {exc}"[:300]}


def as_function_report(report: Any) -> Any:
    """The raw STDIO report of :func:`as_stdio`'s request read as a FUNCTION_CALL report (verdict.py).

    A report that is not ``ok`` passes through unchanged (a harness error stays one)."""
    if type(report) is not dict or report.get("status") != "ok" or type(report.get("cases")) is not list:
        return report
    raws = [raw for raw in report["cases"] if type(raw) is dict]
    last = next((raw for raw in reversed(raws) if raw.get("status") == "exited"), {})

    def total(key: str) -> float:
        return sum(raw[key] for raw in raws if type(raw.get(key)) in (int, float))

    process = {"exit_code": last.get("exit_code"), "signal": last.get("signal"), "wall_s": total("wall_s"),
               "cpu_s": total("cpu_s"),
               "max_rss_kb": max([raw["max_rss_kb"] for raw in raws if type(raw.get("max_rss_kb")) is int] or [0]),
               "limit": next((str(raw["limit"]) for raw in raws if raw.get("limit")), ""),
               "killed_outside": any(raw.get("killed_outside") is True for raw in raws)}
    out = {k: v for k, v in report.items() if k not in ("cases", "process", "compile", "stdout", "stderr")}
    cases = [_case(raw) for raw in report["cases"]]
    comp = report.get("compile")
    if type(comp) is dict and comp.get("ok") is False:       # (typescript) the program did not compile
        text = (str(comp.get("stderr", "")) + str(comp.get("stdout", ""))).strip()[-4000:]
        out["load"] = {"ok": False, "phase": "compile", "detail": text or "the program does not compile"}
        cases = [{"status": "error", "detail": f"compile error: {text[-300:]}"} for _ in cases]
    return {**out, "cases": cases, "process": process,
            "stdout": str(last.get("stdout", "")).split(MARKER)[0], "stderr": str(last.get("stderr", ""))}
