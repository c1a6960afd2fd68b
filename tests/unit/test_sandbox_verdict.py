"""Host-side verdicts from raw reports: fail closed, never a pass by accident."""

from __future__ import annotations

import pytest

from reward_core.sandbox_contract import CaseOutcome, ExecutionRequest, LimitHit, OutputCompare, Verdict
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.runtime import codec
from sandbox.verdict import build_result, sandbox_error

HE = ExecutionRequest(code="def f(x): return x", style=Style.HUMANEVAL, entry_point="f",
                      check_code="def check(c):\n    assert c(1) == 1\n    assert c(2) == 2\n", id="he")
FC = ExecutionRequest(code="", style=Style.FUNCTION_CALL, entry_point="f", id="fc",
                      cases=[Case(args=[1], expected=[1, 2]), Case(args=[2], expected=0.5)],
                      compare=OutputCompare(float_tolerance=1e-6))
IO = ExecutionRequest(code="", style=Style.STDIO, id="io",
                      cases=[Case(stdin="1", expected_stdout="1\n"), Case(stdin="2", expected_stdout="4")])
PROC = {"exit_code": 0, "signal": None, "wall_s": 0.01, "cpu_s": 0.005, "max_rss_kb": 10240, "limit": ""}


def he_report(*statuses, limit="", **extra):
    return {"v": 1, "status": "ok", "load": {"ok": True}, "process": {**PROC, "limit": limit},
            "cases": [{"status": s, "detail": f"case {i}", "wall_s": 0.001} for i, s in enumerate(statuses)],
            "stdout": "out", "stderr": "", **extra}


def io_case(stdout="", exit_code=0, signal=None, limit="", truncated=False, status="exited"):
    return {"status": status, "exit_code": exit_code, "signal": signal, "wall_s": 0.01, "cpu_s": 0.01,
            "max_rss_kb": 2048, "limit": limit, "stdout": stdout, "stderr": "boom", "stdout_truncated": truncated}


def io_report(*cases, compile=None):
    return {"v": 1, "status": "ok", "compile": compile, "cases": list(cases), "process": None,
            "stdout": "", "stderr": ""}


def verdict(request, report):
    n = len(request.cases) if request.style is not Style.HUMANEVAL else 2
    return build_result(request, report, n, "test")


def test_humaneval_all_passed_is_accepted():
    r = verdict(HE, he_report("passed", "passed"))
    assert r.verdict is Verdict.ACCEPTED and r.passed and r.id == "he" and r.stdout == "out"
    assert r.peak_memory_mb == 10.0 and r.backend == "test"


@pytest.mark.parametrize("statuses, expected", [
    (("passed", "failed"), Verdict.WRONG_ANSWER),
    (("error", "failed"), Verdict.RUNTIME_ERROR),
    (("passed", "timeout"), Verdict.TIMEOUT),
    (("passed", "not_run"), Verdict.SANDBOX_ERROR),
])
def test_humaneval_case_outcomes_decide_the_verdict(statuses, expected):
    r = verdict(HE, he_report(*statuses))
    assert r.verdict is expected and not r.passed
    if expected is not Verdict.SANDBOX_ERROR:
        assert r.tests_passed == statuses.count("passed") and r.tests_total == 2


@pytest.mark.parametrize("limit, expected", [("memory", Verdict.MEMORY_LIMIT), ("output", Verdict.OUTPUT_LIMIT),
                                             ("wall_time", Verdict.TIMEOUT), ("cpu_time", Verdict.TIMEOUT),
                                             ("processes", Verdict.RUNTIME_ERROR)])
def test_a_limit_hit_is_never_accepted(limit, expected):
    r = verdict(HE, he_report("passed", "passed", limit=limit))
    assert r.verdict is expected and r.limit_hit is LimitHit(limit)


def test_load_compile_error_is_a_compile_error():
    report = he_report("error", "error", load={"ok": False, "phase": "compile", "detail": "SyntaxError: bad"})
    r = verdict(HE, report)
    assert r.verdict is Verdict.COMPILE_ERROR and r.error == "SyntaxError: bad"


@pytest.mark.parametrize("report", [
    {"v": 1, "status": "harness_error", "error": "boom"},
    {"v": 1, "status": "ok"},                                         # no cases
    he_report("passed"),                                              # fewer cases than the host counted
    he_report("passed", "passed", "passed"),                          # more
    he_report("passed", "PASS"),                                      # unknown status
    {**he_report("passed", "passed"), "cases": [{"status": 1}, {"status": "passed"}]},
    {**he_report("passed", "passed"), "process": {**PROC, "limit": "lots"}},
    {**he_report("passed", "passed"), "stdout": 5},
    "not a dict",
])
def test_malformed_or_failed_reports_are_sandbox_errors(report):
    r = verdict(HE, report)
    assert r.verdict is Verdict.SANDBOX_ERROR and not r.verdict.is_verdict_on_code and not r.passed


def test_function_call_values_are_compared_on_the_host():
    report = {"v": 1, "status": "ok", "load": {"ok": True}, "process": PROC, "stdout": "", "stderr": "",
              "cases": [{"status": "returned", "value": codec.encode((1, 2))},
                        {"status": "returned", "value": codec.encode(0.5000000001)}]}
    assert verdict(FC, report).verdict is Verdict.ACCEPTED
    report["cases"][1] = {"status": "returned", "value": codec.encode(0.6)}
    r = verdict(FC, report)
    assert r.verdict is Verdict.WRONG_ANSWER and r.tests[1].detail == "expected 0.5, got 0.6"


