"""Episodes on the real session manager: every environment end to end, the tools, trajectory scoring.

The manager is real (the process sandbox, the calculator's worker pool, the router's Scorer verifying
answers with the ``math`` task); the lifecycle (admission, deadlines, reaping, close, failures) is in
test_episode_lifecycle.py.
"""

from __future__ import annotations

import json

import pytest

from reward_core.episode_contract import (
    EpisodeError,
    EpisodeHost,
    EpisodeSpec,
    EpisodeSpecError,
    EpisodeStatus,
    ToolCall,
    Trajectory,
)
from reward_service.environments.env_api import Environment, PluginTool, ToolContext
from reward_service.environments.env_config import EnvironmentsConfig
from tests.integration.session_managers import running_manager

pytestmark = pytest.mark.slow


class CountingEnv(Environment):
    """A plugin environment: a declared tool with a schema and a per-step reward."""

    name = "counting"
    description = "count the letters of a word with the tool"
    tools = ("submit_answer",)
    task = "math"

    def splits(self):
        return {"train": 2}

    def row(self, split, index, seed):
        word = ["banana", "environment"][index]
        return {"prompt": f"How many letters has {word}?", "reference": {"answer": str(len(word))}}

    def plugin_tools(self):
        return (PluginTool("count_letters", count_letters, "counts the letters of a word",
                           {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"],
                            "additionalProperties": False}),)

    def step_reward(self, call, output, row):
        return 0.1 if call.name == "count_letters" else None


class ProgramsEnv(CountingEnv):
    """A plugin environment offering run_code."""

    name = "programs"
    tools = ("run_code", "submit_answer")

    def plugin_tools(self):
        return ()


def count_letters(arguments, context: ToolContext) -> str:
    return str(len(arguments["word"]))


@pytest.fixture(scope="module")
def host():
    config = EnvironmentsConfig(max_sessions=8, sandbox_concurrency=2, verify_workers=1, program_timeout_s=2.0,
                                calculator_timeout_s=2.0)
    with running_manager(config, environments=[CountingEnv(), ProgramsEnv()]) as pair:
        yield pair


def test_the_manager_is_an_episode_host(host):
    manager, _ = host
    assert isinstance(manager, EpisodeHost)


def test_list_environments_gives_tools_and_splits(host):
    manager, run = host
    infos = {info.name: info for info in run(manager.list_environments())}
    assert [t.name for t in infos["arithmetic_tools"].tools] == ["calculator", "submit_answer"]
    assert [t.name for t in infos["math_tools"].tools] == ["python", "calculator", "submit_answer"]
    assert set(infos["math_tools"].splits) == {"train", "test"}
    assert [t.name for t in infos["counting"].tools] == ["submit_answer", "count_letters"]


def test_arithmetic_episode_with_the_calculator_is_rewarded(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("arithmetic_tools", split="test", index=5, seed=3)))
    question = start.messages[-1]["content"]
    expression = question.removeprefix("What is ").removesuffix("?")
    a, b = (int(x) for x in expression.split(" * "))
    assert 10_000 <= a < 10_000_000 and 10_000 <= b < 10_000_000
    product = run(manager.call_tool(start.session_id, ToolCall("calculator", {"expression": expression}, "c1")))
    assert (product.output, product.status, product.call_id) == (str(a * b), EpisodeStatus.RUNNING, "c1")
    done = run(manager.call_tool(start.session_id, ToolCall("submit_answer", {"answer": product.output}, "c2")))
    assert done.finished and done.status is EpisodeStatus.FINISHED and done.reward == 1.0
    assert done.outcome.reward == 1.0 and done.outcome.step_rewards == (None, 1.0) and done.outcome.turns == 2
    run(manager.close(start.session_id))


def test_a_wrong_answer_finishes_with_reward_0(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("arithmetic_tools", split="train", index=0)))
    done = run(manager.call_tool(start.session_id, ToolCall("submit_answer", {"answer": "12"})))
    assert done.status is EpisodeStatus.FINISHED and done.reward == 0.0 and done.outcome.status.scored
    with pytest.raises(EpisodeError) as ended:
        run(manager.call_tool(start.session_id, ToolCall("calculator", {"expression": "1+1"})))
    assert ended.value.status is EpisodeStatus.FINISHED
    assert run(manager.finish(start.session_id)).reward == 0.0  # the outcome it ended with
    run(manager.close(start.session_id))


