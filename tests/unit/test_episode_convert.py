"""reward_core/episode_convert.py: the episode dataclasses survive the wire exactly."""

from __future__ import annotations

import pytest

from reward.v1 import environment_pb2 as pb
from reward_core import episode_convert as convert
from reward_core.episode_contract import (
    EnvironmentInfo,
    EpisodeError,
    EpisodeOutcome,
    EpisodeSpec,
    EpisodeSpecError,
    EpisodeStart,
    EpisodeState,
    EpisodeStatus,
    ToolCall,
    ToolResult,
    ToolSpec,
    Trajectory,
    TrajectoryScore,
)

OUTCOME = EpisodeOutcome("s1", EpisodeStatus.FINISHED, 0.0, (None, 0.5, 0.0), {"math": 0.0}, "extracted 41",
                         turns=3, elapsed_ms=12.5)


def test_the_proto_enum_mirrors_the_contract_status_exactly():
    wire = {v.name.removeprefix("EPISODE_STATUS_"): v.number for v in pb.EpisodeStatus.DESCRIPTOR.values}
    assert wire == {s.name: s.value for s in EpisodeStatus}


@pytest.mark.parametrize("status", list(EpisodeStatus))
def test_every_status_round_trips(status):
    assert convert.status_from_proto(convert.status_to_proto(status)) is status


def test_a_status_this_version_does_not_know_reads_as_error():
    assert convert.status_from_proto(99) is EpisodeStatus.ERROR


@pytest.mark.parametrize("value", [
    EpisodeSpec("math_tools", row={"question": "1+1", "answer": 2, "big": 12345678901234567}, seed=3,
                deadline_s=30.0, client_id="r0"),
    EpisodeSpec("arithmetic_tools", split="test", index=0),
    EpisodeSpec("arithmetic_tools", split="train"),
])
def test_an_episode_spec_round_trips_ints_and_the_unset_index(value):
    back = convert.spec_from_proto(pb.EpisodeSpec.FromString(convert.spec_to_proto(value).SerializeToString()))
    assert back == value
    if value.row:
        assert type(back.row["answer"]) is int and back.row["big"] == 12345678901234567


def test_start_tool_call_result_state_and_outcome_round_trip():
    start = EpisodeStart("s1", "math_tools", ({"role": "system", "content": "é"}, {"role": "user", "content": "2+2"}),
                         (ToolSpec("python", "runs code", {"type": "object", "properties": {"code": {"type": "string"}},
                                                          "required": ["code"]}), ToolSpec("calculator")),
                         max_turns=4, deadline_s=60.0, metadata={"seed": 1})
    assert convert.start_from_proto(convert.start_to_proto(start)) == start
    call = ToolCall("calculator", {"expression": "2*21", "n": 3, "nested": [1, {"x": None}]}, "c9")
    assert convert.tool_call_from_proto(convert.tool_call_to_proto(call)) == call
    result = ToolResult("c9", "42", EpisodeStatus.FINISHED, reward=0.0, finished=True, metadata={"k": 1},
                        elapsed_ms=3.0, outcome=OUTCOME)
    assert convert.tool_result_from_proto(convert.tool_result_to_proto(result)) == result
    assert convert.outcome_from_proto(convert.outcome_to_proto(OUTCOME)) == OUTCOME
    state = EpisodeState("s1", "math_tools", EpisodeStatus.FINISHED, 3, (None, 0.5, 0.0), OUTCOME)
    assert convert.state_from_proto(convert.state_to_proto(state)) == state


def test_an_unscored_outcome_has_no_reward_on_the_wire():
    outcome = EpisodeOutcome("s2", EpisodeStatus.TOOL_FAILED, error="python tool timed out")
    msg = convert.outcome_to_proto(outcome)
    assert not msg.HasField("reward")
    assert convert.outcome_from_proto(msg).reward is None


def test_environment_info_keeps_the_order_of_its_splits():
    info = EnvironmentInfo("e", "d", (ToolSpec("t"),), {"train": 1000, "test": 100, "dev": 5}, "abc")
    back = convert.environment_from_proto(convert.environment_to_proto(info))
    assert back == info and list(back.splits) == ["train", "test", "dev"]


def test_trajectories_and_their_scores_round_trip():
    trajectory = Trajectory("math_tools", {"answer": "4"}, (
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": "{\"e\": \"2+2\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
        {"role": "assistant", "content": "4"}), id="t1", seed=5)
    assert convert.trajectory_from_proto(convert.trajectory_to_proto(trajectory)) == trajectory
    by_index = Trajectory("math_tools", {}, ({"role": "assistant", "content": "4"},), split="test", index=0)
    assert convert.trajectory_from_proto(convert.trajectory_to_proto(by_index)) == by_index
    score = TrajectoryScore("t1", EpisodeStatus.FINISHED, 1.0, {1: 0.0, 3: 1.0}, {"math": 1.0}, "ok")
    assert convert.trajectory_score_from_proto(convert.trajectory_score_to_proto(score)) == score


def test_an_episode_error_round_trips_with_its_retry_hint():
    back = convert.error_from_proto(convert.error_to_proto(EpisodeError(EpisodeStatus.REFUSED, "full",
                                                                        retry_after_s=1.5)))
    assert (back.status, str(back), back.retry_after_s) == (EpisodeStatus.REFUSED, "full", 1.5)
    lost = convert.error_from_proto(convert.error_to_proto(EpisodeError(EpisodeStatus.SESSION_LOST, "x")))
    assert lost.retry_after_s is None and not isinstance(lost, EpisodeSpecError)
    bad = convert.error_from_proto(convert.error_to_proto(EpisodeSpecError("no environment 'x'")))
    assert isinstance(bad, EpisodeSpecError) and bad.status is EpisodeStatus.ERROR


@pytest.mark.parametrize(("msg", "field"), [
    (pb.ToolCall(name="python", arguments_json="{\"code\": "), "arguments_json"),
    (pb.ToolCall(name="python", arguments_json="[1, 2]"), "must be a JSON object"),
])
def test_malformed_json_names_the_field(msg, field):
    with pytest.raises(convert.InvalidEpisodeMessage, match=field):
        convert.tool_call_from_proto(msg)


def test_a_value_that_is_not_json_is_refused_before_the_wire():
    with pytest.raises(convert.InvalidEpisodeMessage, match="not JSON-serializable"):
        convert.tool_call_to_proto(ToolCall("python", {"code": object()}))


def test_undecodable_output_is_sent_as_valid_utf8():
    result = ToolResult("c", "bad \udcff byte")
    assert convert.tool_result_to_proto(result).output == "bad \ufffd byte"
