"""The ``code`` task's pure parts: code extraction, the program it runs, options, outcome mapping."""

import os

import pytest

import reward_core.sandbox_contract as ex
from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidReference, InvalidTaskOptions, TaskInput
from reward_service.tasks import code_task
from reward_service.tasks.code_task import CodeTask, SandboxFailure, extract_code, program_code

PROMPT = 'from typing import List\n\n\ndef add(a: int, b: int) -> int:\n    """Adds."""\n'
CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n"
HUMANEVAL_REF = {"tests": CHECK, "entry_point": "add"}


def test_no_fence_means_the_whole_completion():
    assert extract_code("    return a + b\n") == ("    return a + b\n", False)


def test_the_last_python_block_wins():
    text = "First try:\n```python\nx = 1\n```\nBetter:\n```python\nx = 2\n```\nDone."
    assert extract_code(text) == ("x = 2\n", True)


def test_a_labelled_block_beats_a_later_unlabelled_one():
    text = "```py\nx = 1\n```\nOutput:\n```\n1\n```\n"
    assert extract_code(text) == ("x = 1\n", True)


def test_an_unlabelled_block_is_used_when_no_block_is_labelled():
    assert extract_code("Here:\n```\nprint(3)\n```\n") == ("print(3)\n", True)


def test_blocks_of_another_language_are_ignored():
    text = "```bash\npip install x\n```\nno code here"
    assert extract_code(text) == (text, False)


def test_cpp_blocks_are_found_under_their_labels():
    text = "```c++\nint main() { return 0; }\n```"
    assert extract_code(text, "cpp") == ("int main() { return 0; }\n", True)


def test_a_fence_left_open_by_a_cut_off_generation_runs_to_the_end():
    assert extract_code("Sure:\n```python\ndef f():\n    return 1\n") == ("def f():\n    return 1\n", True)


def test_backticks_inside_a_line_do_not_close_a_block():
    text = '```python\ns = "```"\nprint(s)\n```\n'
    assert extract_code(text) == ('s = "```"\nprint(s)\n', True)


def test_a_humaneval_continuation_goes_right_after_the_prompt():
    code = program_code("    return a + b\n", HUMANEVAL_REF, PROMPT, language="python", humaneval=True,
                        prepend_prompt=True)
    assert code == PROMPT + "    return a + b\n"


def test_a_fenced_humaneval_answer_goes_on_its_own_lines_after_the_prompt():
    code = program_code("```python\ndef add(a, b):\n    return a + b\n```", HUMANEVAL_REF, PROMPT,
                        language="python", humaneval=True, prepend_prompt=True)
    assert code == PROMPT.rstrip("\n") + "\n\ndef add(a, b):\n    return a + b\n"


def test_the_reference_prompt_replaces_a_chat_formatted_rollout_prompt():
    reference = {**HUMANEVAL_REF, "prompt": PROMPT}
    code = program_code("    return a + b\n", reference, "<|user|>complete this", language="python",
                        humaneval=True, prepend_prompt=True)
    assert code.startswith("from typing import List")


def test_no_prompt_is_prepended_when_turned_off_or_not_humaneval():
    for humaneval, prepend in ((True, False), (False, True)):
        assert program_code("print(1)", HUMANEVAL_REF, PROMPT, language="python", humaneval=humaneval,
                            prepend_prompt=prepend) == "print(1)"


def test_an_empty_completion_is_no_code_even_with_a_prompt():
    assert program_code("  \n", HUMANEVAL_REF, PROMPT, language="python", humaneval=True, prepend_prompt=True) == ""


@pytest.mark.parametrize("options, message", [
    ({"reward": "partial"}, "reward"),
    ({"backend": "vm"}, "backend"),
    ({"timeout_s": 0}, "timeout_s"),
    ({"timeout_s": True}, "timeout_s"),
    ({"concurrency": -1}, "concurrency"),
    ({"prepend_prompt": "yes"}, "prepend_prompt"),
    ({"endpoint": 5}, "endpoint"),
])
def test_bad_options_are_refused_with_their_name(options, message):
    with pytest.raises(InvalidTaskOptions, match=message):
        CodeTask(**options)


def test_a_job_gets_a_hard_limit_that_fits_its_whole_batch():
    task = CodeTask(concurrency=2, batch_size=16, timeout_s=5)
    waves = 16 / 2
    assert task.time_limit_s >= waves * 5
    assert CodeTask(concurrency=8).batch_size == 32


def test_the_endpoint_defaults_to_the_servers_sandbox_endpoint():
    from reward_service.router.registry import build_registry
    from reward_service.router.rewards_config import RewardsConfig, TaskEndpoints, TaskSpec

    endpoints = TaskEndpoints(sandbox_endpoint=" sandbox:50053 ")
    local = RewardsConfig(tasks=(TaskSpec("code_local", "code", {"endpoint": ""}),))
    registry = build_registry(local, endpoints=endpoints)
    assert registry.get("code").endpoint == "sandbox:50053"
    assert registry.get("code_local").endpoint == ""
    assert CodeTask().endpoint == ""


def test_a_reference_without_tests_is_invalid():
    with pytest.raises(InvalidReference, match="'tests'"):
        CodeTask().check_reference({"answer": "3"})


def test_the_humaneval_dataset_field_name_test_is_accepted():
    request = CodeTask().build_request(TaskInput("    return a + b\n", {"test": CHECK, "entry_point": "add"}, PROMPT),
                                       "0")
    assert request.style is ex.TestStyle.HUMANEVAL and request.code.startswith(PROMPT)


def test_a_compiling_code_prompt_is_sent_as_the_trusted_prompt():
    request = CodeTask().build_request(TaskInput("    return a + b\n", HUMANEVAL_REF, PROMPT), "0")
    assert request.prompt == PROMPT