def test_math_tools_episode_with_python_and_a_sent_row(host):
    manager, run = host
    row = {"problem": "What is the remainder when $2^{100}$ is divided by 7?", "answer": "2"}
    start = run(manager.open(EpisodeSpec("math_tools", row=row, seed=1)))
    assert start.messages[-1]["content"] == row["problem"] and start.messages[0]["role"] == "system"
    out = run(manager.call_tool(start.session_id, ToolCall("python", {"code": "r = pow(2, 100, 7)\nr"})))
    assert out.output == "2"
    done = run(manager.call_tool(start.session_id, ToolCall("submit_answer", {"answer": out.output})))
    assert done.reward == 1.0
    run(manager.close(start.session_id))


def test_math_tools_generated_rows_are_verified_by_the_math_task(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("math_tools", split="test", index=7, seed=11)))
    outcome = run(manager.finish(start.session_id, "I do not know."))
    assert outcome.status is EpisodeStatus.FINISHED and outcome.reward == 0.0
    run(manager.close(start.session_id))


def test_python_state_is_kept_across_calls_and_failed_cells_are_not(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("math_tools", split="train", index=1)))
    sid = start.session_id
    outputs = [run(manager.call_tool(sid, ToolCall("python", {"code": code}))).output
               for code in ("x = 21\nprint('set')", "def double(v):\n    return 2 * v", "x = 1 / 0",
                            "print(double(x))")]
    assert outputs[0] == "set"
    assert outputs[1] == "[no output]"
    assert "ZeroDivisionError" in outputs[2] and "[exit code 1]" in outputs[2]
    assert outputs[3] == "42"  # x kept from the first cell, the failed one left out; 'set' not printed again
    run(manager.close(sid))


def test_a_program_past_its_time_limit_is_output_and_the_episode_goes_on(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("math_tools", split="train", index=2)))
    out = run(manager.call_tool(start.session_id, ToolCall("python", {"code": "while True:\n    pass"})))
    assert out.status is EpisodeStatus.RUNNING and "exceeded the" in out.output
    after = run(manager.call_tool(start.session_id, ToolCall("python", {"code": "print('alive')"})))
    assert after.output == "alive"
    run(manager.close(start.session_id))


def test_run_code_passes_stdin_and_reports_the_exit_code(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("programs", split="train", index=0)))
    sid = start.session_id
    summed = run(manager.call_tool(sid, ToolCall("run_code", {"code": "a, b = map(int, input().split())\n"
                                                                      "print(a + b)", "stdin": "3 4\n"})))
    assert summed.output == "7" and summed.status is EpisodeStatus.RUNNING
    failed = run(manager.call_tool(sid, ToolCall("run_code", {"code": "import sys\nsys.exit(3)"})))
    assert failed.output.endswith("[exit code 3]")
    unknown = run(manager.call_tool(sid, ToolCall("run_code", {"code": "x", "language": "klingon"})))
    assert unknown.output.startswith("error:") and unknown.status is EpisodeStatus.RUNNING
    run(manager.close(sid))


def test_a_tool_the_environment_does_not_offer_is_answered_as_output(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("math_tools", split="train", index=3)))
    refused = run(manager.call_tool(start.session_id, ToolCall("run_code", {"code": "print(1)"})))
    assert refused.status is EpisodeStatus.RUNNING and "unknown tool 'run_code'" in refused.output
    run(manager.close(start.session_id))


def test_calculator_refuses_code_and_survives_a_runaway_expression(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("arithmetic_tools", split="train", index=4)))
    sid = start.session_id
    code = run(manager.call_tool(sid, ToolCall("calculator", {"expression": "__import__('os').getpid()"})))
    assert code.output.startswith("error:") and code.status is EpisodeStatus.RUNNING
    runaway = run(manager.call_tool(sid, ToolCall("calculator", {"expression": "9**9**9**9"})))
    assert runaway.output.startswith("error:") and runaway.status is EpisodeStatus.RUNNING
    exact = run(manager.call_tool(sid, ToolCall("calculator", {"expression": "1/3 + 1/6"})))
    assert exact.output.startswith("1/2")
    run(manager.close(sid))


