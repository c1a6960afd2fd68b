"""Per-case results, checker verdicts and the compile-failure cache, from raw reports (pure)."""

from __future__ import annotations

import pytest

from reward_core import sandbox_convert as convert
from reward_core.sandbox_contract import (
    HEAD_CHARS,
    CaseOutcome,
    ExecutionRequest,
    ExecutionResult,
    InvalidExecutionRequest,
    LimitHit,
    OutputCompare,
    Verdict,
)
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestResult as CaseResult
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.checker import INPUT_FILE, checker_request, interpret, validate_checker
from sandbox.compile_cache import CompileFailureCache, cache_key
from sandbox.submissions import parse_compare, result_to_dict
from sandbox.verdict import CheckerVerdict, build_result, cases_to_check

CASES = [Case(stdin="1", expected_stdout="1\n"), Case(stdin="2", expected_stdout="4\n")]
IO = ExecutionRequest(code="", style=Style.STDIO, id="io", cases=CASES)
CHECKED = ExecutionRequest(code="", style=Style.STDIO, id="chk", cases=CASES,
                           compare=OutputCompare(mode="checker", checker_code="import sys\n"))
PY = {"name": "python", "source_file": "main.py", "compile": [], "run": [], "fast_path": True}
CPP = {"name": "cpp", "source_file": "main.cpp", "compile": ["g++", "main.cpp"], "run": ["./main"]}


def case(stdout="", exit_code=0, signal=None, limit="", truncated=False, status="exited", stderr="", rss_kb=2048):
    return {"status": status, "exit_code": exit_code, "signal": signal, "wall_s": 0.01, "cpu_s": 0.01,
            "max_rss_kb": rss_kb, "limit": limit, "stdout": stdout, "stderr": stderr, "stdout_truncated": truncated}


def report(*cases, compile=None):
    return {"v": 1, "status": "ok", "compile": compile, "cases": list(cases), "process": None,
            "stdout": "", "stderr": ""}


def judge(request, rep, checks=None):
    return build_result(request, rep, len(request.cases), "test", checks)


@pytest.mark.parametrize("raw, verdict", [
    (case("1\n"), Verdict.ACCEPTED),
    (case("5\n"), Verdict.WRONG_ANSWER),
    (case("", exit_code=3), Verdict.RUNTIME_ERROR),
    (case("", signal=11), Verdict.RUNTIME_ERROR),
    (case("", limit="memory", signal=9), Verdict.MEMORY_LIMIT),
    (case("xx", truncated=True), Verdict.OUTPUT_LIMIT),
    (case("", limit="output", signal=9), Verdict.OUTPUT_LIMIT),
    (case("", limit="cpu_time", signal=9), Verdict.TIMEOUT),
    (case("par", limit="wall_time", signal=9, status="timeout"), Verdict.TIMEOUT),
    (case("", limit="processes", exit_code=1), Verdict.RUNTIME_ERROR),
])
def test_each_case_gets_its_own_verdict(raw, verdict):
    r = judge(IO, report(raw, case("4\n")))
    assert r.tests[0].verdict is verdict and r.tests[1].verdict is Verdict.ACCEPTED


def test_a_case_keeps_the_heads_of_its_output_and_its_memory():
    r = judge(IO, report(case("1\n" + "x" * 5000, stderr="warn"), case("4\n", rss_kb=4096)))
    assert len(r.tests[0].stdout_head) == HEAD_CHARS and r.tests[0].stdout_head.startswith("1\nxx")
    assert r.tests[0].stderr_head == "warn" and r.tests[1].peak_memory_mb == 4.0


def test_a_timed_out_case_shows_its_partial_output_as_the_results():
    r = judge(IO, report(case("1\n"), case("partial", limit="wall_time", signal=9, status="timeout")))
    assert r.verdict is Verdict.TIMEOUT and r.stdout == "partial"


def test_cases_not_run_after_a_compile_error_say_compile_error():
    comp = {"ok": False, "exit_code": 1, "signal": None, "timed_out": False, "limit": "", "stderr": "bad"}
    r = judge(IO, report({"status": "not_run"}, {"status": "not_run"}, compile=comp))
    assert r.verdict is Verdict.COMPILE_ERROR
    assert [t.verdict for t in r.tests] == [Verdict.COMPILE_ERROR] * 2


