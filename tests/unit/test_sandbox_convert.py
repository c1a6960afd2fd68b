"""reward_core/sandbox_convert.py: execution dataclasses <-> reward.v1.sandbox_pb2, the one place."""

import math

import pytest

import reward_core.sandbox_contract as ex
from reward.v1 import sandbox_pb2 as pb
from reward_core import sandbox_convert as convert


def roundtrip(request: ex.ExecutionRequest) -> ex.ExecutionRequest:
    wire = pb.ExecutionRequest.FromString(convert.request_to_proto(request).SerializeToString())
    return convert.request_from_proto(wire)


def test_a_humaneval_request_survives_the_wire():
    request = ex.ExecutionRequest(code="def add(a, b):\n    return a + b\n", style=ex.TestStyle.HUMANEVAL,
                                  id="he/0", check_code="def check(c):\n    assert c(1, 2) == 3\n",
                                  entry_point="add", limits=ex.Limits(wall_s=3.0, cpu_s=2.0, memory_mb=256),
                                  prompt='def add(a, b):\n    """Adds."""\n')
    assert roundtrip(request) == request


def test_stdio_cases_keep_stdin_and_expected_stdout():
    request = ex.ExecutionRequest(code="print(input())", style=ex.TestStyle.STDIO, language="python",
                                  cases=(ex.TestCase(stdin="1\n", expected_stdout="1\n"),
                                         ex.TestCase(stdin="", expected_stdout="")))
    assert roundtrip(request).cases == request.cases


def test_function_call_values_travel_as_json():
    case = ex.TestCase(args=(1, [2, 3], {"k": None}), kwargs={"x": 1.5}, expected={"a": [1, "b"]})
    request = ex.ExecutionRequest(code="", style=ex.TestStyle.FUNCTION_CALL, entry_point="f", cases=(case,))
    wire = convert.request_to_proto(request)
    assert wire.cases[0].args_json == '[1, [2, 3], {"k": null}]'
    assert roundtrip(request).cases == (case,)


def test_a_null_expected_value_is_kept_distinct_from_a_missing_stdout():
    request = ex.ExecutionRequest(code="", style=ex.TestStyle.FUNCTION_CALL, entry_point="f",
                                  cases=(ex.TestCase(args=(), expected=None),))
    back = roundtrip(request).cases[0]
    assert back.expected is None and back.expected_stdout is None and back.args == ()


def test_unset_limits_take_the_defaults():
    msg = pb.ExecutionRequest(code="x", style=pb.TEST_STYLE_STDIO, limits=pb.Limits(wall_s=2.5))
    limits = convert.request_from_proto(msg).limits
    assert limits == ex.Limits(wall_s=2.5)


@pytest.mark.parametrize("field, value", [("wall_s", -1.0), ("memory_mb", -5), ("cpu_s", math.nan)])
def test_a_negative_or_nan_limit_is_an_invalid_request(field, value):
    msg = pb.ExecutionRequest(code="x", style=pb.TEST_STYLE_STDIO, limits=pb.Limits(**{field: value}))
    with pytest.raises(ex.InvalidExecutionRequest, match=field):
        convert.request_from_proto(msg)


def test_unset_compare_flags_default_to_true_and_set_ones_are_kept():
    default = convert.request_from_proto(pb.ExecutionRequest(code="x", style=pb.TEST_STYLE_STDIO))
    assert default.compare == ex.OutputCompare()
    compare = ex.OutputCompare(float_tolerance=1e-6, ignore_trailing_whitespace=False, normalize_line_endings=False)
    request = ex.ExecutionRequest(code="x", style=ex.TestStyle.STDIO, compare=compare)
    assert roundtrip(request).compare == compare


def test_an_unspecified_style_is_an_invalid_request_naming_the_choices():
    with pytest.raises(ex.InvalidExecutionRequest, match="TEST_STYLE_HUMANEVAL"):
        convert.request_from_proto(pb.ExecutionRequest(code="x"))


def test_an_empty_language_means_python():
    assert convert.request_from_proto(pb.ExecutionRequest(code="x", style=pb.TEST_STYLE_STDIO)).language == "python"