def test_arguments_outside_the_schema_are_answered_as_output(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("arithmetic_tools", split="train", index=5)))
    bad = run(manager.call_tool(start.session_id, ToolCall("calculator", {"expr": "1+1"})))
    assert bad.status is EpisodeStatus.RUNNING and "invalid arguments for calculator" in bad.output
    run(manager.close(start.session_id))


def test_a_plugin_tool_runs_with_its_step_reward(host):
    manager, run = host
    start = run(manager.open(EpisodeSpec("counting", split="train", index=1)))
    counted = run(manager.call_tool(start.session_id, ToolCall("count_letters", {"word": "environment"})))
    assert (counted.output, counted.reward) == ("11", 0.1)
    done = run(manager.call_tool(start.session_id, ToolCall("submit_answer", {"answer": "11"})))
    assert done.reward == 1.0 and done.outcome.step_rewards == (0.1, 1.0)
    run(manager.close(start.session_id))


def test_an_unknown_environment_or_index_is_the_callers_mistake(host):
    manager, run = host
    with pytest.raises(EpisodeSpecError, match="unknown environment"):
        run(manager.open(EpisodeSpec("nope")))
    with pytest.raises(EpisodeSpecError, match="outside split"):
        run(manager.open(EpisodeSpec("counting", split="train", index=2)))
    assert manager.admission.open == 0


def test_the_same_seed_gives_the_same_row(host):
    manager, run = host
    prompts = []
    for _ in range(2):
        start = run(manager.open(EpisodeSpec("arithmetic_tools", split="train", index=9, seed=4)))
        prompts.append(start.messages[-1]["content"])
        run(manager.close(start.session_id))
    other = run(manager.open(EpisodeSpec("arithmetic_tools", split="test", index=9, seed=4)))
    run(manager.close(other.session_id))
    assert prompts[0] == prompts[1] != other.messages[-1]["content"]


def _conversation(answer: str) -> list[dict]:
    call = lambda cid, name, args: {"id": cid, "type": "function",  # noqa: E731
                                    "function": {"name": name, "arguments": json.dumps(args)}}
    return [
        {"role": "user", "content": "How many letters has environment?"},
        {"role": "assistant", "content": "", "tool_calls": [call("a", "count_letters", {"word": "environment"})]},
        {"role": "tool", "tool_call_id": "a", "content": "11"},
        {"role": "assistant", "content": "Let me submit.",
         "tool_calls": [call("b", "submit_answer", {"answer": answer})]},
        {"role": "tool", "tool_call_id": "b", "content": "Your answer was submitted."},
    ]


def test_score_trajectory_gives_rewards_per_assistant_turn_and_a_final_one(host):
    manager, run = host
    row = {"prompt": "How many letters has environment?", "reference": {"answer": "11"}}
    right = run(manager.score_trajectory(Trajectory("counting", row, _conversation("11"), id="t1")))
    assert (right.id, right.status, right.reward) == ("t1", EpisodeStatus.FINISHED, 1.0)
    assert dict(right.turn_rewards) == {0: 0.1, 1: 1.0}
    wrong = run(manager.score_trajectory(Trajectory("counting", row, _conversation("12"), id="t2")))
    assert wrong.status is EpisodeStatus.FINISHED and wrong.reward == 0.0
    assert dict(wrong.turn_rewards) == {0: 0.1, 1: 0.0}


def test_score_trajectory_without_a_submission_scores_the_last_assistant_text(host):
    manager, run = host
    messages = [{"role": "user", "content": "?"},
                {"role": "assistant", "content": [{"type": "text", "text": "The answer is \\boxed{6}."}]}]
    score = run(manager.score_trajectory(Trajectory("counting", {}, messages, split="train", index=0)))
    assert score.reward == 1.0 and dict(score.turn_rewards) == {0: 1.0}


def test_score_trajectory_of_malformed_messages_is_unscored_not_0(host):
    manager, run = host
    score = run(manager.score_trajectory(Trajectory("counting", {}, ["not a message"], split="train", index=0)))
    assert score.status is EpisodeStatus.ERROR and score.reward is None and "message 0" in score.error