def test_function_call_cases_have_no_heads():
    fc = ExecutionRequest(code="", style=Style.FUNCTION_CALL, entry_point="f", cases=[Case(args=[1], expected=1)])
    rep = {"v": 1, "status": "ok", "load": {"ok": True}, "cases": [{"status": "returned", "value": 1}],
           "process": {"exit_code": 0, "max_rss_kb": 1024, "limit": ""}, "stdout": "s", "stderr": ""}
    r = build_result(fc, rep, 1, "test")
    assert r.tests[0].verdict is Verdict.ACCEPTED and r.tests[0].stdout_head == "" and r.tests[0].peak_memory_mb == 0


# -- checker --------------------------------------------------------------------------------------------
def test_only_cases_that_ran_to_completion_go_to_the_checker():
    rep = report(case("a"), case("b", exit_code=1))
    assert cases_to_check(CHECKED, rep) == [(0, "a")]
    assert cases_to_check(IO, rep) == []                         # no checker: nothing to check
    assert cases_to_check(CHECKED, {"status": "ok", "cases": "junk"}) == []


def test_the_checkers_verdicts_decide_the_cases():
    r = judge(CHECKED, report(case("a"), case("b")), {0: CheckerVerdict(accepted=True),
                                                      1: CheckerVerdict(message="checker: 3rd token differs")})
    assert r.verdict is Verdict.WRONG_ANSWER and r.tests[1].detail == "checker: 3rd token differs"
    assert [t.verdict for t in r.tests] == [Verdict.ACCEPTED, Verdict.WRONG_ANSWER]


@pytest.mark.parametrize("checks", [{0: CheckerVerdict(accepted=True)},                  # one verdict missing
                                    {0: CheckerVerdict(accepted=True),
                                     1: CheckerVerdict(failed=True, message="checker failed: exit status 3")}])
def test_a_case_without_a_checker_verdict_makes_the_result_unscored(checks):
    r = judge(CHECKED, report(case("a"), case("b")), checks)
    assert r.verdict is Verdict.SANDBOX_ERROR and r.error.startswith("checker failed on case 1")
    assert r.tests[1].verdict is Verdict.SANDBOX_ERROR and r.tests[1].outcome is CaseOutcome.NOT_RUN


def result(exit_code=0, verdict=Verdict.ACCEPTED, signal=None, limit=LimitHit.NONE, stderr="", error=""):
    return ExecutionResult(id="c", verdict=verdict, exit_code=exit_code, signal=signal, limit_hit=limit,
                           stderr=stderr, error=error)


@pytest.mark.parametrize("res, accepted, failed", [
    (result(0), True, False),
    (result(0, Verdict.WRONG_ANSWER, stderr="ok"), True, False),            # its stdout is not judged
    (result(1, Verdict.RUNTIME_ERROR, stderr="wrong answer"), False, False),
    (result(2, Verdict.RUNTIME_ERROR), False, False),                         # testlib's presentation error
    (result(8, Verdict.RUNTIME_ERROR), False, False),                         # testlib's unexpected EOF
    (result(3, Verdict.RUNTIME_ERROR), False, True),                          # testlib's _fail
    (result(101, Verdict.RUNTIME_ERROR), False, True),
    (result(None, Verdict.RUNTIME_ERROR, signal=6), False, True),
    (result(None, Verdict.TIMEOUT, limit=LimitHit.WALL_TIME), False, True),
    (result(None, Verdict.COMPILE_ERROR, error="syntax"), False, True),
    (result(None, Verdict.SANDBOX_ERROR, error="slot died"), False, True),
])
def test_a_checkers_run_is_read_testlib_style(res, accepted, failed):
    v = interpret(res)
    assert (v.accepted, v.failed) == (accepted, failed)


def test_the_checker_gets_the_three_texts_as_files_and_arguments():
    req = checker_request(CHECKED, 1, "program output")
    assert req.files[INPUT_FILE] == b"2" and req.files["output.txt"] == b"program output"
    assert req.files["answer.txt"] == b"4\n" and list(req.args) == ["input.txt", "output.txt", "answer.txt"]
    assert "SystemExit" in req.code and req.compare.effective_mode == "tokens"   # a Python checker is wrapped


def test_a_checker_applies_to_stdio_only():
    fc = ExecutionRequest(code="", style=Style.FUNCTION_CALL, entry_point="f", cases=[Case(args=[1], expected=1)],
                          compare=OutputCompare(mode="checker", checker_code="x"))
    with pytest.raises(InvalidExecutionRequest):
        validate_checker(fc)


