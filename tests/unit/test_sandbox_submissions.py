"""sandbox/submissions.py: test specs, JSONL lines in, result lines out (no sandbox needed)."""

import io
import json

import pytest

import reward_core.sandbox_contract as ex
from sandbox import submissions as sub
from sandbox.languages import BUILTIN_LANGUAGES

CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n"


def test_check_code_makes_a_humaneval_request():
    request = sub.build_request("def add(a, b): return a + b", CHECK, entry_point="add")
    assert request.style is ex.TestStyle.HUMANEVAL
    assert (request.check_code, request.entry_point, request.language) == (CHECK, "add", "python")


def test_check_code_without_an_entry_point_says_how_to_give_one():
    with pytest.raises(ex.InvalidExecutionRequest, match="--entry-point"):
        sub.build_request("x = 1", CHECK)


def test_stdio_style_is_read_from_the_case_keys():
    request = sub.build_request("print(input())", [{"stdin": "1\n", "expected_stdout": "1\n"}])
    assert request.style is ex.TestStyle.STDIO
    assert request.cases == (ex.TestCase(stdin="1\n", expected_stdout="1\n"),)


def test_input_and_output_are_aliases_of_stdin_and_expected_stdout():
    request = sub.build_request("print(input())", [{"input": "a\n", "output": "a\n"}])
    assert request.cases == (ex.TestCase(stdin="a\n", expected_stdout="a\n"),)


def test_function_call_style_is_read_from_the_case_keys():
    request = sub.build_request("def f(x, y=0): return x + y", [{"args": [1], "kwargs": {"y": 2}, "expected": 3}],
                                entry_point="f")
    assert request.style is ex.TestStyle.FUNCTION_CALL
    assert request.cases == (ex.TestCase(args=(1,), kwargs={"y": 2}, expected=3),)


def test_function_call_cases_need_an_entry_point():
    with pytest.raises(ex.InvalidExecutionRequest, match="entry point"):
        sub.build_request("def f(): pass", [{"args": [], "expected": None}])


def test_a_null_expected_value_is_a_real_expectation():
    request = sub.build_request("def f(): pass", [{"args": [], "expected": None}], entry_point="f")
    assert request.cases[0].expected is None


def test_a_function_call_case_without_expected_is_refused():
    with pytest.raises(ex.InvalidExecutionRequest, match="needs 'expected'"):
        sub.build_request("def f(): pass", [{"args": []}], entry_point="f", style="function_call")


def test_an_object_spec_carries_style_and_entry_point():
    spec = {"style": "function_call", "entry_point": "f", "cases": [{"args": [2], "expected": 4}]}
    request = sub.build_request("def f(x): return 2 * x", spec)
    assert (request.style, request.entry_point) == (ex.TestStyle.FUNCTION_CALL, "f")


def test_cases_given_as_a_json_string_are_parsed():
    request = sub.build_request("print(1)", json.dumps([{"stdin": "", "expected_stdout": "1"}]), style="stdio")
    assert request.cases == (ex.TestCase(stdin="", expected_stdout="1"),)


@pytest.mark.parametrize("tests, message", [
    ([], "non-empty list"),
    ([{"stdin": "1", "args": [1]}], "cannot tell its style"),
    ([{"stdin": "1"}], "needs 'expected_stdout'"),
    (["not an object"], "must be an object"),
    ([{"args": 1, "expected": 1}], "'args' must be a JSON array"),
    ("   ", "check code is empty"),
    (None, "no tests"),
])
def test_malformed_tests_are_refused_with_the_reason(tests, message):
    with pytest.raises(ex.InvalidExecutionRequest, match=message):
        sub.build_request("x = 1", tests, entry_point="f")


def test_limits_are_applied_to_the_request():
    limits = ex.Limits(wall_s=3.0, cpu_s=3.0)
    assert sub.build_request("x", CHECK, entry_point="f", limits=limits).limits == limits


def test_a_tests_file_is_json_cases_when_it_parses_else_check_code(tmp_path):
    cases, check = tmp_path / "cases.json", tmp_path / "check.py"
    cases.write_text('[{"stdin": "", "expected_stdout": "1"}]')
    check.write_text(CHECK)
    assert sub.read_tests_file(cases) == [{"stdin": "", "expected_stdout": "1"}]
    assert sub.read_tests_file(check) == CHECK


