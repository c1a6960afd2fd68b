"""UNAVAILABLE is one typed error for every client: ServerUnavailable, naming the endpoint in our words.

Real servers on loopback: a sandbox server that drains or has stopped, hand-written reward-model servicers
(one draining), a reward server that drains (``score_once``, the HTTP door's call), and the HTTP door over
upstreams that are gone. ServerUnavailable is also a ``grpc.RpcError`` whose ``code()`` is UNAVAILABLE, so the
callers that catch that and read the code (the remote executor, the rm task, the door's 503) keep working.

Deadlines are 600 s: a call that waited for a server that went away instead of failing would run into the
hang guard (``pytest.mark.timeout``) and fail. A client that first connects while its only server drains
gets EndpointUnreachable saying so (not "a wrong port"). Nothing here measures time.
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import httpx
import pytest

import reward_core.sandbox_contract as ex
from reward.v1 import reward_model_pb2 as rm_pb
from reward.v1 import reward_model_pb2_grpc
from reward_core.clients import (
    AsyncRewardClient,
    AsyncRewardModelClient,
    AsyncSandboxClient,
    ClientError,
    EndpointUnreachable,
    RewardClient,
    RewardModelClient,
    SandboxClient,
    ServerUnavailable,
)
from reward_core.config_flags import dataclass_from_values
from reward_core.contract import Rollout
from reward_core.ports import free_port
from reward_service.tasks.rm_task import RewardModelTask, RewardModelUnavailable
from sandbox.remote_executor import RemoteExecutor
from sandbox.server import SandboxServerConfig, create_server
from tests.http_fixtures import running_door, serve_app
from tests.integration.conftest import fake_grpc_server, start_server

DEADLINE_S = 600.0  # far above anything these tests wait for: only a hang reaches it
HANG_GUARD = pytest.mark.timeout(120)
DRAINING = "server is draining; retry on another replica"
PRINT_1 = ex.ExecutionRequest(code="print(1)", style=ex.TestStyle.STDIO, id="p",
                              cases=(ex.TestCase(expected_stdout="1\n"),))


def assert_unavailable(exc: BaseException, address: str, service: str, said: str) -> None:
    """ServerUnavailable in our words naming ``address``, and a grpc.RpcError with the call's code."""
    assert isinstance(exc, ServerUnavailable) and isinstance(exc, ClientError)
    assert isinstance(exc, grpc.RpcError) and isinstance(exc, ConnectionError)
    assert exc.code() is grpc.StatusCode.UNAVAILABLE and exc.details() == exc.detail and exc.detail
    assert exc.endpoint == address and exc.service == service
    message = str(exc)
    assert message.startswith(f"the {service} at {address} is unavailable: {said}")
    assert "backends failing" not in message and "ipv4:" not in message  # gRPC's own text stays in details()
    assert isinstance(exc.__cause__, grpc.RpcError) and not isinstance(exc.__cause__, ClientError)


def sandbox_server():
    return create_server(dataclass_from_values(SandboxServerConfig, dict(port=0, workers=1, grace_s=0.0)))


# --- the sandbox client -----------------------------------------------------------------------
@HANG_GUARD
def test_a_draining_sandbox_raises_server_unavailable_saying_so():
    server = sandbox_server()
    try:
        with SandboxClient(server.address, timeout_s=DEADLINE_S) as client:
            client.check_connection()
            server.begin_drain()  # health NOT_SERVING and calls refused UNAVAILABLE: which one the call meets varies
            with pytest.raises(ServerUnavailable) as info:
                client.execute(PRINT_1)
    finally:
        server.stop(0)
    assert_unavailable(info.value, server.address, "sandbox service", "it ")


@HANG_GUARD
def test_a_sandbox_that_went_away_fails_the_next_async_call_at_once():
    server = sandbox_server()
    address = server.address

    async def scenario() -> None:
        async with AsyncSandboxClient(address, timeout_s=DEADLINE_S) as client:
            assert any(info.name == "python" for info in await client.list_languages())
            await asyncio.to_thread(server.stop, 0)
            with pytest.raises(ServerUnavailable) as info:
                await client.execute(PRINT_1)
        assert_unavailable(info.value, address, "sandbox service", "it ")

    try:
        asyncio.run(scenario())
    finally:
        server.stop(0)


@HANG_GUARD
def test_the_remote_executor_still_reads_the_code_of_an_unavailable_sandbox():
    server = sandbox_server()
    try:
        server.begin_drain()
        executor = RemoteExecutor(server.address, call_timeout_s=DEADLINE_S, max_attempts=2)
        try:
            result = executor.execute(PRINT_1)
        finally:
            executor.close()
    finally:
        server.stop(0)
    assert result.verdict is ex.Verdict.SANDBOX_ERROR and result.id == "p"
    assert f"sandbox at {server.address}: UNAVAILABLE: " in result.error


