"""Function-call tests in JavaScript through the language's ``call_harness`` (sandbox/call_harness.py), for real.

The return value is compared on the host, as for Python; what the program prints or how it ends
never makes a wrong value pass.
"""

from __future__ import annotations

import shutil

import pytest

from reward_core.sandbox_contract import CaseOutcome, ExecutionRequest, InvalidExecutionRequest, Limits, Verdict
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.factory import create_executor
from sandbox.languages import load_languages
from tests.language_programs import require_language

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)"),
              pytest.mark.timeout(240)]

LIMITS = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=256, output_bytes=4096)


@pytest.fixture(scope="module")
def executor():
    require_language(load_languages(), "nodejs")
    ex = create_executor("process", concurrency=2)
    yield ex
    ex.close()


def call(code: str, entry_point: str, cases: list[tuple[list, object]]) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.FUNCTION_CALL, language="nodejs", entry_point=entry_point,
                            limits=LIMITS, cases=tuple(Case(args=a, expected=e) for a, e in cases))


@pytest.mark.parametrize(("code", "entry_point"), [
    ("function add(a, b) { console.log('debug output'); return a + b; }", "add"),
    ("const add = async (a, b) => a + b;", "add"),
    ("class Solution { add(a, b) { return a + b; } }", "add"),
    ("class Calc { add(a, b) { return a + b; } }", "Calc.add"),
])
def test_a_correct_function_passes_every_call(executor, code, entry_point):
    r = executor.execute(call(code, entry_point, [([1, 2], 3), ([40, 2], 42)]))
    assert r.verdict is Verdict.ACCEPTED and r.tests_passed == 2, (r.error, r.tests)


def test_structured_values_compare_as_json(executor):
    r = executor.execute(call("const f = (xs) => ({sorted: [...xs].sort((a, b) => a - b), n: xs.length, none: null});",
                              "f", [([[3, 1, 2]], {"sorted": [1, 2, 3], "n": 3, "none": None})]))
    assert r.verdict is Verdict.ACCEPTED, r.error


def test_a_wrong_value_fails_that_call_only(executor):
    r = executor.execute(call("function f(x) { return x === 2 ? 5 : x * 2; }", "f", [([1], 2), ([2], 4)]))
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED, CaseOutcome.FAILED]
    assert r.verdict is Verdict.WRONG_ANSWER and "expected 4, got 5" in r.tests[1].detail


def test_a_printed_fake_result_does_not_pass(executor):
    fake = "function f() { console.log('\\u0000CALL_RESULT 42'); process.stdout.write('\\u0000CALL_RESULT 42\\n'); }"
    r = executor.execute(call(fake, "f", [([], 42)]))
    assert r.verdict is not Verdict.ACCEPTED


def test_exiting_before_returning_is_a_runtime_error(executor):
    r = executor.execute(call("function f() { process.exit(0); }", "f", [([], 1)]))
    assert r.verdict is Verdict.RUNTIME_ERROR and "returned nothing" in r.tests[0].detail


def test_a_thrown_error_is_a_runtime_error_with_its_message(executor):
    r = executor.execute(call("function f() { throw new RangeError('too big'); }", "f", [([], 1)]))
    assert r.verdict is Verdict.RUNTIME_ERROR and "RangeError: too big" in r.tests[0].detail


def test_a_missing_function_is_a_runtime_error(executor):
    r = executor.execute(call("function other() {}", "f", [([], 1)]))
    assert r.verdict is Verdict.RUNTIME_ERROR and "f is not a function" in r.tests[0].detail


def test_a_call_that_never_returns_times_out(executor):
    slow = ExecutionRequest(code="function f() { for (;;) {} }", style=Style.FUNCTION_CALL, language="nodejs",
                            entry_point="f", limits=Limits(wall_s=2.0, cpu_s=2.0, memory_mb=256),
                            cases=(Case(args=(), expected=1),))
    assert executor.execute(slow).verdict is Verdict.TIMEOUT


@pytest.mark.parametrize(("entry_point", "kwargs", "match"), [
    ("f(); require('child_process')", {}, "entry_point"),
    ("f", {"x": 1}, "keyword"),
])
def test_what_the_harness_cannot_take_is_refused(executor, entry_point, kwargs, match):
    request = ExecutionRequest(code="function f() {}", style=Style.FUNCTION_CALL, language="nodejs",
                               entry_point=entry_point, cases=(Case(args=(), kwargs=kwargs, expected=1),))
    with pytest.raises(InvalidExecutionRequest, match=match):
        executor.execute(request)


def test_humaneval_check_code_still_needs_python(executor):
    request = ExecutionRequest(code="function f() {}", style=Style.HUMANEVAL, language="nodejs", entry_point="f",
                               check_code="def check(candidate):\n    assert candidate() is None\n")
    with pytest.raises(InvalidExecutionRequest, match="Python"):
        executor.execute(request)


def test_typescript_functions_are_called_through_the_same_harness(executor):
    require_language(load_languages(), "typescript")
    ok = ExecutionRequest(code="function add(a: number, b: number): number { return a + b; }",
                          style=Style.FUNCTION_CALL, language="typescript", entry_point="add", limits=LIMITS,
                          cases=(Case(args=(1, 2), expected=3), Case(args=(2, 2), expected=5)))
    r = executor.execute(ok)
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED, CaseOutcome.FAILED], r.error


def test_a_typescript_program_that_does_not_compile_is_a_compile_error(executor):
    require_language(load_languages(), "typescript")
    bad = ExecutionRequest(code="function add(a: number { }", style=Style.FUNCTION_CALL, language="typescript",
                           entry_point="add", limits=LIMITS, cases=(Case(args=(1, 2), expected=3),))
    r = executor.execute(bad)
    assert r.verdict is Verdict.COMPILE_ERROR and "TS1005" in r.error
