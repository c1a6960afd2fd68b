"""Protobuf <-> dataclass conversion round-trips."""

from reward.v1 import reward_pb2 as pb
from reward_core import convert
from reward_core.contract import Rollout, RolloutResult, RolloutStatus, TaskChecks, TaskInfo


def test_rollout_round_trips_through_protobuf():
    rollout = Rollout(id="a", task="math", completion="x", reference={"answer": "72", "tests": [1, 2]},
                      prompt="p", metadata={"k": "v"}, group_id="g")
    assert convert.rollout_from_proto(convert.rollout_to_proto(rollout)) == rollout


def test_integral_struct_numbers_come_back_as_ints():
    back = convert.rollout_from_proto(convert.rollout_to_proto(Rollout("a", "gsm8k", "x", {"answer": 72})))
    assert back.reference == {"answer": 72}
    assert str(back.reference["answer"]) == "72"


def test_result_round_trips_through_protobuf():
    result = RolloutResult("a", RolloutStatus.TIMEOUT, 0.0, {}, "", "too slow", 5.0, "math", "g")
    msg = convert.result_to_proto(result)
    assert msg.scored is False and msg.status == pb.ROLLOUT_STATUS_TIMEOUT
    assert convert.result_from_proto(msg) == result


def test_unknown_status_from_a_newer_server_is_unscored():
    back = convert.result_from_proto(pb.RolloutResult(id="a", status=42, score=1.0))
    assert back.status == RolloutStatus.ERROR and not back.scored and "42" in back.error


def test_task_checks_round_trip_and_an_unchecked_task_has_none():
    checks = TaskChecks(True, ("case 1 wrong",), 7, 5, 1, ("hedge (gold last)",), "")
    info = TaskInfo("t", "d", checks=checks)
    assert convert.task_info_from_proto(convert.task_info_to_proto(info)) == info
    unchecked = TaskInfo("u", "d")
    msg = convert.task_info_to_proto(unchecked)
    assert not msg.HasField("checks") and convert.task_info_from_proto(msg) == unchecked
