"""NeMo Gym ``code_gen`` rows -> our ``code`` task: extraction, unit-test mapping and Gym's reply fields.

Cases follow NVIDIA-NeMo/Gym ``resources_servers/code_gen/tests/test_app.py`` and the definitions of
``lcb_integration/extraction_utils.py`` and ``lcb_integration/testing_util.py``.
"""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from reward_core.contract import RolloutResult, RolloutStatus
from reward_service.http_door import gym_code_gen as g

SQUARE = "n=int(input())\nprint(n*n)"


def body(text: str, unit_tests=None, **metadata) -> dict:
    """A verify body as Gym's code_gen tests build it (output_text parts of one message)."""
    return {"responses_create_params": {"input": [{"role": "user", "content": "Read n and print n^2."}]},
            "response": {"output": [{"type": "message", "role": "assistant",
                                     "content": [{"type": "output_text", "text": text, "annotations": []}]}]},
            "verifier_metadata": {"unit_tests": unit_tests or {"inputs": ["2\n", "5\n"], "outputs": ["4", "25"]},
                                  **metadata}}


def scored(extracted: str, score: float, status: RolloutStatus = RolloutStatus.OK) -> RolloutResult:
    return RolloutResult("0", status, score, {"code": score, "pass_fraction": score}, extracted)


# --- extraction (extraction_utils.extract_code, LMStyle.OpenAIChat) -----------------------------------


def test_the_code_is_between_the_last_two_fence_lines():
    assert g.extract_code(f"```python\n{SQUARE}\n```") == SQUARE
    two = "First:\n```python\nprint(1)\n```\nBetter:\n```py\nprint(2)\n```\nDone."
    assert g.extract_code(two) == "print(2)"


def test_any_language_tag_or_none_opens_a_block():
    assert g.extract_code("```\nprint(1)\n```") == "print(1)"
    assert g.extract_code("```cpp\nint main(){}\n```") == "int main(){}"


def test_a_response_without_two_fence_lines_has_no_code():
    assert g.extract_code(SQUARE) == ""  # Gym: "LCB code extraction only accepts fenced code blocks"
    assert g.extract_code(f"```python\n{SQUARE}") == ""  # a block cut off by the length limit
    assert g.extract_code("") == ""


def test_a_line_that_merely_contains_a_fence_counts_as_one():
    text = f"```python\n{SQUARE}\n```\nRun it with `python x.py` or see ```here```."
    assert g.extract_code(text) == ""  # the last two fence lines enclose the prose line only
    assert g.extract_code("code: ```python\nprint(3)\n``` done") == "print(3)"


# --- unit tests -> our reference --------------------------------------------------------------------


def test_stdio_tests_become_stdin_cases():
    tests = g.parse_unit_tests({"inputs": ["2\n", "5\n"], "outputs": ["4", "25"]})
    assert tests == g.UnitTests(("2\n", "5\n"), ("4", "25"), None)
    assert g.reference_of(tests) == {"cases": [{"stdin": "2\n", "expected_stdout": "4"},
                                               {"stdin": "5\n", "expected_stdout": "25"}],
                                     "style": "stdio", "language": "python", "compare": "float"}


def test_an_empty_fn_name_is_stdio_as_gyms_preparation_writes_it():
    assert g.parse_unit_tests({"inputs": ["1"], "outputs": ["1"], "fn_name": ""}).fn_name is None
    assert g.parse_unit_tests({"inputs": ["1"], "outputs": ["1"], "fn_name": None}).fn_name is None


def test_function_call_tests_take_one_json_argument_per_line():
    tests = g.parse_unit_tests({"inputs": ["[1, 2, 3]\n2", "[]\n0"], "outputs": ["[3, 1]", "null"],
                                "fn_name": "twoSum"})
    assert g.reference_of(tests) == {
        "cases": [{"args": [[1, 2, 3], 2], "expected": [3, 1]}, {"args": [[], 0], "expected": None}],
        "style": "function_call", "entry_point": "twoSum", "language": "python", "compare": "float"}
    assert g.call_case('"abc"', '"cba"', 0) == {"args": ["abc"], "expected": "cba"}


def test_packed_tests_are_unpacked_with_the_outer_fn_name():
    packed = base64.b64encode(zlib.compress(json.dumps({"inputs": ["3"], "outputs": ["9"]}).encode())).decode()
    assert g.parse_unit_tests({"packed": packed, "fn_name": None}) == g.UnitTests(("3",), ("9",), None)
    assert g.parse_unit_tests({"packed": packed, "fn_name": "sq"}).fn_name == "sq"


@pytest.mark.parametrize("raw, message", [
    ([], "must be an object"),
    ({"inputs": ["1"]}, "unit_tests.outputs is required"),
    ({"inputs": [1], "outputs": ["1"]}, "inputs must be a list of strings"),
    ({"inputs": "1", "outputs": ["1"]}, "inputs must be a list of strings"),
    ({"inputs": ["1", "2"], "outputs": ["1"]}, "2 inputs but 1 outputs"),
    ({"inputs": ["1"], "outputs": ["1"], "fn_name": 3}, "fn_name must be a string or null"),
    ({"packed": "not base64!"}, "not base64 of zlib-compressed JSON"),
])
def test_unit_tests_gyms_model_would_reject_are_invalid(raw, message):
    with pytest.raises(g.InvalidUnitTests, match=message):
        g.parse_unit_tests(raw)


