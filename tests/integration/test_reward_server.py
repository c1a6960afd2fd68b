"""The reward server over real gRPC on loopback: batch, groups, stream, errors, failures."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from reward.v1 import reward_pb2 as pb
from reward.v1 import reward_pb2_grpc
from reward_core.contract import RolloutStatus
from reward_core.ports import free_port
from tests.integration.conftest import start_server
from trainer_client import AsyncRewardClient, RewardClient


def gsm(i, completion, gold="72", group=""):
    return {"id": f"r{i}", "task": "gsm8k", "completion": completion, "reference": {"answer": gold},
            "group_id": group}


def test_score_returns_one_result_per_rollout_in_input_order(client):
    rollouts = [gsm(i, f"so #### {70 + i}") for i in range(5)]
    results = client.score(rollouts)
    assert [r.id for r in results] == [f"r{i}" for i in range(5)]
    assert [r.score for r in results] == [0, 0, 1, 0, 0]
    assert all(r.status == RolloutStatus.OK for r in results)
    assert results[2].extracted == "72"


def test_math_task_scores_equivalent_latex_answer(client):
    results = client.score([{"id": "m", "task": "math", "completion": r"Thus $\boxed{\dfrac{1}{2}}$.",
                             "reference": "0.5"}])
    assert results[0].score == 1.0 and results[0].status == RolloutStatus.OK


def test_no_answer_is_scored_zero_not_unscored(client):
    [result] = client.score([gsm(0, "I do not know.", gold="5")])
    assert result.status == RolloutStatus.NO_ANSWER
    assert result.scored and result.score == 0.0 and result.reward == 0.0


def test_unknown_task_is_answered_in_its_rollout_without_failing_the_batch(client):
    results = client.score([gsm(0, "#### 72"), {"id": "x", "task": "nope", "completion": "1", "reference": "1"}])
    assert results[0].score == 1.0
    assert results[1].status == RolloutStatus.UNKNOWN_TASK
    assert not results[1].scored and results[1].reward is None
    assert "nope" in results[1].error and "gsm8k" in results[1].error


def test_missing_reference_answer_is_invalid_reference(client):
    [result] = client.score([{"id": "a", "task": "math", "completion": r"\boxed{1}", "reference": {"gold": "1"}}])
    assert result.status == RolloutStatus.INVALID_REFERENCE
    assert "answer" in result.error


def test_groups_carry_mean_std_and_zero_variance_flag(client):
    g1 = [gsm(i, "#### 72" if i < 3 else "#### 1", group="g1") for i in range(4)]
    g2 = [gsm(10 + i, "#### 72", group="g2") for i in range(4)]
    groups = client.score_groups([g1, g2])
    assert [g.group_id for g in groups] == ["g1", "g2"]
    assert groups[0].stats.mean == pytest.approx(0.75)
    assert groups[0].stats.std == pytest.approx(0.4330127)
    assert not groups[0].stats.zero_variance
    assert groups[1].stats.zero_variance and groups[1].stats.mean == 1.0
    assert groups[0].rewards == [1.0, 1.0, 1.0, 0.0]


def test_server_sends_group_stats_in_the_response(stub):
    request = pb.ScoreRequest(request_id="q", rollouts=[
        pb.Rollout(id=str(i), task="gsm8k", completion=f"#### {i}", group_id="g",
                   reference={"answer": "1"}) for i in range(2)])
    response = stub.Score(request, timeout=30)
    assert response.request_id == "q"
    [group] = response.groups
    assert (group.size, group.scored, group.mean, group.std) == (2, 2, 0.5, 0.5)


def test_identical_items_in_a_request_are_verified_once(reward_server, client):
    before = reward_server.scorer.pool.stats().completed
    # a completion no other test sends: the server's reward cache would answer a repeat without verifying it
    results = client.score([gsm(i, "identical items\n#### 72") for i in range(6)])
    assert reward_server.scorer.pool.stats().completed - before == 1
    assert [r.score for r in results] == [1.0] * 6
    assert sum(1 for r in results if r.elapsed_ms > 0) <= 1


def test_composite_reward_is_the_weighted_sum_of_its_components(client):
    completion = "<think>2+2</think><answer>\\boxed{4}</answer>"
    [r] = client.score([{"id": "c", "task": "math_with_format", "completion": completion, "reference": "4"}])
    assert r.score == pytest.approx(1.2)
    assert r.components == {"math": 1.0, "format": 1.0}
    [r] = client.score([{"id": "c", "task": "math_with_format", "completion": r"\boxed{4}", "reference": "4"}])
    assert r.score == pytest.approx(1.0) and r.components["format"] == 0.0


def test_stream_answers_every_request_with_its_id(client):
    sent = [[gsm(f"{k}-{i}", f"#### {i}", gold="1", group=f"s{k}") for i in range(3)] for k in range(5)]
    batches = list(client.stream(iter(sent)))
    assert len(batches) == 5
    ids = sorted(r.id for b in batches for r in b.results)
    assert ids == sorted(f"r{k}-{i}" for k in range(5) for i in range(3))
    assert all(len(b.groups) == 1 and b.groups[0].mean == pytest.approx(1 / 3) for b in batches)


def test_stream_returns_fast_results_before_slow_ones(client):
    slow = [{"id": "slow", "task": "sleep", "completion": "", "reference": {"seconds": 1.0}}]
    fast = [gsm("fast", "#### 72")]
    order = [b.results[0].id for b in client.stream(iter([slow, fast]))]
    assert order == ["rfast", "slow"]


def test_list_tasks_reports_builtin_tasks_and_composites(client):
    tasks = {t.name: t for t in client.list_tasks()}
    assert {"math", "gsm8k", "format", "math_with_format"} <= set(tasks)
    assert tasks["math"].required_reference_fields == ("answer",)
    assert tasks["math_with_format"].kind == "composite"
    assert tasks["math_with_format"].weights == {"math": 1.0, "format": 0.2}


def test_health_check_reports_serving(reward_server):
    with grpc.insecure_channel(reward_server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "reward.v1.RewardService"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_reward_service(reward_server):
    with grpc.insecure_channel(reward_server.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                            timeout=5)
        names = {s.name for r in replies for s in r.list_services_response.service}
    assert {"reward.v1.RewardService", "grpc.health.v1.Health"} <= names


def expect_status(call, code: grpc.StatusCode, fragment: str) -> None:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == code
    assert fragment in info.value.details()


def test_empty_rollout_id_is_invalid_argument(stub):
    request = pb.ScoreRequest(rollouts=[pb.Rollout(id="", task="gsm8k", completion="1")])
    expect_status(lambda: stub.Score(request, timeout=5), grpc.StatusCode.INVALID_ARGUMENT, "empty id")


def test_duplicate_rollout_ids_are_invalid_argument(stub):
    request = pb.ScoreRequest(rollouts=[pb.Rollout(id="a", task="gsm8k"), pb.Rollout(id="a", task="gsm8k")])
    expect_status(lambda: stub.Score(request, timeout=5), grpc.StatusCode.INVALID_ARGUMENT, "duplicate")


def test_too_many_rollouts_is_invalid_argument(stub):
    request = pb.ScoreRequest(rollouts=[pb.Rollout(id=str(i), task="gsm8k") for i in range(65)])
    expect_status(lambda: stub.Score(request, timeout=5), grpc.StatusCode.INVALID_ARGUMENT, "limit is 64")


def test_item_timeout_above_the_server_maximum_is_invalid_argument(stub):
    request = pb.ScoreRequest(rollouts=[pb.Rollout(id="a", task="gsm8k")], item_timeout_s=1e6)
    expect_status(lambda: stub.Score(request, timeout=5), grpc.StatusCode.INVALID_ARGUMENT, "item_timeout_s")


def test_message_over_the_limit_is_invalid_argument_naming_the_flag(stub):
    # the test server's --max-message-mb is 1: 1.5 MB is refused by the server, naming the limit
    request = pb.ScoreRequest(rollouts=[pb.Rollout(id="big", task="gsm8k", completion="1" * 1_500_000)])
    expect_status(lambda: stub.Score(request, timeout=5), grpc.StatusCode.INVALID_ARGUMENT, "--max-message-mb")


def test_message_far_over_the_limit_is_refused_by_grpc_itself(stub):
    request = pb.ScoreRequest(rollouts=[pb.Rollout(id="big", task="gsm8k", completion="1" * 3_000_000)])
    expect_status(lambda: stub.Score(request, timeout=5), grpc.StatusCode.RESOURCE_EXHAUSTED, "")


def test_client_splits_large_batches_and_keeps_input_order(reward_server):
    rollouts = [gsm(i, f"#### {i % 3}", gold="1", group=f"g{i // 4}") for i in range(200)]
    with RewardClient(reward_server.address, chunk_size=10) as client:
        batch = client.score_batch(rollouts)
    assert [r.id for r in batch.results] == [f"r{i}" for i in range(200)]
    assert [r.score for r in batch.results] == [1.0 if i % 3 == 1 else 0.0 for i in range(200)]
    assert len(batch.groups) == 50


def test_megabyte_long_answer_is_a_fast_non_match(reward_server):
    completion = r"\boxed{" + "9" * 700_000 + "}"
    with RewardClient(reward_server.address, timeout_s=30) as client:
        [r] = client.score([{"id": "long", "task": "math", "completion": completion, "reference": "9"}])
    assert r.scored and r.score == 0.0


def test_pathological_power_tower_is_a_fast_non_match(client):
    [r] = client.score([{"id": "p", "task": "math", "completion": r"\boxed{9^{9^{9^{9}}}}", "reference": "3"}])
    assert r.status == RolloutStatus.OK and r.score == 0.0


def test_hanging_item_times_out_while_the_rest_of_its_batch_is_answered(reward_server, client):
    timeouts = reward_server.scorer.pool.stats().timeouts
    rollouts = [{"id": "h", "task": "hang", "completion": "hang"}] + [gsm(i, "#### 72") for i in range(1, 6)]
    rollouts += [{"id": "ok", "task": "hang", "completion": "fine"}]
    results = client.score(rollouts)
    assert results[0].status == RolloutStatus.TIMEOUT and not results[0].scored
    assert "limit" in results[0].error
    assert all(r.status == RolloutStatus.OK and r.score == 1.0 for r in results[1:])
    assert reward_server.scorer.pool.stats().timeouts > timeouts
    assert client.score([gsm(0, "#### 72")])[0].score == 1.0  # still serving


def test_worker_crash_mid_batch_answers_every_rollout(reward_server, client):
    rollouts = [gsm(i, f"#### {i}", gold="3") for i in range(8)]
    rollouts.insert(4, {"id": "boom", "task": "crash", "completion": "crash"})
    crashes_before = reward_server.scorer.pool.stats().crashes
    results = client.score(rollouts)
    assert len(results) == 9
    crashed = results[4]
    assert crashed.status == RolloutStatus.ERROR and "crash" in crashed.error
    # tried once more on a fresh worker (it might have been another item's fault), then answered ERROR
    assert reward_server.scorer.pool.stats().crashes - crashes_before == 2
    assert [r.score for r in results if r.id != "boom"] == [1.0 if i == 3 else 0.0 for i in range(8)]


def kill_a_busy_worker(pool, timeout_s: float = 10.0) -> None:
    """Waits until every worker is busy, then SIGKILLs one of them."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stats = pool.stats()
        if stats.busy_workers == stats.alive_workers > 0 and pool.worker_pids():
            os.kill(pool.worker_pids()[0], signal.SIGKILL)
            return
        time.sleep(0.01)
    raise AssertionError(f"workers never all busy: {pool.stats()}")