def test_a_good_line_becomes_a_request_with_its_id():
    line = json.dumps({"id": "HumanEval/0", "code": "def add(a, b): return a + b", "tests": CHECK,
                       "entry_point": "add"})
    parsed = sub.parse_line(line, 1)
    assert parsed.record_id == "HumanEval/0" and parsed.error == ""
    assert parsed.request is not None and parsed.request.id == "HumanEval/0"


@pytest.mark.parametrize("line, message", [
    ("{not json", "invalid JSON"),
    ("", "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"tests": "x"}', "missing 'code'"),
    ('{"code": "x"}', "missing 'tests'"),
    ('{"code": "x", "tests": "def check(c): assert c()"}', "entry point"),
])
def test_a_bad_line_is_answered_with_its_line_number_and_the_reason(line, message):
    parsed = sub.parse_line(line, 7)
    assert parsed.request is None and parsed.record_id == 7
    assert parsed.error.startswith("line 7: ") and message in parsed.error


def test_a_line_may_carry_the_trusted_prompt():
    line = json.dumps({"id": "h", "code": "def add(a, b): return a + b", "tests": CHECK, "entry_point": "add",
                       "prompt": "def add(a, b):\n    \"\"\"Adds.\"\"\"\n"})
    parsed = sub.parse_line(line, 1)
    assert parsed.error == "" and parsed.request.prompt.startswith("def add(a, b):")


def test_a_prompt_with_cases_is_refused():
    with pytest.raises(ex.InvalidExecutionRequest, match="prompt applies to humaneval"):
        sub.build_request("print(input())", [{"stdin": "1\n", "expected_stdout": "1\n"}], prompt="x = 1\n")


def test_a_bad_line_keeps_its_id_when_it_has_one():
    parsed = sub.parse_line('{"id": 42, "code": 5, "tests": "x"}', 3)
    assert parsed.record_id == 42 and "code must be a string" in parsed.error


def test_an_unknown_language_is_refused_up_front_when_the_table_is_known():
    line = json.dumps({"id": "a", "code": "x", "tests": CHECK, "entry_point": "f", "language": "cobol"})
    parsed = sub.parse_line(line, 1, languages=BUILTIN_LANGUAGES)
    assert parsed.request is None and "unknown language 'cobol'" in parsed.error


def test_the_invalid_record_has_every_output_key():
    record = sub.invalid_record(3, "line 3: invalid JSON")
    assert record == {"id": 3, "passed": False, "verdict": "invalid_request", "tests_passed": 0,
                      "tests_total": 0, "error": "line 3: invalid JSON"}


def test_a_result_record_is_the_summary_under_the_input_id():
    result = ex.ExecutionResult(id="7", verdict=ex.Verdict.ACCEPTED,
                                tests=(ex.TestResult(0, ex.CaseOutcome.PASSED),))
    assert sub.result_record(7, result) == {"id": 7, "passed": True, "verdict": "accepted", "tests_passed": 1,
                                            "tests_total": 1}


class RaisingExecutor:
    """Test double for the error-mapping path only: an executor that fails instead of answering."""

    name = "raising-double"

    def execute(self, request, cancel=None):
        if request.id == "refused":
            raise ex.InvalidExecutionRequest("unknown language 'x'")
        raise RuntimeError("sandbox exploded")

    def execute_batch(self, requests):
        return [self.execute(r) for r in requests]

    def close(self):
        pass


def test_an_executor_failure_still_gives_one_line_out_per_line_in():
    lines = [json.dumps({"id": "boom", "code": "x", "tests": CHECK, "entry_point": "f"}), "garbage",
             json.dumps({"id": "refused", "code": "x", "tests": CHECK, "entry_point": "f"})]
    out = io.StringIO()
    stats = sub.run_batch(lines, RaisingExecutor(), out, workers=2)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["id"] for r in records] == ["boom", 2, "refused"]
    assert [r["verdict"] for r in records] == ["sandbox_error", "invalid_request", "invalid_request"]
    assert "sandbox exploded" in records[0]["error"] and not any(r["passed"] for r in records)
    assert stats.lines == 3 and stats.pass_rate == 0.0


def test_count_lines_counts_a_last_line_without_newline(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("a\nb\nc")
    assert sub.count_lines(path) == 3
    path.write_text("a\nb\n")
    assert sub.count_lines(path) == 2
