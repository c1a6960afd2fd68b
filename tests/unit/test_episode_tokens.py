"""Episodes as tokens: tool calls read from the policy's text, tool turns rendered, the loss mask on the
policy's tokens only, and unscored endings kept out of the rewards."""

from __future__ import annotations

import pytest
import torch

from examples.tiny import build_tokenizer
from reward_core.contract import RolloutStatus
from reward_core.episode_contract import EpisodeOutcome, EpisodeSpec, EpisodeStatus, ToolSpec
from trainer_client.train.episode_step import group_results, rollout_result
from trainer_client.train.episode_tokens import EpisodeTokens, episode_rollouts, tool_turn_text
from trainer_client.train.episodes import EpisodeRecord
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.grpo_config import load_config
from trainer_client.train.tool_calls import format_tool_call, parse_tool_call, with_tools_prompt


def test_a_tool_call_is_read_from_the_text_around_it():
    call = parse_tool_call('I will compute. <tool_call>{"name": "calculator", "arguments": {"expression": "2*3"}}'
                           '</tool_call> done')
    assert (call.name, dict(call.arguments), call.error) == ("calculator", {"expression": "2*3"}, "")


def test_arguments_written_as_a_json_string_are_read():
    call = parse_tool_call('<tool_call>{"name": "f", "arguments": "{\\"x\\": 1}"}</tool_call>')
    assert dict(call.arguments) == {"x": 1}


def test_a_turn_without_a_call_is_a_final_message():
    assert parse_tool_call("The answer is 42.") is None


@pytest.mark.parametrize("body", ['{"name": "f", "arguments": {', '["f"]', '{"arguments": {}}',
                                  '{"name": "f", "arguments": [1]}'])
def test_a_malformed_call_is_an_error_not_a_call(body):
    call = parse_tool_call(f"<tool_call>{body}</tool_call>")
    assert call is not None and call.error


def test_format_tool_call_round_trips():
    call = parse_tool_call(format_tool_call("submit_answer", {"answer": "7"}))
    assert (call.name, dict(call.arguments)) == ("submit_answer", {"answer": "7"})


def test_the_tools_are_described_in_the_system_message():
    tools = [ToolSpec("calculator", "evaluates", {"type": "object"})]
    out = with_tools_prompt([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "q"}], tools,
                            "names")
    assert out[0]["content"].startswith("Be brief.\n\nTools: calculator.") and out[1]["content"] == "q"
    assert with_tools_prompt([{"role": "user", "content": "q"}], tools, "full")[0]["role"] == "system"
    assert with_tools_prompt([{"role": "user", "content": "q"}], tools, "none") == [{"role": "user", "content": "q"}]


def test_a_tool_turn_is_the_templates_text_between_two_assistant_turns():
    tokenizer = build_tokenizer()
    assert tool_turn_text(tokenizer, "42", templated=True, role="user") == \
        "<|user|><tool_response>\n42\n</tool_response><|assistant|>"
    assert tool_turn_text(tokenizer, "42", templated=False) == "\n<tool_response>\n42\n</tool_response>\n"


def test_a_template_without_a_tool_role_says_which_setting_to_change():
    with pytest.raises(ValueError, match="tool_role=user"):
        tool_turn_text(build_tokenizer(), "42", templated=True, role="tool")


def test_the_policy_mask_covers_exactly_the_policys_pieces():
    a = EpisodeTokens([1, 2, 3])
    a.add([10, 11], policy=True)
    a.add([20, 21, 22], policy=False)  # a tool turn
    a.add([12], policy=True)
    b = EpisodeTokens([4])
    b.add([13, 14], policy=True)
    ro = episode_rollouts([a, b], ["a", "b"], [False, True], group_size=2, pad_id=0)
    assert ro.prompt_ids.tolist() == [[1, 2, 3], [0, 0, 4]]
    assert ro.prompt_mask.tolist() == [[True] * 3, [False, False, True]]
    assert ro.completion_ids.tolist() == [[10, 11, 20, 21, 22, 12], [13, 14, 0, 0, 0, 0]]
    assert ro.completion_mask.tolist() == [[True] * 6, [True, True] + [False] * 4]
    assert ro.policy_mask.tolist() == [[True, True, False, False, False, True], [True, True] + [False] * 4]
    assert ro.loss_tokens is ro.policy_mask and ro.lengths.tolist() == [6, 2] and ro.truncated.tolist() == [0, 1]
    picked = ro.select_groups([0])
    assert torch.equal(picked.policy_mask, ro.policy_mask)


def _record(status: EpisodeStatus, reward: float | None) -> EpisodeRecord:
    record = EpisodeRecord(EpisodeSpec("arithmetic_tools"), EpisodeTokens([1]))
    record.outcome = EpisodeOutcome("s", status, reward=reward, error="" if status.scored else "why")
    return record


@pytest.mark.parametrize("status", [s for s in EpisodeStatus if s.ended and not s.scored])
def test_every_unscored_ending_is_an_unscored_rollout_never_zero(status):
    result = rollout_result(_record(status, None), "i", "g")
    assert not result.scored and result.reward is None and status.name in result.error


def test_a_finished_episode_is_scored_with_its_reward_even_zero():
    assert rollout_result(_record(EpisodeStatus.FINISHED, 0.0), "i", "g").reward == 0.0
    result = rollout_result(_record(EpisodeStatus.FINISHED, 1.0), "i", "g")
    assert result.status is RolloutStatus.OK and result.reward == 1.0


def test_group_stats_count_scored_episodes_only():
    records = [_record(EpisodeStatus.FINISHED, 1.0), _record(EpisodeStatus.FINISHED, 0.0),
               _record(EpisodeStatus.SESSION_LOST, None), _record(EpisodeStatus.FINISHED, 0.0)]
    (group,) = group_results(records, 4, "t")
    assert group.rewards == [1.0, 0.0, None, 0.0]
    assert (group.stats.scored, group.stats.mean) == (3, pytest.approx(1 / 3))


def test_episodes_config_refuses_single_turn_only_settings():
    with pytest.raises(ValueError, match="grpo.dynamic_sampling"):
        load_config(None, ["model.path=m", "episodes.environment=arithmetic_tools", "grpo.dynamic_sampling=true"])
    with pytest.raises(ValueError, match="data.train is required"):
        load_config(None, ["model.path=m"])
    assert load_config(None, ["model.path=m", "episodes.environment=arithmetic_tools"]).episodes.enabled
    with pytest.raises(ValueError, match="tool_call_format"):
        EpisodesConfig(environment="x", tool_call_format="xml")