def test_worker_killed_from_outside_mid_batch_is_replaced_and_its_item_retried(reward_server, client):
    """An outside SIGKILL is not the item's fault: its item is verified again on a live worker."""
    slow = [{"id": f"s{i}", "task": "sleep", "completion": str(i), "reference": {"seconds": 0.5}} for i in range(6)]
    restarts_before = reward_server.scorer.pool.stats().restarts
    killer = threading.Thread(target=kill_a_busy_worker, args=(reward_server.scorer.pool,))
    killer.start()
    results = client.score(slow)
    killer.join()
    assert [r.id for r in results] == [f"s{i}" for i in range(6)]
    assert [r.status for r in results] == [RolloutStatus.OK] * 6
    assert reward_server.scorer.pool.stats().restarts > restarts_before
    assert client.score([gsm("after", "#### 2", gold="2")])[0].score == 1.0  # the server never wedges


def test_deadline_exceeded_when_the_call_deadline_passes(stub):
    request = pb.ScoreRequest(rollouts=[pb.Rollout(id="s", task="sleep", reference={"seconds": 1.0})])
    expect_status(lambda: stub.Score(request, timeout=0.3), grpc.StatusCode.DEADLINE_EXCEEDED, "")


def test_async_client_scores_groups_concurrently(reward_server):
    async def run():
        async with AsyncRewardClient(reward_server.address, chunk_size=4) as client:
            groups = [[gsm(f"{k}-{i}", f"#### {i}", gold="2") for i in range(4)] for k in range(6)]
            return await client.score_groups(groups), await client.list_tasks()

    groups, tasks = asyncio.run(run())
    assert len(groups) == 6 and all(g.rewards == [0.0, 0.0, 1.0, 0.0] for g in groups)
    assert any(t.name == "gsm8k" for t in tasks)