# -- wire and JSON --------------------------------------------------------------------------------------
def test_case_results_and_compare_survive_the_wire():
    t = CaseResult(index=1, outcome=CaseOutcome.FAILED, detail="d", wall_s=0.5, verdict=Verdict.OUTPUT_LIMIT,
                   peak_memory_mb=12.5, stdout_head="out", stderr_head="err")
    assert convert.case_result_from_proto(convert.case_result_to_proto(t)) == t
    legacy = convert.case_result_from_proto(convert.case_result_to_proto(CaseResult(0, CaseOutcome.PASSED)))
    assert legacy.verdict is None
    compare = OutputCompare(mode="checker", checker_code="print()", checker_language="cpp")
    assert convert.compare_from_proto(convert.compare_to_proto(compare)) == compare


def test_the_json_result_has_the_per_case_fields():
    r = judge(IO, report(case("1\n"), case("5\n", stderr="e")))
    record = result_to_dict(r)["tests"][1]
    assert record == {"index": 1, "outcome": "failed", "detail": "line 1: expected '4', got '5'",
                      "wall_s": 0.01, "verdict": "wrong_answer", "peak_memory_mb": 2.0, "stdout_head": "5\n",
                      "stderr_head": "e"}


@pytest.mark.parametrize("spec, mode", [
    ("float", "float"), ({"mode": "exact"}, "exact"), ({"checker": "x"}, "checker"),
    ({"float_tolerance": 0.01}, "float"), (None, "tokens"),
])
def test_compare_specs_parse(spec, mode):
    assert parse_compare(spec).effective_mode == mode


@pytest.mark.parametrize("spec", [{"mode": "float", "bogus": 1}, 3, {"float_tolerance": "1e-3"},
                                  {"ignore_trailing_whitespace": 1}])
def test_bad_compare_specs_are_invalid_requests(spec):
    with pytest.raises(InvalidExecutionRequest):
        parse_compare(spec)


# -- compile-failure cache ------------------------------------------------------------------------------
FAILED = {"ok": False, "exit_code": 1, "signal": None, "timed_out": False, "limit": "", "stderr": "error: x"}


def cpp(code="int main(", files=None):
    return ExecutionRequest(code=code, style=Style.STDIO, language="cpp", cases=[Case("", "")], files=files or {})


def test_the_key_covers_language_source_and_files():
    keys = {cache_key(cpp(), CPP), cache_key(cpp("int main(){"), CPP), cache_key(cpp(files={"a.h": b"1"}), CPP),
            cache_key(cpp(files={"a.h": b"2"}), CPP), cache_key(cpp(), {**CPP, "compile": ["clang++", "main.cpp"]})}
    assert len(keys) == 5 and None not in keys
    assert cache_key(cpp(), {"name": "bash", "compile": [], "run": ["bash"]}) is None   # no compile step
    assert cache_key(cpp(), PY) is not None                                          # Python syntax errors


@pytest.mark.parametrize("comp", [
    {**FAILED, "timed_out": True}, {**FAILED, "limit": "memory"}, {**FAILED, "signal": 9, "exit_code": None},
    {**FAILED, "killed_outside": True}, {**FAILED, "ok": True, "exit_code": 0},
])
def test_only_deterministic_compile_failures_are_kept(comp):
    cache = CompileFailureCache()
    cache.store("k", report({"status": "not_run"}, compile=comp))
    assert cache.lookup("k", 1) is None and len(cache) == 0


def test_a_cached_failure_answers_like_the_first_and_counts():
    cache = CompileFailureCache()
    first = report({"status": "not_run"}, {"status": "not_run"}, compile=FAILED)
    assert cache.lookup("k", 2) is None and cache.misses == 1
    cache.store("k", first)
    again = cache.lookup("k", 2)
    assert cache.hits == 1 and judge(IO, again) == judge(IO, first)


def test_the_cache_is_bounded_and_forgets_the_least_recent():
    cache = CompileFailureCache(max_entries=2)
    for key in ("a", "b"):
        cache.store(key, report(compile=FAILED))
    cache.lookup("a", 0)
    cache.store("c", report(compile=FAILED))
    assert len(cache) == 2 and cache.lookup("b", 0) is None and cache.lookup("a", 0) is not None
