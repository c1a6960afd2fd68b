"""Reading OpenAI chat conversations for trajectory scoring: turns, paired tool outputs, the answer."""

import json

import pytest

from reward_service.environments.trajectory import TrajectoryError, read_trajectory, turn_rewards


def call(cid, name, args, raw=False):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args if raw else json.dumps(args)}}


MESSAGES = [
    {"role": "system", "content": "tools"},
    {"role": "user", "content": "What is 12 * 34?"},
    {"role": "assistant", "content": "", "tool_calls": [call("a", "calculator", {"expression": "12*34"})]},
    {"role": "tool", "tool_call_id": "a", "content": "408"},
    {"role": "assistant", "content": [{"type": "text", "text": "It is 408."}]},
    {"role": "assistant", "content": None, "tool_calls": [call("b", "submit_answer", {"answer": "408"})]},
]


def test_turns_count_assistant_messages_and_tool_outputs_are_paired():
    read = read_trajectory(MESSAGES)
    assert read.turns == 3
    assert [(c.turn, c.call.name, c.output) for c in read.calls] == [(0, "calculator", "408"),
                                                                      (2, "submit_answer", "")]
    assert read.submitted == (2, "408")
    assert (read.final_text, read.final_turn) == ("It is 408.", 1)


def test_turn_rewards_put_the_final_reward_on_the_submitting_turn():
    read = read_trajectory(MESSAGES)
    rewards = turn_rewards(read, lambda c, out: 0.25 if c.name == "calculator" else None, 1.0)
    assert rewards == {0: 0.25, 2: 1.0}


def test_without_a_submission_the_final_reward_goes_to_the_last_text_turn():
    read = read_trajectory(MESSAGES[:5])
    assert read.submitted is None
    assert turn_rewards(read, lambda c, out: None, 0.0) == {1: 0.0}


def test_malformed_arguments_are_the_models_and_do_not_raise():
    read = read_trajectory([{"role": "assistant", "tool_calls": [call("x", "submit_answer", "{not json", raw=True)]}])
    assert read.calls[0].call.arguments == {"_unparsed": "{not json"}
    assert read.submitted == (0, "")


@pytest.mark.parametrize("messages", ["text", [1], [{"role": "assistant", "tool_calls": "x"}],
                                      [{"role": "assistant", "tool_calls": [{"function": {}}]}]])
def test_malformed_messages_raise_trajectory_error(messages):
    with pytest.raises(TrajectoryError):
        read_trajectory(messages)
