"""The Gym and OpenEnv doors' pure conversions (``gym_items.py``, ``openenv_wire.py``), by hand-built cases.

Gym's items are those ``simple_agent`` accumulates (``responses_api_agents/simple_agent/app.py``:
``function_call`` items with JSON-string ``arguments``, ``function_call_output`` items with ``call_id``);
OpenEnv's shapes those of ``openenv/core/env_server/mcp_types.py`` and ``types.py``.
"""

from __future__ import annotations

import pytest

from reward_core.episode_contract import EpisodeOutcome, EpisodeStatus, ToolResult, ToolSpec
from reward_service.http_door import gym_items, openenv_wire
from reward_service.http_door.nemo_gym import BadRow


def test_a_gym_conversation_becomes_chat_messages_with_tool_calls():
    params = {"input": [{"role": "developer", "content": "Use tools."},
                        {"role": "user", "content": [{"type": "input_text", "text": "2+7?"}]}]}
    response = {"output": [
        {"type": "reasoning", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me add."}]},
        {"type": "function_call", "name": "add", "arguments": '{"a": 2, "b": 7}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "9"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "9"}]}]}
    assert gym_items.chat_messages(params, response) == [
        {"role": "system", "content": "Use tools."}, {"role": "user", "content": "2+7?"},
        {"role": "assistant", "content": "Let me add.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 7}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "9"}, {"role": "assistant", "content": "9"}]


def test_a_gym_row_becomes_a_prompt_and_a_reference():
    row = {"responses_create_params": {"input": "What is 2+7?"}, "expected_answer": "9", "seed": 4,
           "verifier_metadata": {"tolerance": 0}, "agent_ref": {"name": "a"}, "_ng_task_index": 3}
    assert gym_items.episode_row(row) == {"prompt": [{"role": "user", "content": "What is 2+7?"}],
                                          "reference": {"answer": "9", "tolerance": 0}}
    assert gym_items.row_seed(row) == 4 and gym_items.row_seed({"seed": True}) == 0


def test_a_row_without_create_params_is_refused():
    with pytest.raises(BadRow, match="responses_create_params"):
        gym_items.episode_row({"expected_answer": "9"})


@pytest.mark.parametrize(("arguments", "parsed"), [('{"a": 1}', {"a": 1}), ("", {}), ("[1]", None),
                                                    ("{not json", None), ({"a": 2}, {"a": 2})])
def test_call_arguments_must_be_a_json_object(arguments, parsed):
    assert gym_items.parse_arguments(arguments) == parsed


@pytest.mark.parametrize(("action", "kind"), [({"type": "call_tool", "tool_name": "add", "arguments": {}}, "call_tool"),
                                              ({"type": "list_tools"}, "list_tools"),
                                              ({"type": "message", "content": "9"}, "message")])
def test_openenv_actions_are_read(action, kind):
    assert openenv_wire.parse_action(action).kind == kind


@pytest.mark.parametrize("action", [{"type": "call_tool"}, {"type": "message"}, {"code": "x"}, ["call_tool"]])
def test_malformed_openenv_actions_are_refused(action):
    with pytest.raises(openenv_wire.BadAction):
        openenv_wire.parse_action(action)


def test_the_ending_tool_call_carries_the_final_reward():
    outcome = EpisodeOutcome("s", EpisodeStatus.FINISHED, 1.0, (0.1, 1.0), {"accuracy": 1.0})
    payload = openenv_wire.tool_payload("submit_answer", ToolResult("c", "ok", EpisodeStatus.FINISHED, 0.5, True,
                                                                    outcome=outcome), "sid")
    assert (payload["reward"], payload["done"], payload["metadata"]["step_reward"]) == (1.0, True, 0.5)
    assert payload["observation"]["tool_name"] == "submit_answer" and payload["observation"]["error"] is None


def test_an_unscored_tool_result_has_no_reward_and_a_tool_error():
    payload = openenv_wire.tool_payload("python", ToolResult("c", "", EpisodeStatus.SANDBOX_FAILED,
                                                             error="the sandbox died"), "sid")
    assert (payload["reward"], payload["done"], payload["metadata"]["scored"]) == (None, True, False)
    assert payload["observation"]["error"] == {"error_type": "transport_error", "message": "the sandbox died"}


def test_reset_parameters_choose_a_row_or_a_split_index():
    assert openenv_wire.reset_choice({"seed": 3}) == {"split": "train", "index": -1, "seed": 3, "deadline_s": 0.0}
    assert openenv_wire.reset_choice({"row": {"prompt": "p", "reference": {}}})["row"] == {"prompt": "p",
                                                                                          "reference": {}}
    with pytest.raises(openenv_wire.BadAction):
        openenv_wire.reset_choice({"seed": -1})


def test_tools_are_listed_as_openenv_and_responses_tools():
    spec = ToolSpec("add", "adds", {"type": "object"})
    assert openenv_wire.tool_dict(spec) == {"name": "add", "description": "adds", "input_schema": {"type": "object"}}
    assert gym_items.responses_tools([spec]) == [{"type": "function", "name": "add", "description": "adds",
                                                  "parameters": {"type": "object"}, "strict": False}]