@pytest.mark.parametrize("case, message", [
    (pb.TestCase(args_json="[1,"), "case 0: args_json is not valid JSON"),
    (pb.TestCase(args_json='{"a": 1}'), "args_json must be a JSON array"),
    (pb.TestCase(kwargs_json="[1]"), "kwargs_json must be a JSON object"),
    (pb.TestCase(expected_json="nope"), "expected_json is not valid JSON"),
])
def test_malformed_case_json_is_an_invalid_request_naming_the_field(case, message):
    msg = pb.ExecutionRequest(code="x", style=pb.TEST_STYLE_FUNCTION_CALL, entry_point="f", cases=[case])
    with pytest.raises(ex.InvalidExecutionRequest, match=message):
        convert.request_from_proto(msg)


def test_a_value_that_is_not_json_cannot_be_sent():
    request = ex.ExecutionRequest(code="", style=ex.TestStyle.FUNCTION_CALL, entry_point="f",
                                  cases=(ex.TestCase(args=({1, 2},), expected=None),))
    with pytest.raises(ex.InvalidExecutionRequest, match="case 0 args"):
        convert.request_to_proto(request)


def full_result(**overrides) -> ex.ExecutionResult:
    settings = dict(
        id="r1", verdict=ex.Verdict.WRONG_ANSWER,
        tests=(ex.TestResult(0, ex.CaseOutcome.PASSED, "", 0.01), ex.TestResult(1, ex.CaseOutcome.FAILED,
                                                                               "expected 3, got 4", 0.02)),
        stdout="out", stderr="err", exit_code=0, signal=None, wall_s=0.5, cpu_s=0.25, peak_memory_mb=12.5,
        limit_hit=ex.LimitHit.NONE, error="expected 3, got 4", backend="process")
    settings.update(overrides)
    return ex.ExecutionResult(**settings)


def result_roundtrip(result: ex.ExecutionResult) -> ex.ExecutionResult:
    wire = convert.result_to_proto(result).SerializeToString()
    return convert.result_from_proto(pb.ExecutionResult.FromString(wire))


def test_a_result_survives_the_wire():
    result = full_result()
    assert result_roundtrip(result) == result


def test_the_wire_result_carries_the_summary_counts():
    msg = convert.result_to_proto(full_result())
    assert (msg.passed, msg.tests_passed, msg.tests_total) == (False, 1, 2)
    assert convert.result_to_proto(full_result(verdict=ex.Verdict.ACCEPTED, tests=())).passed


def test_exit_code_zero_and_no_exit_code_stay_different():
    assert result_roundtrip(full_result(exit_code=0)).exit_code == 0
    killed = result_roundtrip(full_result(exit_code=None, signal=9, limit_hit=ex.LimitHit.WALL_TIME,
                                          verdict=ex.Verdict.TIMEOUT))
    assert (killed.exit_code, killed.signal, killed.limit_hit) == (None, 9, ex.LimitHit.WALL_TIME)


def test_every_verdict_has_a_wire_value():
    for verdict in ex.Verdict:
        assert result_roundtrip(full_result(verdict=verdict)).verdict is verdict


def test_undecodable_output_bytes_arrive_as_replacement_characters():
    garbage = b"ok \xff\xfe\x80 end".decode("utf-8", "surrogateescape") + "\ud800"
    result = full_result(stdout=garbage, stderr=garbage, error=garbage, id="x\udcff",
                         tests=(ex.TestResult(0, ex.CaseOutcome.ERROR, garbage),))
    back = result_roundtrip(result)
    assert back.stdout.startswith("ok \ufffd\ufffd\ufffd end")
    assert back.tests[0].detail == back.stdout and back.error == back.stdout


def test_a_result_without_a_verdict_is_a_sandbox_error_never_a_pass():
    back = convert.result_from_proto(pb.ExecutionResult(id="r", passed=True))
    assert back.verdict is ex.Verdict.SANDBOX_ERROR and not back.passed
    assert "no known verdict" in back.error


def test_utf8_safe_leaves_valid_text_alone():
    text = "héllo ✓ \U0001F600"
    assert convert.utf8_safe(text) is text