def test_a_function_call_line_that_is_not_json_is_invalid():
    tests = g.UnitTests(("[1, 2]\n",), ("3",), "add")  # the trailing newline makes an empty last line
    with pytest.raises(g.InvalidUnitTests, match=r"inputs\[0\] line 2 is not JSON"):
        g.reference_of(tests)
    with pytest.raises(g.InvalidUnitTests, match=r"outputs\[0\] is not JSON"):
        g.call_case("1", "three", 0)


def test_the_language_comes_from_the_row_else_python():
    assert g.language_of(body("x")) == "python"
    assert g.language_of(body("x", language="cpp")) == "cpp"
    assert g.language_of({**body("x"), "language": "go"}) == "go"
    with pytest.raises(g.InvalidUnitTests, match="language must be a string"):
        g.language_of(body("x", language=3))


def test_python_runs_after_livecodebench_imports_and_other_languages_as_written():
    program = g.program_of("print(List, defaultdict, pow)", "python")
    assert program.startswith("from string import *\n") and program.endswith("\nprint(List, defaultdict, pow)")
    namespace: dict = {}
    exec(compile(g.PYTHON_PRELUDE, "prelude", "exec"), namespace)  # the names a LeetCode solution expects
    assert namespace["List"].__module__ == "typing" and namespace["pow"] is pow and namespace["open"] is open
    assert g.program_of("int main(){}", "cpp") == "int main(){}"
    assert g.program_of("", "python") == ""


# --- reasoning format, result and reply -------------------------------------------------------------


def test_reasoning_format_violations_are_gyms():
    response = {"output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "<think>a</think>"}]}]}
    assert not g.reasoning_format_violation(response, "```python\nprint(1)\n```")
    assert g.reasoning_format_violation(response, "</think>```python\nprint(1)\n```")
    twice = {"output": [{"type": "reasoning", "summary": [{"text": "<think>a"}, {"text": "<think>b"}]}]}
    assert g.reasoning_format_violation(twice, "ok")


@pytest.mark.parametrize("extracted, result, error", [
    ("accepted (3/3 tests)", [True, True, True], None),
    ("wrong_answer (2/5 tests)", [True, True, -2], (-2, "Wrong Answer")),
    ("timeout (0/4 tests)", [-3], (-3, "Time Limit Exceeded")),
    ("runtime_error (1/2 tests)", [True, -4], (-4, "Runtime Error")),
    ("compile_error (0/3 tests)", [-4], (-4, "Error during testing")),
])
def test_result_lists_passed_tests_then_the_failures_lcb_code(extracted, result, error):
    got, metadata = g.lcb_result(extracted)
    assert got == result and metadata["verdict"] == extracted
    assert (metadata.get("error_code"), metadata.get("error_message")) == (error or (None, None))


def test_a_result_the_code_task_did_not_describe_has_no_list():
    assert g.lcb_result("composite") == (None, {"verdict": "composite"})


def test_a_run_reply_has_gyms_fields_and_the_reward():
    row = body(f"Here:\n```python\n{SQUARE}\n```", difficulty="easy")
    job = g.rollout_of("code", row, f"Here:\n```python\n{SQUARE}\n```", "Read n and print n^2.")
    assert job.code == SQUARE and job.rollout.completion == g.PYTHON_PRELUDE + SQUARE
    assert job.rollout.reference["style"] == "stdio" and job.rollout.task == "code"
    reply = g.verify_response(row, job, scored("accepted (2/2 tests)", 1.0), 0.25)
    assert {k: reply[k] for k in ("reward", "extracted_model_code", "result", "unit_tests_time_taken", "difficulty",
                                  "reasoning_format_violation_rate")} == {
        "reward": 1.0, "extracted_model_code": SQUARE, "result": [True, True], "unit_tests_time_taken": 0.25,
        "difficulty": "easy", "reasoning_format_violation_rate": 0.0}
    assert reply["verifier_metadata"] == row["verifier_metadata"] and reply["reward_components"]["code"] == 1.0


def test_no_code_is_reward_0_with_the_output_and_no_extracted_code():
    row = body(SQUARE)
    job = g.rollout_of("code", row, SQUARE, "")
    assert job.rollout.completion == ""  # the code task answers NO_ANSWER, 0
    reply = g.verify_response(row, job, scored("", 0.0, RolloutStatus.NO_ANSWER), 0.1)
    assert (reply["reward"], reply["extracted_model_output"], reply["extracted_model_code"], reply["result"]) == (
        0.0, SQUARE, None, None)


def test_a_blank_response_reports_no_output():
    row = body("  \n")
    reply = g.verify_response(row, g.rollout_of("code", row, "  \n", ""), scored("", 0.0, RolloutStatus.NO_ANSWER), 0)
    assert reply["reward"] == 0.0 and reply["extracted_model_output"] is None and reply["metadata"] is None


def test_a_reasoning_format_violation_scores_gyms_default_penalty_0():
    text = f"</think>\n```python\n{SQUARE}\n```"
    row = body(text)
    job = g.rollout_of("code", row, text, "")
    reply = g.verify_response(row, job, scored("accepted (2/2 tests)", 1.0), 0.1)
    assert (reply["reward"], reply["reasoning_format_violation_rate"], reply["result"]) == (0.0, 1.0, [True, True])


def test_code_gen_rows_are_recognised_by_their_unit_tests():
    assert g.is_code_gen_row(body("x"))
    assert not g.is_code_gen_row({"verifier_metadata": {"other": 1}})
    assert not g.is_code_gen_row({"expected_answer": "4"}) and not g.is_code_gen_row([1])
