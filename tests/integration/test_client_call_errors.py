"""A failed call raises the clients' own exception in our words, still a ``grpc.RpcError`` with the server's code.

Real servers on loopback: the reward server (a ``sleep`` rollout far longer than the call's deadline,
a request above its per-call limit), the sandbox server (a program that spins far longer than the call's
deadline, an unknown language), and hand-written reward-model servicers (one that never answers, one that
refuses). Nothing here measures time: the assertions are on the error's type, code and words.
"""

from __future__ import annotations

import asyncio
import threading

import grpc
import pytest

import reward_core.sandbox_contract as ex
from reward.v1 import reward_model_pb2_grpc, reward_pb2_grpc
from reward_core.clients import (
    AsyncRewardClient,
    AsyncRewardModelClient,
    AsyncSandboxClient,
    CallFailed,
    CallRejected,
    CallTimedOut,
    ClientError,
    RewardClient,
    RewardModelClient,
    SandboxClient,
)
from reward_core.config_flags import dataclass_from_values
from reward_core.contract import Rollout
from sandbox.server import SandboxServerConfig, create_server
from tests.integration.conftest import fake_grpc_server
from tests.integration.test_client_retry import FlakyServicer
from trainer_client.errors import USER_ERRORS

SHORT_S = 0.2  # the calls' deadline: far below what the server needs to answer
SLEEPING = [{"id": "slow-0", "task": "sleep", "completion": "s", "reference": {"seconds": 30.0}}]


def assert_timed_out(exc: BaseException, address: str, service: str) -> None:
    assert isinstance(exc, CallTimedOut) and isinstance(exc, TimeoutError) and isinstance(exc, grpc.RpcError)
    assert exc.code() is grpc.StatusCode.DEADLINE_EXCEEDED and exc.details()
    assert exc.timeout_s == SHORT_S
    message = str(exc)
    assert f"the {service} at {address} did not answer within {SHORT_S:g} s" in message
    assert "raise timeout_s" in message and "server's load" in message
    assert isinstance(exc.__cause__, grpc.RpcError) and not isinstance(exc.__cause__, ClientError)


# --- the reward client ------------------------------------------------------------------------
def test_a_reward_call_past_its_deadline_raises_call_timed_out(reward_server):
    with RewardClient(reward_server.address, timeout_s=SHORT_S) as client, pytest.raises(CallTimedOut) as info:
        client.score(SLEEPING)
    assert_timed_out(info.value, reward_server.address, "reward service")
    assert "chunk_size" in str(info.value)


def test_an_async_reward_call_past_its_deadline_raises_call_timed_out(reward_server):
    async def run():
        async with AsyncRewardClient(reward_server.address, timeout_s=SHORT_S) as client:
            await client.score(SLEEPING)

    with pytest.raises(CallTimedOut) as info:
        asyncio.run(run())
    assert_timed_out(info.value, reward_server.address, "reward service")


def test_a_timed_out_call_is_a_user_error_of_the_trainer_cli():
    assert issubclass(CallTimedOut, USER_ERRORS) and issubclass(CallRejected, USER_ERRORS)


def test_a_request_above_the_servers_limit_raises_call_rejected_with_its_words(reward_server):
    too_many = [{"id": f"r{i}", "task": "sleep", "completion": "s", "reference": {"seconds": 0}} for i in range(65)]
    with RewardClient(reward_server.address, timeout_s=60, chunk_size=1000) as client, \
            pytest.raises(CallRejected) as info:
        client.score(too_many)
    assert isinstance(info.value, grpc.RpcError) and info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "limit is 64" in info.value.details()
    assert str(info.value).startswith(f"the reward service at {reward_server.address} refused the request")
    assert "limit is 64" in str(info.value)


def test_a_relayed_refusal_keeps_the_code_the_front_door_maps(reward_server):
    too_many = [Rollout(f"r{i}", "sleep", "s", {"seconds": 0}) for i in range(65)]

    async def run():
        async with AsyncRewardClient(reward_server.address, timeout_s=60) as client:
            await client.score_once(too_many)

    with pytest.raises(grpc.RpcError) as info:
        asyncio.run(run())
    assert isinstance(info.value, CallRejected) and info.value.code() is grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("flaky_server", [(grpc.StatusCode.INTERNAL, 1)], indirect=True)