def test_function_call_malformed_value_is_an_error_not_a_pass():
    report = {"v": 1, "status": "ok", "load": {"ok": True}, "process": PROC, "stdout": "", "stderr": "",
              "cases": [{"status": "returned", "value": {"evil": 1}},
                        {"status": "error", "exc_type": "MemoryError", "detail": "MemoryError: "}]}
    r = verdict(FC, report)
    assert [t.outcome for t in r.tests] == [CaseOutcome.ERROR, CaseOutcome.ERROR]
    assert r.verdict is Verdict.MEMORY_LIMIT


def test_stdio_partial_credit_and_first_failure_output():
    r = verdict(IO, io_report(io_case("1\n"), io_case("5")))
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED, CaseOutcome.FAILED]
    assert r.verdict is Verdict.WRONG_ANSWER and r.pass_fraction == 0.5 and r.stdout == "5"
    assert r.tests[1].detail == "line 1: expected '4', got '5'"


@pytest.mark.parametrize("case, outcome, expected", [
    (io_case("4", exit_code=1), CaseOutcome.ERROR, Verdict.RUNTIME_ERROR),
    (io_case("4", exit_code=None, signal=11), CaseOutcome.ERROR, Verdict.RUNTIME_ERROR),
    (io_case("4", truncated=True), CaseOutcome.ERROR, Verdict.OUTPUT_LIMIT),
    (io_case("4", exit_code=None, signal=9, limit="wall_time", status="timeout"), CaseOutcome.TIMEOUT,
     Verdict.TIMEOUT),
    (io_case("4", exit_code=None, signal=9, limit="memory"), CaseOutcome.ERROR, Verdict.MEMORY_LIMIT),
])
def test_stdio_a_right_answer_does_not_pass_a_bad_ending(case, outcome, expected):
    r = verdict(IO, io_report(io_case("1"), case))
    assert r.tests[1].outcome is outcome and r.verdict is expected


def test_stdio_compile_error():
    comp = {"ok": False, "exit_code": 1, "signal": None, "timed_out": False, "limit": "", "wall_s": 0.2,
            "stderr": "main.cpp:1: error: expected ';'"}
    r = verdict(IO, io_report({"status": "not_run"}, {"status": "not_run"}, compile=comp))
    assert r.verdict is Verdict.COMPILE_ERROR and "expected ';'" in r.error
    assert [t.outcome for t in r.tests] == [CaseOutcome.NOT_RUN] * 2


def test_stdio_compile_timeout_is_a_compile_error_with_the_limit():
    comp = {"ok": False, "exit_code": None, "signal": 9, "timed_out": True, "limit": "wall_time", "wall_s": 30,
            "stderr": ""}
    r = verdict(IO, io_report({"status": "not_run"}, {"status": "not_run"}, compile=comp))
    assert r.verdict is Verdict.COMPILE_ERROR and r.limit_hit is LimitHit.WALL_TIME and "timed out" in r.error


def test_sandbox_error_result_is_unscored():
    r = sandbox_error(HE, "slot died", "process")
    assert r.verdict is Verdict.SANDBOX_ERROR and r.error == "slot died" and r.tests == ()


# -- a SIGKILL that none of our limits sent: killed from outside, unscored -----------------------------
def outside(d: dict) -> dict:
    return {**d, "exit_code": None, "signal": 9, "killed_outside": True}


def test_stdio_sigkill_from_outside_is_an_unscored_sandbox_error_not_a_crash():
    r = verdict(IO, io_report(io_case("1\n"), outside(io_case(""))))
    assert r.verdict is Verdict.SANDBOX_ERROR and not r.verdict.is_verdict_on_code
    assert "killed from outside" in r.error


def test_humaneval_sigkill_from_outside_is_an_unscored_sandbox_error():
    report = he_report("passed", "error")
    report["process"] = outside(report["process"])
    r = verdict(HE, report)
    assert r.verdict is Verdict.SANDBOX_ERROR and "killed from outside" in r.error


def test_a_compiler_killed_from_outside_is_not_a_compile_error():
    comp = outside({"ok": False, "timed_out": False, "limit": "", "wall_s": 0.2, "stderr": ""})
    r = verdict(IO, io_report({"status": "not_run"}, {"status": "not_run"}, compile=comp))
    assert r.verdict is Verdict.SANDBOX_ERROR


def test_a_kill_from_outside_after_every_case_passed_keeps_the_pass():
    report = he_report("passed", "passed")
    report["process"] = outside(report["process"])
    assert verdict(HE, report).verdict is Verdict.ACCEPTED


@pytest.mark.parametrize("limit, expected", [("memory", Verdict.MEMORY_LIMIT), ("wall_time", Verdict.TIMEOUT),
                                             ("cpu_time", Verdict.TIMEOUT)])
def test_a_sigkill_a_limit_explains_stays_a_verdict_on_the_code(limit, expected):
    case = {**io_case("", exit_code=None, signal=9, limit=limit), "killed_outside": True}
    assert verdict(IO, io_report(io_case("1"), case)).verdict is expected


def test_a_sigkill_without_the_outside_flag_is_still_a_runtime_error():
    assert verdict(IO, io_report(io_case("1"), io_case("", exit_code=None, signal=9))).verdict \
        is Verdict.RUNTIME_ERROR