def test_async_client_streams_groups(reward_server):
    async def run():
        async def produce():
            for k in range(3):
                await asyncio.sleep(0.01)
                yield [gsm(f"{k}-{i}", "#### 72", group=f"a{k}") for i in range(2)]

        async with AsyncRewardClient(reward_server.address) as client:
            return [b async for b in client.stream(produce())]

    batches = asyncio.run(run())
    assert sorted(b.groups[0].group_id for b in batches) == ["a0", "a1", "a2"]


def test_draining_server_answers_unavailable_and_reports_not_serving():
    server = start_server(workers=1)
    try:
        server.begin_drain()
        with grpc.insecure_channel(server.address) as channel:
            stub = reward_pb2_grpc.RewardServiceStub(channel)
            request = pb.ScoreRequest(rollouts=[pb.Rollout(id="a", task="gsm8k")])
            expect_status(lambda: stub.Score(request, timeout=5), grpc.StatusCode.UNAVAILABLE, "draining")
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        server.stop(0)


def test_client_waits_for_a_server_that_starts_late():
    port = free_port()
    started = []
    timer = threading.Timer(1.0, lambda: started.append(start_server(port=port, workers=1)))
    timer.start()
    try:
        # connect_timeout_s=None: wait for a server that is still starting (the default says "refused" at once)
        with RewardClient(f"127.0.0.1:{port}", timeout_s=30, connect_timeout_s=None) as client:
            t0 = time.monotonic()
            [r] = client.score([gsm(0, "#### 72")])
        assert r.score == 1.0 and time.monotonic() - t0 >= 0.5
    finally:
        timer.join()
        for server in started:
            server.stop(0)


