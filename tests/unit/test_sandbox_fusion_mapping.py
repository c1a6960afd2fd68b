"""reward_service/http_door/sandbox_fusion.py: RunCodeRequest -> our request, our result -> RunCodeResponse (pure)."""

import base64
import json

import pytest

from reward_core.sandbox_contract import (
    CaseOutcome,
    CompileResult,
    ExecutionResult,
    InvalidExecutionRequest,
    LimitHit,
    Verdict,
)
from reward_core.sandbox_contract import TestResult as CaseResult
from reward_service.http_door import sandbox_fusion as sf
from sandbox.languages import BUILTIN_LANGUAGES, resolve_language_name

COMMAND_KEYS = {"status", "execution_time", "return_code", "stdout", "stderr"}


def call(**fields) -> sf.RunCode:
    parsed = sf.parse_run_code(json.dumps({"code": "print(1)", "language": "python", **fields}).encode())
    assert isinstance(parsed, sf.RunCode), parsed
    return parsed


def result(verdict: Verdict, **fields) -> ExecutionResult:
    case = CaseResult(0, CaseOutcome.TIMEOUT if verdict is Verdict.TIMEOUT else CaseOutcome.PASSED, wall_s=0.5)
    return ExecutionResult(id="", verdict=verdict, tests=(case,), wall_s=1.0, **fields)


def test_a_null_file_is_skipped_and_the_others_are_decoded():
    request = sf.execution_request(call(files={"a.txt": None, "b/c.txt": base64.b64encode(b"\x00hi").decode()}))
    assert request.files == {"b/c.txt": b"\x00hi"}


def test_content_that_is_not_base64_is_refused():
    with pytest.raises(InvalidExecutionRequest, match="not base64"):
        sf.execution_request(call(files={"a.txt": "abc"}))


def test_a_big_file_raises_the_file_size_and_scratch_limits_to_fit():
    big = base64.b64encode(b"x" * (20 << 20)).decode()
    limits = sf.execution_request(call(files={"big.bin": big})).limits
    assert limits.file_size_mb == 20 and limits.scratch_mb >= 20 + 64


def test_fetch_files_and_args_are_passed_on():
    request = sf.execution_request(call(fetch_files=["out.txt"], args=["-x", "y"]))
    assert (tuple(request.fetch_files), tuple(request.args)) == (("out.txt",), ("-x", "y"))


def test_php_gets_its_tag_when_missing_as_in_sandbox_fusion():
    assert sf.execution_request(call(language="php", code="  echo 1;")).code == "<?php\necho 1;"
    assert sf.execution_request(call(language="php", code="<?php echo 1;")).code == "<?php echo 1;"


def test_every_language_of_their_literal_is_in_our_table():
    assert len(sf.LANGUAGES) == 29
    assert all(resolve_language_name(name, BUILTIN_LANGUAGES) for name in sf.LANGUAGES)


def test_an_ordinary_run_has_exactly_sandbox_fusions_fields():
    body = sf.run_code_response(result(Verdict.ACCEPTED, stdout="1\n", exit_code=0), "python")
    assert set(body["run_result"]) == COMMAND_KEYS and body["compile_result"] is None and body["files"] == {}


def test_a_memory_limit_is_finished_with_the_kills_code_and_says_so():
    body = sf.run_code_response(result(Verdict.MEMORY_LIMIT, signal=9, limit_hit=LimitHit.MEMORY), "python")
    run = body["run_result"]
    assert (body["status"], run["status"], run["return_code"]) == ("Failed", "Finished", -9)
    assert run["limit_exceeded"] == "MemoryLimitExceeded"


def test_the_compilers_own_code_and_output_are_the_compile_result():
    step = CompileResult(exit_code=2, stdout="out", stderr="main.go:1: undefined", wall_s=0.3)
    body = sf.run_code_response(result(Verdict.COMPILE_ERROR, compile=step, error="main.go:1: undefined"), "go")
    assert body["compile_result"] == {"status": "Finished", "execution_time": 0.3, "return_code": 2,
                                      "stdout": "out", "stderr": "main.go:1: undefined"}
    assert (body["status"], body["run_result"]) == ("Failed", None)


def test_a_kotlin_script_compile_error_is_a_failed_run_as_sandbox_fusion_runs_the_script():
    step = CompileResult(exit_code=1, stderr="main.kts:1:14: error: type mismatch", wall_s=2.5)
    body = sf.run_code_response(result(Verdict.COMPILE_ERROR, compile=step, error=step.stderr), "kotlin_script")
    assert body["compile_result"] is None and body["status"] == "Failed"
    assert (body["run_result"]["status"], body["run_result"]["return_code"]) == ("Finished", 1)
    assert body["run_result"]["stderr"] == step.stderr
    ran = sf.run_code_response(result(Verdict.ACCEPTED, compile=CompileResult(exit_code=0, wall_s=2.5), exit_code=0,
                                      stdout="42\n"), "kotlin_script")
    assert ran["compile_result"] is None and ran["run_result"]["stdout"] == "42\n" and ran["status"] == "Success"


def test_a_compile_timeout_is_time_limit_exceeded_without_a_code():
    step = CompileResult(exit_code=None, signal=9, stderr="partial", wall_s=10.0, timed_out=True)
    body = sf.run_code_response(result(Verdict.COMPILE_ERROR, compile=step, limit_hit=LimitHit.WALL_TIME), "rust")
    assert (body["compile_result"]["status"], body["compile_result"]["return_code"]) == ("TimeLimitExceeded", None)
    assert body["compile_result"]["stderr"] == "partial" and body["status"] == "Failed"


def test_a_timeout_keeps_the_partial_output():
    body = sf.run_code_response(result(Verdict.TIMEOUT, stdout="half", stderr="e", signal=9), "bash")
    assert body["run_result"] == {"status": "TimeLimitExceeded", "execution_time": 0.5, "return_code": None,
                                  "stdout": "half", "stderr": "e"}


def test_fetched_files_come_back_as_base64():
    body = sf.run_code_response(result(Verdict.ACCEPTED, exit_code=0, files={"o.bin": b"\x00\x01"}), "python")
    assert body["files"] == {"o.bin": "AAE="}


def test_an_unsupported_language_keeps_the_sandboxs_message():
    body = sf.refused("request 0: UNSUPPORTED_LANGUAGE: language 'julia' cannot run on this sandbox: install Julia",
                      "INVALID_ARGUMENT")
    assert body["status"] == "SandboxError"
    assert body["message"] == "UNSUPPORTED_LANGUAGE: language 'julia' cannot run on this sandbox: install Julia"