def test_a_chat_formatted_prompt_is_not_sent_as_trusted_code():
    request = CodeTask(prepend_prompt=True).build_request(
        TaskInput("```python\ndef add(a, b):\n    return a + b\n```", HUMANEVAL_REF, "<|user|> add two numbers:"),
        "0")
    assert request.prompt == ""


def test_no_trusted_prompt_when_prepending_is_off():
    request = CodeTask(prepend_prompt=False).build_request(
        TaskInput("def add(a, b):\n    return a + b\n", HUMANEVAL_REF, PROMPT), "0")
    assert request.prompt == ""


def test_case_references_build_stdio_and_function_call_requests():
    task = CodeTask(timeout_s=3)
    stdio = task.build_request(TaskInput("print(input())", {"cases": [{"stdin": "1", "expected_stdout": "1"}]}), "0")
    call = task.build_request(TaskInput("def f(x): return x", {"cases": '[{"args": [1], "expected": 1}]',
                                                                "entry_point": "f"}), "1")
    assert stdio.style is ex.TestStyle.STDIO and call.style is ex.TestStyle.FUNCTION_CALL
    assert stdio.limits.wall_s == 3.0 and stdio.code == "print(input())"


def test_an_unknown_language_is_an_invalid_reference_before_anything_runs():
    with pytest.raises(InvalidReference, match="unknown language 'cobol'"):
        CodeTask().build_request(TaskInput("x", {**HUMANEVAL_REF, "language": "cobol"}), "0")


def test_a_malformed_case_reference_is_invalid_reference():
    with pytest.raises(InvalidReference, match="entry point"):
        CodeTask().build_request(TaskInput("x", {"cases": [{"args": [1], "expected": 1}]}), "0")


def result(verdict: ex.Verdict, outcomes: tuple[ex.CaseOutcome, ...] = (), error: str = "") -> ex.ExecutionResult:
    return ex.ExecutionResult(id="0", verdict=verdict, tests=tuple(ex.TestResult(i, o) for i, o in enumerate(outcomes)),
                              error=error)


P, F = ex.CaseOutcome.PASSED, ex.CaseOutcome.FAILED


def test_binary_reward_is_one_only_when_every_test_passes():
    task = CodeTask()
    assert task.outcome(result(ex.Verdict.ACCEPTED, (P, P))).score == 1.0
    wrong = task.outcome(result(ex.Verdict.WRONG_ANSWER, (P, F), "expected 3, got 4"))
    assert (wrong.score, wrong.status, wrong.components["pass_fraction"]) == (0.0, RolloutStatus.OK, 0.5)
    assert wrong.extracted == "wrong_answer (1/2 tests)"


def test_fraction_reward_is_the_share_of_tests_passed():
    task = CodeTask(reward="fraction")
    assert task.outcome(result(ex.Verdict.WRONG_ANSWER, (P, F, P, P))).score == 0.75
    assert task.outcome(result(ex.Verdict.COMPILE_ERROR)).score == 0.0


@pytest.mark.parametrize("verdict", [ex.Verdict.TIMEOUT, ex.Verdict.RUNTIME_ERROR, ex.Verdict.MEMORY_LIMIT,
                                     ex.Verdict.OUTPUT_LIMIT, ex.Verdict.COMPILE_ERROR])
def test_the_codes_own_failures_are_a_scored_zero(verdict):
    outcome = CodeTask().outcome(result(verdict))
    assert outcome.status is RolloutStatus.OK and outcome.score == 0.0


class CannedExecutor:
    """Test double for the error-mapping path only: answers every program with one verdict."""

    name = "canned-double"

    def __init__(self, verdict: ex.Verdict) -> None:
        self.verdict = verdict

    def execute(self, request, cancel=None):
        return ex.ExecutionResult(id=request.id, verdict=self.verdict, error="zygote died")

    def execute_batch(self, requests):
        return [self.execute(r) for r in requests]

    def close(self):
        pass


@pytest.fixture
def with_executor(monkeypatch):
    """Installs a test double as the task's executor in this process (error-mapping tests only)."""
    def install(task: CodeTask, executor) -> CodeTask:
        monkeypatch.setitem(code_task._EXECUTORS, task._executor_key(), (os.getpid(), executor, executor.close))
        return task
    return install


def test_a_sandbox_error_is_raised_so_the_server_answers_error_never_zero(with_executor):
    task = with_executor(CodeTask(), CannedExecutor(ex.Verdict.SANDBOX_ERROR))
    with pytest.raises(SandboxFailure, match="zygote died"):
        task.score_batch([TaskInput("    return a + b\n", HUMANEVAL_REF, PROMPT)])


def test_empty_completions_and_bad_references_are_answered_without_running(with_executor):
    task = with_executor(CodeTask(), CannedExecutor(ex.Verdict.SANDBOX_ERROR))
    outcomes = task.score_batch([TaskInput("", HUMANEVAL_REF, PROMPT), TaskInput("x", {"tests": CHECK}, "")])
    assert [o.status for o in outcomes] == [RolloutStatus.NO_ANSWER, RolloutStatus.INVALID_REFERENCE]


def test_variants_with_the_same_sandbox_settings_share_one_executor_key():
    assert CodeTask(concurrency=2)._executor_key() == CodeTask(concurrency=2, reward="fraction")._executor_key()
    assert CodeTask(concurrency=2)._executor_key() != CodeTask(concurrency=3)._executor_key()


def test_a_fence_labelled_with_an_alias_of_the_language_is_its_code():
    completion = "```text\nnot code\n```\n```javascript\nconsole.log(1)\n```\n"
    assert extract_code(completion, "nodejs") == ("console.log(1)\n", True)