def test_server_survives_bytes_that_are_not_a_request(reward_server, client):
    with grpc.insecure_channel(reward_server.address) as channel:
        raw = channel.unary_unary("/reward.v1.RewardService/Score",
                                  request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as info:
            raw(b"\xff\xfe\x00garbage\x12\x05not-a-proto", timeout=5)
    assert info.value.code() in (grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT)
    assert client.score([gsm(0, "#### 72")])[0].score == 1.0


def test_invalid_utf8_in_a_completion_does_not_take_the_server_down(reward_server, client):
    request = pb.ScoreRequest(rollouts=[pb.Rollout(id="a", task="gsm8k")]).SerializeToString()
    # Rewrite the id field's payload into invalid UTF-8 bytes of the same length.
    bad = request.replace(b"\x0a\x01a", b"\x0a\x01\xff")
    with grpc.insecure_channel(reward_server.address) as channel:
        raw = channel.unary_unary("/reward.v1.RewardService/Score",
                                  request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError):
            raw(bad, timeout=5)
    assert client.score([gsm(0, "#### 72")])[0].score == 1.0


def test_crash_inside_a_multi_item_job_only_fails_the_item_at_fault(client):
    rollouts = [{"id": f"c{i}", "task": "crash", "completion": "crash" if i == 2 else "fine"} for i in range(5)]
    results = client.score(rollouts)
    assert [r.status for r in results] == [RolloutStatus.OK] * 2 + [RolloutStatus.ERROR] + [RolloutStatus.OK] * 2


def test_verifier_bug_on_one_item_only_fails_that_item(client):
    rollouts = [{"id": f"e{i}", "task": "raise", "completion": "raise" if i == 1 else "fine"} for i in range(4)]
    results = client.score(rollouts)
    assert [r.status for r in results] == [RolloutStatus.OK, RolloutStatus.ERROR, RolloutStatus.OK, RolloutStatus.OK]
    assert "verifier bug" in results[1].error
