"""A failed call raises the clients' own exception in our words, still a ``grpc.RpcError`` with the server's code.

Real servers on loopback: the reward server (a ``sleep`` rollout far longer than the call's deadline,
a request above its per-call limit), the sandbox server (a program that spins far longer than the call's
deadline, an unknown language), hand-written reward-model servicers (one that never answers, one that
refuses), environment servers whose ``list_environments`` is slow, broken or gone, and reward and environment
servers that want a bearer token (UNAUTHENTICATED for none or a wrong one). Nothing here measures time: the
assertions are on the error's type, code and words.
"""

from __future__ import annotations

import asyncio
import os
import threading

import grpc
import pytest

import reward_core.sandbox_contract as ex
from reward.v1 import reward_model_pb2_grpc, reward_pb2_grpc
from reward_core.channel_config import ChannelConfig
from reward_core.channel_security import ClientSecurity
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
    ServerUnavailable,
)
from reward_core.clients.environment import BlockingEnvironmentClient, EnvironmentClient
from reward_core.config_flags import dataclass_from_values
from reward_core.contract import Rollout
from reward_core.server_security import ServerSecurityConfig
from sandbox.server import SandboxServerConfig, create_server
from tests.integration.conftest import fake_grpc_server, start_server
from tests.integration.episode_hosts import ScriptedHost, serving
from tests.integration.episode_hosts import start_server as start_env_server
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


# --- UNAUTHENTICATED: a server that wants a token, a client without it or with a wrong one ----------
TOKEN = "call-errors-token-7d2e"
HOW_TO = ("did not accept the credentials: check the token (REWARD_SUITE_AUTH_TOKEN / ClientSecurity(auth_token=...)) "
          "(UNAUTHENTICATED): ")


@pytest.fixture
def token_file(tmp_path, monkeypatch):
    """A token file for the server; the clients get their token from the test, never from the caller's shell."""
    for name in [n for n in os.environ if n.startswith("REWARD_SUITE_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return str(path)


def with_token(token: str) -> ChannelConfig:
    return ChannelConfig(security=ClientSecurity(auth_token=token))


def assert_unauthenticated(exc: BaseException, address: str, service: str, problem: str) -> None:
    assert isinstance(exc, CallRejected) and isinstance(exc, grpc.RpcError) and isinstance(exc, USER_ERRORS)
    assert exc.code() is grpc.StatusCode.UNAUTHENTICATED and problem in exc.details()
    message = str(exc)
    assert message.startswith(f"the {service} at {address} {HOW_TO}{problem}")
    assert "Bearer <token>" in message  # the server's own advice follows ours


@pytest.mark.parametrize(("token", "problem"), [
    ("", "this server requires a bearer token and the call carried none"),
    ("wrong-token", "the bearer token is not accepted"),
])
def test_a_reward_call_with_no_or_a_wrong_token_raises_call_rejected_saying_how_to_pass_it(token_file, token,
                                                                                          problem):
    server = start_server(workers=1, **{"security.auth_token_file": token_file})
    try:
        with RewardClient(server.address, timeout_s=30, channel=with_token(token)) as client, \
                pytest.raises(CallRejected) as info:
            client.list_tasks()
        with RewardClient(server.address, timeout_s=30, channel=with_token(TOKEN)) as client:
            assert "sleep" in {t.name for t in client.list_tasks()}  # the right token passes
    finally:
        server.stop(0)
    assert_unauthenticated(info.value, server.address, "reward service", problem)


# --- list_environments (the environment client's unary call) ------------------------------------
class _ListingHost(ScriptedHost):
    """``list_environments`` as told: "slow" (longer than any caller waits) or "broken" (a server bug)."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    async def list_environments(self):
        if self.mode == "slow":
            await asyncio.sleep(60)
        if self.mode == "broken":
            raise RuntimeError("the environment table is corrupt")
        return await super().list_environments()


def list_environments(address: str, **options):
    async def run():
        async with EnvironmentClient(address, **options) as host:
            return await host.list_environments()
    return asyncio.run(run())


def test_list_environments_past_its_deadline_raises_call_timed_out():
    with serving(_ListingHost("slow")) as server, pytest.raises(CallTimedOut) as info:
        list_environments(server.address, timeout_s=SHORT_S)
    assert_timed_out(info.value, server.address, "environment service")


def test_list_environments_on_a_server_bug_raises_call_failed_naming_it():
    with serving(_ListingHost("broken")) as server, pytest.raises(CallFailed) as info:
        list_environments(server.address, timeout_s=30)
    assert not isinstance(info.value, CallRejected | CallTimedOut) and info.value.code() is grpc.StatusCode.INTERNAL
    assert str(info.value).startswith(f"the environment service at {server.address} failed the call: INTERNAL: "
                                      "ListEnvironments failed inside the server (RuntimeError: the environment "
                                      "table is corrupt)")


def test_list_environments_on_a_server_that_went_away_raises_server_unavailable():
    with serving() as server:
        address = server.address

        async def run():
            async with EnvironmentClient(address, timeout_s=600) as host:
                assert [info.name for info in await host.list_environments()] == ["adder"]
                await asyncio.to_thread(server.stop)
                with pytest.raises(ServerUnavailable) as info:
                    await host.list_environments()
            return info.value

        gone = asyncio.run(run())
    assert isinstance(gone, grpc.RpcError) and gone.code() is grpc.StatusCode.UNAVAILABLE
    assert str(gone).startswith(f"the environment service at {address} is unavailable: ")


@pytest.mark.parametrize(("token", "problem"), [
    ("", "this server requires a bearer token and the call carried none"),
    ("wrong-token", "the bearer token is not accepted"),
])
def test_list_environments_with_no_or_a_wrong_token_raises_call_rejected(token_file, token, problem):
    server = start_env_server(ScriptedHost(), security=ServerSecurityConfig(auth_token_file=token_file))
    try:
        with pytest.raises(CallRejected) as info:
            list_environments(server.address, timeout_s=30, channel=with_token(token))
        with BlockingEnvironmentClient(server.address, timeout_s=30, channel=with_token(token)) as host, \
                pytest.raises(CallRejected) as blocking:
            host.list_environments()
        assert [i.name for i in list_environments(server.address, timeout_s=30, channel=with_token(TOKEN))] == \
            ["adder"]
    finally:
        server.stop()
    for error in (info.value, blocking.value):
        assert_unauthenticated(error, server.address, "environment service", problem)