def test_another_code_raises_call_failed_naming_it(flaky_server):
    _, address = flaky_server
    with RewardClient(address, timeout_s=30) as client, pytest.raises(CallFailed) as info:
        client.score([{"id": "a", "task": "gsm8k", "completion": "#### 1", "reference": "1"}])
    assert not isinstance(info.value, CallRejected | CallTimedOut)
    assert info.value.code() is grpc.StatusCode.INTERNAL and info.value.details() == "injected failure"
    assert str(info.value) == f"the reward service at {address} failed the call: INTERNAL: injected failure"


@pytest.fixture
def flaky_server(request):
    servicer = FlakyServicer(*request.param)
    with fake_grpc_server(reward_pb2_grpc.add_RewardServiceServicer_to_server, servicer) as address:
        yield servicer, address


# --- the sandbox client -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def sandbox():
    settings = dict(port=0, workers=1, max_wall_s=60.0, grace_s=0.0)
    server = create_server(dataclass_from_values(SandboxServerConfig, settings))
    yield server
    server.stop(0)


SPIN = ex.ExecutionRequest(code="while True:\n    pass\n", style=ex.TestStyle.STDIO, id="spin",
                           limits=ex.Limits(wall_s=30, cpu_s=30), cases=(ex.TestCase(expected_stdout="1\n"),))
COBOL = ex.ExecutionRequest(code="print(1)", style=ex.TestStyle.STDIO, language="cobol",
                            cases=(ex.TestCase(expected_stdout="1\n"),))


def test_a_sandbox_call_past_its_deadline_raises_call_timed_out(sandbox):
    with SandboxClient(sandbox.address, timeout_s=SHORT_S) as client, pytest.raises(CallTimedOut) as info:
        client.execute(SPIN)
    assert_timed_out(info.value, sandbox.address, "sandbox service")


def test_an_async_sandbox_refusal_raises_call_rejected(sandbox):
    async def run():
        async with AsyncSandboxClient(sandbox.address, timeout_s=30) as client:
            await client.execute_batch([COBOL])

    with pytest.raises(CallRejected) as info:
        asyncio.run(run())
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "cobol" in info.value.details()
    assert f"the sandbox service at {sandbox.address} refused the request as invalid" in str(info.value)


# --- the reward-model client ------------------------------------------------------------------
class _SilentRewardModel(reward_model_pb2_grpc.RewardModelServiceServicer):
    """Never answers Score before the caller gives up; refuses ScoreSteps as a full queue."""

    def __init__(self) -> None:
        self.stop = threading.Event()

    def Score(self, request, context):  # noqa: N802 - the gRPC method name
        context.add_callback(self.stop.set)
        self.stop.wait(60)
        context.abort(grpc.StatusCode.INTERNAL, "should not be reached")

    def ScoreSteps(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "queue full (8 waiting)")


def test_a_reward_model_call_past_its_deadline_raises_call_timed_out():
    with fake_grpc_server(reward_model_pb2_grpc.add_RewardModelServiceServicer_to_server,
                          _SilentRewardModel()) as address, \
            RewardModelClient(address, timeout_s=SHORT_S) as rm, pytest.raises(CallTimedOut) as info:
        rm.score([("q", "a")])
    assert_timed_out(info.value, address, "reward-model service")


def test_an_async_reward_model_refusal_raises_call_rejected():
    async def run(address):
        async with AsyncRewardModelClient(address, timeout_s=30) as rm:
            await rm.score_steps([("q", ["a"])])

    with fake_grpc_server(reward_model_pb2_grpc.add_RewardModelServiceServicer_to_server,
                          _SilentRewardModel()) as address, pytest.raises(CallRejected) as info:
        asyncio.run(run(address))
    assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert str(info.value) == (f"the reward-model service at {address} is full (its queue or this client's share): "
                               "retry later or send less at once (RESOURCE_EXHAUSTED): queue full (8 waiting)")