# --- the reward-model client ------------------------------------------------------------------
class _DrainingRewardModel(reward_model_pb2_grpc.RewardModelServiceServicer):
    """Answers Info; refuses Score and ScoreSteps as a draining server does."""

    def Info(self, request, context):  # noqa: N802 - the gRPC method name
        return rm_pb.InfoResponse(checkpoint="tiny")

    def Score(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNAVAILABLE, DRAINING)

    def ScoreSteps(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.UNAVAILABLE, DRAINING)


@HANG_GUARD
def test_a_draining_reward_model_raises_server_unavailable_saying_so():
    with fake_grpc_server(reward_model_pb2_grpc.add_RewardModelServiceServicer_to_server,
                          _DrainingRewardModel()) as address, \
            RewardModelClient(address, timeout_s=DEADLINE_S) as rm, pytest.raises(ServerUnavailable) as info:
        rm.score([("q", "a")])
    assert_unavailable(info.value, address, "reward-model service", "it is draining")
    assert info.value.details() == DRAINING


@HANG_GUARD
def test_a_reward_model_that_went_away_fails_the_next_async_call_at_once():
    served = contextlib.ExitStack()
    address = served.enter_context(fake_grpc_server(reward_model_pb2_grpc.add_RewardModelServiceServicer_to_server,
                                                    _DrainingRewardModel()))

    async def scenario() -> None:
        async with AsyncRewardModelClient(address, timeout_s=DEADLINE_S) as rm:
            assert (await rm.info()).checkpoint == "tiny"
            await asyncio.to_thread(served.close)  # the server stops
            with pytest.raises(ServerUnavailable) as info:
                await rm.info()
        assert_unavailable(info.value, address, "reward-model service", "it ")

    with served:
        asyncio.run(scenario())


@HANG_GUARD
def test_the_rm_task_still_reads_the_code_of_an_unavailable_reward_model():
    with fake_grpc_server(reward_model_pb2_grpc.add_RewardModelServiceServicer_to_server,
                          _DrainingRewardModel()) as address:
        task = RewardModelTask(address, timeout_s=DEADLINE_S)
        with pytest.raises(RewardModelUnavailable) as info:
            task.score("a", {}, "q")
    assert str(info.value) == f"reward model at {address} failed: UNAVAILABLE: {DRAINING}"


# --- score_once (the HTTP door's call) and the door ------------------------------------------
@HANG_GUARD
def test_score_once_on_a_draining_reward_server_raises_server_unavailable():
    server = start_server(workers=1)
    rollouts = [Rollout("a", "sleep", "s", {"seconds": 0})]

    async def relay() -> None:
        async with AsyncRewardClient(server.address, timeout_s=DEADLINE_S) as client:
            await client.check_connection()
            await asyncio.to_thread(server.begin_drain)
            await client.score_once(rollouts)

    try:
        with RewardClient(server.address, timeout_s=DEADLINE_S) as client:
            client.check_connection()
            with pytest.raises(grpc.RpcError) as relayed:  # as the door catches it
                asyncio.run(relay())
            with pytest.raises(ServerUnavailable) as sync:
                client.score_once(rollouts)
    finally:
        server.stop(0)
    assert_unavailable(relayed.value, server.address, "reward service", "it ")
    assert_unavailable(sync.value, server.address, "reward service", "it ")


@HANG_GUARD
def test_the_door_answers_503_when_the_reward_server_is_gone():
    with running_door(f"127.0.0.1:{free_port()}") as url:
        tasks = httpx.get(f"{url}/v1/tasks", timeout=60)
        score = httpx.post(f"{url}/v1/score", json={"rollouts": [{"id": "a", "task": "gsm8k"}]}, timeout=60)
    for reply in (tasks, score):
        assert reply.status_code == 503 and reply.headers["Retry-After"] == "1"
        assert reply.json()["code"] == grpc.StatusCode.UNAVAILABLE.value[0]


@HANG_GUARD
def test_the_door_answers_503_when_its_reward_model_drains():
    with fake_grpc_server(reward_model_pb2_grpc.add_RewardModelServiceServicer_to_server,
                          _DrainingRewardModel()) as rm, \
            serve_app(f"127.0.0.1:{free_port()}", rm=rm, timeout_s=DEADLINE_S) as (url, _):
        reply = httpx.post(f"{url}/classify", json={"model": "rm", "input": ["a"]}, timeout=60)
    assert reply.status_code == 503 and DRAINING in reply.json()["error"]["message"]


# --- a client that first connects while its only server drains ---------------------------------
@HANG_GUARD
def test_connecting_to_a_draining_server_says_it_is_draining_not_a_wrong_port():
    server = sandbox_server()
    try:
        server.begin_drain()  # health NOT_SERVING: a channel with health checking sends it nothing
        with SandboxClient(server.address, timeout_s=DEADLINE_S, connect_timeout_s=1) as client, \
                pytest.raises(EndpointUnreachable) as info:
            client.list_languages()
    finally:
        server.stop(0)
    message = str(info.value)
    assert message.startswith(f"cannot connect to the sandbox service at {server.address}: {server.address} answers, "
                              "but its health check says NOT_SERVING: the server is draining")
    assert "TLS" not in message and "not this service's port" not in message
