"""sandbox/call_harness.py: a function-call request as STDIO runs, and the runs' report read back as calls."""

from __future__ import annotations

import json

import pytest

from reward_core.sandbox_contract import ExecutionRequest, InvalidExecutionRequest
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.call_harness import MARKER, applies, as_function_report, as_stdio
from sandbox.languages import load_languages
from sandbox.runtime import codec

TABLE = load_languages(probe=None)


def js_call(entry_point: str = "f", **case) -> ExecutionRequest:
    return ExecutionRequest(code="function f(a) { return a; }\n", style=Style.FUNCTION_CALL, language="nodejs",
                            entry_point=entry_point, cases=(Case(args=case.get("args", [1]),
                                                                 kwargs=case.get("kwargs", {}), expected=1),))


def test_only_a_function_call_in_a_language_with_a_harness_applies():
    assert applies(js_call(), TABLE["nodejs"])
    assert not applies(js_call(), TABLE["python"])
    assert not applies(js_call(), TABLE["cpp"])


def test_each_call_becomes_a_stdio_case_with_its_arguments_and_no_expected_value():
    run = as_stdio(js_call(args=[[1, 2], "x"]), TABLE["nodejs"])
    assert run.style is Style.STDIO and run.code.startswith("function f(a)") and '"f".split' in run.code
    assert json.loads(run.cases[0].stdin) == {"args": [[1, 2], "x"], "kwargs": {}}
    assert run.cases[0].expected_stdout == ""


@pytest.mark.parametrize(("entry_point", "case"), [('f"); evil("', {}), ("a.b.c", {}), ("f", {"kwargs": {"k": 1}}),
                                                   ("f", {"args": [float("nan")]})])
def test_what_the_harness_cannot_take_is_refused(entry_point, case):
    with pytest.raises(InvalidExecutionRequest):
        as_stdio(js_call(entry_point, **case), TABLE["nodejs"])


def stdio_report(*cases: dict) -> dict:
    return {"v": 1, "status": "ok", "compile": None, "cases": list(cases), "process": None, "stdout": "", "stderr": ""}


def exited(stdout: str, exit_code: int = 0, **more) -> dict:
    return {"status": "exited", "exit_code": exit_code, "signal": None, "stdout": stdout, "stderr": "",
            "wall_s": 0.5, "cpu_s": 0.25, "max_rss_kb": 1000, "limit": "", **more}


def test_the_value_after_the_last_marker_is_the_returned_value():
    report = as_function_report(stdio_report(exited(f"debug{MARKER}1\n\n{MARKER}[1, {{\"a\": null}}]\n")))
    assert report["cases"] == [{"status": "returned", "value": codec.encode([1, {"a": None}])}]
    assert report["stdout"] == "debug"


def test_no_marker_a_bad_exit_or_a_limit_is_an_error():
    report = as_function_report(stdio_report(exited("3\n"), exited(f"{MARKER}3\n", exit_code=1),
                                             exited(f"{MARKER}3\n", limit="memory"),
                                             {"status": "timeout", "limit": "wall_time"}))
    assert [c["status"] for c in report["cases"]] == ["error", "error", "error", "timeout"]
    assert report["cases"][2]["exc_type"] == "MemoryError" and report["process"]["limit"] == "memory"


def test_usage_adds_up_over_the_calls():
    process = as_function_report(stdio_report(exited(f"{MARKER}1\n"), exited(f"{MARKER}2\n")))["process"]
    assert (process["wall_s"], process["cpu_s"], process["max_rss_kb"]) == (1.0, 0.5, 1000)


def test_a_harness_error_report_passes_through():
    bad = {"v": 1, "status": "harness_error", "error": "x"}
    assert as_function_report(bad) is bad


def test_a_failed_compile_fails_every_call_as_a_compile_error():
    report = stdio_report({"status": "not_run"}, {"status": "not_run"})
    report["compile"] = {"ok": False, "exit_code": 1, "stderr": "main.ts(1,2): error TS1005", "stdout": ""}
    out = as_function_report(report)
    assert out["load"]["phase"] == "compile" and "TS1005" in out["load"]["detail"]
    assert [c["status"] for c in out["cases"]] == ["error", "error"]
