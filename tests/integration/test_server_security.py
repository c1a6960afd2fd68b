"""TLS, bearer tokens and the bind policy on real servers on loopback (port 0).

One Scorer (one worker process) serves every reward server here; the token is read from a
file, the way a container mounts a secret.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

import reward_core.sandbox_contract as ex
from reward.v1 import reward_model_pb2 as rm_pb
from reward.v1 import reward_model_pb2_grpc, reward_pb2_grpc
from reward.v1 import reward_pb2 as pb
from reward_core.channel_security import ClientSecurity
from reward_core.clients import EndpointUnreachable
from reward_core.server_security import ServerSecurityConfig
from reward_service.router.config import ScorerConfig, ServerConfig
from reward_service.router.metrics import RewardMetrics
from reward_service.router.scoring import Scorer
from reward_service.router.server import create_server
from sandbox.remote_executor import RemoteExecutor
from sandbox.server import SandboxServerConfig
from sandbox.server import create_server as create_sandbox_server
from tests.tls_fixtures import Pki, make_test_pki
from trainer_client import AsyncRewardClient, ChannelConfig, RewardClient

TOKEN = "test-token-5f1c2a"
ROLLOUT = {"id": "a", "task": "gsm8k", "completion": "2 + 2 = 4\n#### 4", "reference": "4"}
SERVING = health_pb2.HealthCheckResponse.SERVING


@pytest.fixture(autouse=True)
def no_suite_environment(monkeypatch):
    """Clients and servers here get their security from the test, never from the caller's shell."""
    for name in [n for n in os.environ if n.startswith("REWARD_SUITE_")]:
        monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def token_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("secrets") / "token"
    path.write_text(TOKEN + "\n")
    return path


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return make_test_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def scorer():
    with Scorer(ScorerConfig(workers=1)) as shared:
        yield shared


def _reward_server(scorer, security: ServerSecurityConfig):
    return create_server(ServerConfig(host="127.0.0.1", port=0, grace_s=0, security=security), scorer=scorer)


@pytest.fixture(scope="module")
def token_server(scorer, token_file):
    server = _reward_server(scorer, ServerSecurityConfig(auth_token_file=str(token_file)))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def tls_server(scorer, token_file, pki):
    server = _reward_server(scorer, ServerSecurityConfig(tls_cert=str(pki.server_cert), tls_key=str(pki.server_key),
                                                         auth_token_file=str(token_file)))
    yield server
    server.stop(0)


@pytest.fixture
def plain_stub(token_server):
    with grpc.insecure_channel(token_server.address) as channel:
        yield reward_pb2_grpc.RewardServiceStub(channel)


def client(address: str, **security) -> RewardClient:
    return RewardClient(address, timeout_s=30, channel=ChannelConfig(security=ClientSecurity(**security)))


def expect_status(call, code: grpc.StatusCode, *fragments: str) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == code, info.value.details()
    for fragment in fragments:
        assert fragment in (info.value.details() or ""), info.value.details()
    return info.value.details() or ""


# --- the token --------------------------------------------------------------------------------------

def test_a_call_without_the_token_is_unauthenticated_and_says_how_to_pass_it(plain_stub):
    expect_status(lambda: plain_stub.ListTasks(pb.ListTasksRequest(), timeout=10),
                  grpc.StatusCode.UNAUTHENTICATED, "authorization: Bearer <token>", "REWARD_SUITE_AUTH_TOKEN")


def test_a_wrong_token_is_unauthenticated(plain_stub):
    details = expect_status(
        lambda: plain_stub.ListTasks(pb.ListTasksRequest(), timeout=10, metadata=[("authorization", "Bearer nope")]),
        grpc.StatusCode.UNAUTHENTICATED, "not accepted")
    assert TOKEN not in details


def test_a_stream_without_the_token_is_unauthenticated(plain_stub):
    request = pb.ScoreRequest(request_id="s", rollouts=[pb.Rollout(id="a", task="gsm8k", completion="#### 4")])
    expect_status(lambda: list(plain_stub.ScoreStream(iter([request]), timeout=10)), grpc.StatusCode.UNAUTHENTICATED)


def test_the_right_token_is_accepted_through_the_client(token_server):
    with client(token_server.address, auth_token=TOKEN) as c:
        [result] = c.score([ROLLOUT])
    assert (result.status.name, result.score) == ("OK", 1.0)


