"""A client whose only server drains on SIGTERM says so, instead of waiting out its deadline.

A real ``reward-service serve`` process gets SIGTERM; the clients have a 600 s deadline, so a
client that queued its call until the deadline (the old behaviour: ``waitForReady`` and a fresh
deadline per resend) would hang, which the hang guard (``pytest.mark.timeout``) turns into a
failure. Nothing here measures time: the assertions are on the error's type and words.
"""

from __future__ import annotations

import asyncio
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward.v1 import reward_pb2_grpc
from reward_core.clients import AsyncRewardClient, RewardClient, ServerUnavailable
from reward_core.contract import RolloutStatus
from tests.integration.test_reward_server_shutdown import HANG_GUARD_S, server_process, sleeping  # noqa: F401 (a fixture)

DEADLINE_S = 600.0  # far above anything the test waits for: only a hang reaches it


def sleep_rollouts(prefix: str, n: int, seconds: float) -> list[dict]:
    return [{"id": f"{prefix}-{i}", "task": "sleep", "completion": f"{prefix}{i}", "reference": {"seconds": seconds}}
            for i in range(n)]


def wait_not_serving(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        deadline = time.monotonic() + HANG_GUARD_S
        while True:
            try:
                if health.Check(health_pb2.HealthCheckRequest(), timeout=5).status != \
                        health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                return  # already gone
            assert time.monotonic() < deadline
            time.sleep(0.02)


@pytest.mark.timeout(180)
def test_a_call_started_while_the_only_server_drains_raises_server_unavailable(request):
    proc, address = request.getfixturevalue("server_process")
    with RewardClient(address, timeout_s=DEADLINE_S) as client:
        assert client.score(sleep_rollouts("warm", 1, 0.0))[0].score == 1.0
        with grpc.insecure_channel(address) as channel:  # keeps the server draining for its grace period
            busy = reward_pb2_grpc.RewardServiceStub(channel).Score.future(sleeping("busy", 10, 0.5),
                                                                           timeout=HANG_GUARD_S)
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            wait_not_serving(address)
            with pytest.raises(ServerUnavailable) as refused:
                client.score(sleep_rollouts("late", 1, 0.0))
            busy.exception()
    message = str(refused.value)
    assert address in message and "no other replica answered" in message
    # In our words (draining, or no longer accepting connections: which depends on timing); gRPC's own in .detail.
    assert "backends failing" not in message and "ipv4:" not in message and refused.value.detail
    assert isinstance(refused.value, ConnectionError) and refused.value.endpoint == address
    assert proc.wait(timeout=HANG_GUARD_S) == 0


@pytest.mark.timeout(180)
def test_a_call_in_flight_returns_what_was_verified_and_names_the_server_for_the_rest(request):
    proc, address = request.getfixturevalue("server_process")
    with RewardClient(address, timeout_s=DEADLINE_S) as client, ThreadPoolExecutor(1) as pool:
        assert client.score(sleep_rollouts("warm", 1, 0.0))[0].score == 1.0
        call = pool.submit(client.score, sleep_rollouts("load", 10, 0.5))
        time.sleep(1.0)  # lets the worker start on them (not asserted: only makes the test meaningful)
        proc.send_signal(signal.SIGTERM)
        results = call.result()
        assert [r.id for r in results] == [f"load-{i}" for i in range(10)]
        unverified = [r for r in results if not r.scored]
        assert unverified, "5 s of work cannot fit in the 3 s grace period"
        for r in unverified:
            assert r.status is RolloutStatus.UNAVAILABLE
            assert address in r.error and "no other replica answered" in r.error
        assert all(r.score == 1.0 for r in results if r.scored)
        assert proc.wait(timeout=HANG_GUARD_S) == 0
        with pytest.raises(ServerUnavailable, match="no other replica answered") as gone:  # and once it is gone
            client.score(sleep_rollouts("after", 1, 0.0))
        assert "no longer accepts connections" in str(gone.value)  # our words; gRPC's own text in .detail
        assert "backends failing" not in str(gone.value) and gone.value.detail


@pytest.mark.timeout(180)
def test_the_async_client_raises_server_unavailable_once_the_server_is_gone(request):
    proc, address = request.getfixturevalue("server_process")

    async def scenario() -> None:
        async with AsyncRewardClient(address, timeout_s=DEADLINE_S) as client:
            assert (await client.score(sleep_rollouts("warm", 1, 0.0)))[0].score == 1.0
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(proc.wait, HANG_GUARD_S) == 0
            with pytest.raises(ServerUnavailable, match="no other replica answered") as refused:
                await client.score(sleep_rollouts("late", 1, 0.0))
            assert address in str(refused.value)

    asyncio.run(scenario())
