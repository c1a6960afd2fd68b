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


# --- files in and out, run arguments, the compile step ---------------------------------------------


def stdio_request(**fields) -> ex.ExecutionRequest:
    return ex.ExecutionRequest(code="print(1)", style=ex.TestStyle.STDIO,
                               cases=(ex.TestCase(stdin="", expected_stdout="1\n"),), **fields)


def test_files_fetch_files_and_args_survive_the_wire():
    request = stdio_request(files={"in.txt": b"\x00\xff binary", "data/deep/b.csv": b"a,b\n"},
                            fetch_files=("out.txt", "data/result.bin"), args=("-v", "two words", "ünï"))
    wire = convert.request_to_proto(request)
    assert dict(wire.files) == dict(request.files) and list(wire.args) == list(request.args)
    assert roundtrip(request) == request


def test_a_request_without_files_sends_none():
    wire = convert.request_to_proto(stdio_request())
    assert not wire.files and not wire.fetch_files and not wire.args


@pytest.mark.parametrize("name", ["../up.txt", "/etc/passwd", "a/../../b", "./a", "a//b", "dir/", "", "nul\0x"])
def test_a_file_name_outside_the_scratch_dir_is_an_invalid_request(name):
    with pytest.raises(ex.InvalidExecutionRequest, match="name"):
        stdio_request(files={name: b"x"})
    with pytest.raises(ex.InvalidExecutionRequest, match="name"):
        stdio_request(fetch_files=(name,))


def test_a_file_over_the_file_size_limit_or_files_over_the_scratch_limit_are_invalid_requests():
    with pytest.raises(ex.InvalidExecutionRequest, match="file_size_mb=1"):
        stdio_request(files={"big": b"x" * ((1 << 20) + 1)}, limits=ex.Limits(file_size_mb=1))
    with pytest.raises(ex.InvalidExecutionRequest, match="scratch_mb=1"):
        stdio_request(files={"a": b"x" * (600 << 10), "b": b"x" * (600 << 10)}, limits=ex.Limits(scratch_mb=1))


def test_a_file_that_is_also_a_directory_of_another_is_an_invalid_request():
    with pytest.raises(ex.InvalidExecutionRequest, match="also a directory"):
        stdio_request(files={"a": b"1", "a/b": b"2"})


def test_file_contents_must_be_bytes():
    with pytest.raises(ex.InvalidExecutionRequest, match="must be bytes"):
        stdio_request(files={"a.txt": "text"})


def test_files_from_the_wire_are_validated_too():
    msg = convert.request_to_proto(stdio_request())
    msg.files["../x"] = b"1"
    with pytest.raises(ex.InvalidExecutionRequest, match="relative path"):
        convert.request_from_proto(msg)


def test_the_compile_step_and_fetched_files_survive_the_wire():
    result = full_result(verdict=ex.Verdict.COMPILE_ERROR, files={"out.bin": b"\x00\x01", "o/t.txt": b""},
                         compile=ex.CompileResult(exit_code=1, stdout="note", stderr="main.cpp:1: error",
                                                  wall_s=0.25))
    assert result_roundtrip(result) == result


def test_a_killed_compile_step_keeps_no_exit_code_and_its_signal():
    step = ex.CompileResult(exit_code=None, signal=9, stderr="partial", wall_s=30.0, timed_out=True)
    back = result_roundtrip(full_result(compile=step)).compile
    assert back == step and back.exit_code is None and not back.ok


def test_no_compile_step_stays_none_and_a_clean_one_keeps_exit_code_zero():
    assert result_roundtrip(full_result()).compile is None
    assert result_roundtrip(full_result(compile=ex.CompileResult(exit_code=0))).compile.exit_code == 0


def test_a_memory_limit_verdict_survives_the_wire():
    result = full_result(verdict=ex.Verdict.MEMORY_LIMIT, limit_hit=ex.LimitHit.MEMORY, exit_code=None, signal=9)
    back = result_roundtrip(result)
    assert (back.verdict, back.limit_hit, back.signal) == (ex.Verdict.MEMORY_LIMIT, ex.LimitHit.MEMORY, 9)


def test_a_cached_compile_step_says_so_on_the_wire():
    step = ex.CompileResult(exit_code=0, stderr="warning: unused", cached=True)
    assert result_roundtrip(full_result(compile=step)).compile == step
