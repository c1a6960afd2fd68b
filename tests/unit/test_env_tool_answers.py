"""Sandbox results as tool answers: the program's doing is output, only a sandbox failure is ours."""

import asyncio

import pytest

from reward_core.episode_contract import EpisodeError, EpisodeStatus
from reward_core.sandbox_contract import CompileResult, ExecutionResult, LimitHit, Limits, Verdict
from reward_service.environments.admission import MIN_RETRY_S, Admission
from reward_service.environments.code_tools import answer_from_result

LIMITS = Limits(wall_s=3.0)


@pytest.mark.parametrize(("result", "output", "clean"), [
    (ExecutionResult("", Verdict.WRONG_ANSWER, stdout="42\n", exit_code=0), "42", True),
    (ExecutionResult("", Verdict.ACCEPTED, exit_code=0), "[no output]", True),
    (ExecutionResult("", Verdict.RUNTIME_ERROR, stderr="Traceback\nValueError\n", exit_code=1),
     "Traceback\nValueError\n[exit code 1]", False),
    (ExecutionResult("", Verdict.TIMEOUT, stdout="partial\n", limit_hit=LimitHit.WALL_TIME),
     "partial\n[stopped: the program exceeded the time limit of 3 s]", False),
    (ExecutionResult("", Verdict.MEMORY_LIMIT, limit_hit=LimitHit.MEMORY),
     "[stopped: the program exceeded the memory limit]", False),
    (ExecutionResult("", Verdict.COMPILE_ERROR, compile=CompileResult(exit_code=1, stderr="a.cpp:1: error: x")),
     "a.cpp:1: error: x\n[compile error]", False),
])
def test_what_the_program_did_is_output(result, output, clean):
    answer = answer_from_result(result, LIMITS, 1000)
    assert (answer.output, answer.failure, answer.ran_clean) == (output, None, clean)


def test_a_sandbox_error_is_sandbox_failed_not_output():
    answer = answer_from_result(ExecutionResult("", Verdict.SANDBOX_ERROR, error="slot died"), LIMITS, 1000)
    assert answer.failure is EpisodeStatus.SANDBOX_FAILED and "slot died" in answer.error and answer.output == ""


def test_long_output_is_cut_with_a_note():
    answer = answer_from_result(ExecutionResult("", Verdict.WRONG_ANSWER, stdout="x" * 50, exit_code=0), LIMITS, 10)
    assert answer.output == "x" * 10 + "\n[... 40 more characters cut]"


def test_admission_refuses_past_the_queue_timeout_with_a_retry_hint():
    async def scenario():
        admission = Admission(1, queue_timeout_s=0.05)
        await admission.acquire()
        with pytest.raises(EpisodeError) as refused:
            await admission.acquire()
        admission.release(duration_s=4.0)
        await admission.acquire()  # the freed slot is taken at once
        return refused.value, admission

    refused, admission = asyncio.run(scenario())
    assert refused.status is EpisodeStatus.REFUSED and refused.retry_after_s == MIN_RETRY_S
    assert (admission.open, admission.waiting) == (1, 0)
    assert admission.retry_after_s() == 4.0  # one episode of 4 s ahead, one slot