def test_the_async_client_sends_the_token_on_plaintext(token_server):
    async def run():
        channel = ChannelConfig(security=ClientSecurity(auth_token=TOKEN))
        async with AsyncRewardClient(token_server.address, timeout_s=30, channel=channel) as c:
            return await c.score([ROLLOUT]), await c.list_tasks()

    results, tasks = asyncio.run(run())
    assert results[0].score == 1.0 and "gsm8k" in [t.name for t in tasks]


def test_the_client_takes_the_token_from_the_environment(token_server, monkeypatch):
    monkeypatch.setenv("REWARD_SUITE_AUTH_TOKEN", TOKEN)
    with RewardClient(token_server.address, timeout_s=30) as c:
        assert "gsm8k" in [t.name for t in c.list_tasks()]


def test_health_answers_without_a_token(token_server):
    with grpc.insecure_channel(token_server.address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert reply.status == SERVING


def test_reflection_answers_without_a_token(token_server):
    with grpc.insecure_channel(token_server.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        [reply] = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                            timeout=10)
    assert "reward.v1.RewardService" in [s.name for s in reply.list_services_response.service]


# --- TLS --------------------------------------------------------------------------------------------

def test_tls_with_the_test_ca_and_the_token_works_through_the_client(tls_server, pki):
    with client(tls_server.address, tls_ca=str(pki.ca), auth_token=TOKEN) as c:
        [result] = c.score([ROLLOUT])
    assert result.score == 1.0


def test_tls_with_localhost_as_the_name_works_for_the_async_client(tls_server, pki):
    async def run():
        security = ClientSecurity(tls_ca=str(pki.ca), auth_token=TOKEN)
        async with AsyncRewardClient(f"localhost:{tls_server.port}", timeout_s=30,
                                     channel=ChannelConfig(security=security)) as c:
            return await c.list_tasks()

    assert "gsm8k" in [t.name for t in asyncio.run(run())]


def test_tls_without_the_token_is_unauthenticated(tls_server, pki):
    with client(tls_server.address, tls_ca=str(pki.ca)) as c:
        expect_status(c.list_tasks, grpc.StatusCode.UNAUTHENTICATED)


def test_a_plaintext_client_cannot_talk_to_a_tls_server(tls_server):
    with RewardClient(tls_server.address, timeout_s=5, connect_timeout_s=2,
                      channel=ChannelConfig(wait_for_ready=False, security=ClientSecurity(auth_token=TOKEN))) as c:
        with pytest.raises(EndpointUnreachable, match="TLS/plaintext mismatch"):
            c.list_tasks()


def test_a_client_that_does_not_trust_the_ca_is_refused(tls_server):
    with RewardClient(tls_server.address, timeout_s=5, connect_timeout_s=2,
                      channel=ChannelConfig(wait_for_ready=False, security=ClientSecurity(tls=True))) as c:
        with pytest.raises(EndpointUnreachable, match="TLS/plaintext mismatch"):
            c.list_tasks()


def test_mutual_tls_accepts_a_client_certificate_and_refuses_none(scorer, pki):
    server = _reward_server(scorer, ServerSecurityConfig(tls_cert=str(pki.server_cert), tls_key=str(pki.server_key),
                                                         tls_client_ca=str(pki.ca)))
    try:
        with client(server.address, tls_ca=str(pki.ca), tls_client_cert=str(pki.client_cert),
                    tls_client_key=str(pki.client_key)) as c:
            assert "gsm8k" in [t.name for t in c.list_tasks()]
        no_cert = ChannelConfig(wait_for_ready=False, security=ClientSecurity(tls_ca=str(pki.ca)))
        with RewardClient(server.address, timeout_s=5, channel=no_cert, connect_timeout_s=2) as c:
            with pytest.raises(EndpointUnreachable, match="TLS/plaintext mismatch"):
                c.list_tasks()
    finally:
        server.stop(0)


# --- the sandbox service, and the router's channel to it -----------------------------------------------

class AcceptingExecutor:
    """Stands in for a sandbox backend: every program passes (this file tests the door, not the sandbox)."""

    name = "fake"

    def execute(self, request: ex.ExecutionRequest, cancel: ex.Cancellation | None = None) -> ex.ExecutionResult:
        return ex.ExecutionResult(id=request.id, verdict=ex.Verdict.ACCEPTED, backend=self.name)

    def execute_batch(self, requests):
        return [self.execute(r) for r in requests]

    def close(self) -> None:
        pass


def test_the_sandbox_service_needs_the_token_and_the_remote_executor_sends_it(token_file):
    config = SandboxServerConfig(port=0, workers=1, grace_s=0.0,
                                 security=ServerSecurityConfig(auth_token_file=str(token_file)))
    server = create_sandbox_server(config, executor=AcceptingExecutor())
    request = ex.ExecutionRequest(code="def add(a, b):\n    return a + b\n", style=ex.TestStyle.HUMANEVAL, id="p",
                                  check_code="def check(candidate):\n    assert candidate(1, 2) == 3\n",
                                  entry_point="add")
    with_token = RemoteExecutor(server.address, call_timeout_s=30, security=ClientSecurity(auth_token=TOKEN))
    without = RemoteExecutor(server.address, call_timeout_s=30, security=ClientSecurity())
    try:
        assert with_token.execute(request).verdict == ex.Verdict.ACCEPTED
        refused = without.execute(request)
    finally:
        with_token.close()
        without.close()
        server.stop(0)
    assert refused.verdict == ex.Verdict.SANDBOX_ERROR and "UNAUTHENTICATED" in refused.error


# --- the reward-model server: Reload needs the token and stays under its root ------------------------------

@pytest.fixture(scope="module")
def rm_server(tmp_path_factory, token_file):
    from reward_service.rm.config import RewardModelServerConfig
    from reward_service.rm.rm_server import create_rm_server
    from tests.rm_fixtures import make_tiny_checkpoint

    root = tmp_path_factory.mktemp("rm-root")
    checkpoint = make_tiny_checkpoint(root / "step_1", max_length=32)
    security = ServerSecurityConfig(auth_token_file=str(token_file))
    server = create_rm_server(RewardModelServerConfig(checkpoint=str(checkpoint), port=0, grace_s=0.0,
                                                      security=security))
    yield server
    server.stop(0)


@pytest.fixture
def rm_stub(rm_server):
    with grpc.insecure_channel(rm_server.address) as channel:
        yield reward_model_pb2_grpc.RewardModelServiceStub(channel)


AUTH = [("authorization", f"Bearer {TOKEN}")]


def test_reload_without_the_token_is_unauthenticated(rm_stub, rm_server):
    expect_status(lambda: rm_stub.Reload(rm_pb.ReloadRequest(checkpoint_path=rm_server.config.checkpoint), timeout=30),
                  grpc.StatusCode.UNAUTHENTICATED)


def test_reload_outside_the_checkpoint_root_is_permission_denied_naming_the_root(rm_stub, rm_server, tmp_path):
    root = str(Path(rm_server.config.checkpoint).resolve().parent)
    for path in (str(tmp_path), f"{root}/../elsewhere", "/etc"):
        expect_status(lambda path=path: rm_stub.Reload(rm_pb.ReloadRequest(checkpoint_path=path), timeout=30,
                                                       metadata=AUTH),
                      grpc.StatusCode.PERMISSION_DENIED, root)
    info = rm_stub.Info(rm_pb.InfoRequest(), timeout=10, metadata=AUTH)
    assert info.checkpoint == rm_server.config.checkpoint  # still serving what it started with


def test_the_rm_task_reaches_a_token_protected_rm_server_with_the_environment_token(rm_server, monkeypatch):
    from reward_service.task_api import TaskInput
    from reward_service.tasks.rm_task import RewardModelTask

    monkeypatch.setenv("REWARD_SUITE_AUTH_TOKEN", TOKEN)
    [outcome] = RewardModelTask(endpoint=rm_server.address).score_batch([TaskInput("4", {}, "What is 2+2?")])
    assert outcome.components["rm"] == outcome.score


# --- the bind policy, from the command line -----------------------------------------------------------

@pytest.mark.parametrize("command", [["reward_service", "serve", "--workers", "1"],
                                     ["reward_service", "serve-rm", "--checkpoint", "/nonexistent/rm"],
                                     ["sandbox", "serve", "--workers", "1"]], ids=["reward", "rm", "sandbox"])
def test_a_non_loopback_bind_without_protection_exits_with_the_three_ways_out(command):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REWARD_SUITE_", "REWARD_SERVICE_", "SANDBOX_"))}
    proc = subprocess.run([sys.executable, "-m", *command, "--host", "0.0.0.0", "--port", "0"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr
    assert "refusing to listen on '0.0.0.0'" in proc.stderr
    for way_out in ("--tls-cert", "--auth-token-file", "--insecure"):
        assert way_out in proc.stderr


def test_metrics_listen_on_loopback_unless_told_otherwise():
    metrics = RewardMetrics()
    metrics.serve_http(0)
    try:
        assert metrics._endpoint.bound_host == "127.0.0.1"
    finally:
        metrics.close()
