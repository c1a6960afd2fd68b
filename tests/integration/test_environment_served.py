"""Episodes served by ``reward-service serve --serve-environments``: the real session manager behind the
EnvironmentService stream, reached through EnvironmentClient.

In-process servers (port 0) for the episode itself, health and reflection, and a client that goes
away; a server process of its own for SIGTERM (running episodes end typed, nothing left running)
and SIGKILL (the session is lost, typed).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from reward.v1 import environment_pb2 as pb
from reward.v1 import environment_pb2_grpc
from reward_core.clients.environment import EnvironmentClient
from reward_core.episode_contract import EpisodeError, EpisodeSpec, EpisodeStatus, ToolCall, Trajectory
from reward_core.ports import free_port
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.hosting import create_server, sessions_of
from reward_service.router import server as router_server
from reward_service.router.config import ScorerConfig, ServerConfig

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 60.0
SPEC = EpisodeSpec("arithmetic_tools", split="train", index=0, seed=1)
SMALL = ("--workers", "1", "--env-calculator-workers", "1", "--env-verify-workers", "1",
         "--env-sandbox-concurrency", "1")


@pytest.fixture(scope="module")
def server():
    small = EnvironmentsConfig(calculator_workers=1, verify_workers=1, sandbox_concurrency=1)
    config = ServerConfig(port=0, serve_environments=True, scorer=ScorerConfig(workers=1), environments=small)
    server = create_server(config)
    yield server
    server.stop(1.0)


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.02)


def product_of(start) -> str:
    a, b = re.search(r"(\d+) \* (\d+)", start.messages[-1]["content"]).groups()
    return f"{a} * {b}"


def test_an_arithmetic_episode_uses_the_calculator_and_is_verified(server):
    async def scenario():
        async with EnvironmentClient(server.address) as client:
            start = await client.open(SPEC)
            assert {t.name for t in start.tools} == {"calculator", "submit_answer"}
            product = await client.call_tool(start.session_id, ToolCall("calculator", {"expression": product_of(start)},
                                                                        "c1"))
            assert product.call_id == "c1" and product.status is EpisodeStatus.RUNNING
            a, b = product_of(start).split(" * ")
            assert product.output.strip() == str(int(a) * int(b))
            submitted = await client.call_tool(start.session_id, ToolCall("submit_answer", {"answer": product.output},
                                                                          "c2"))
            assert submitted.finished and submitted.outcome.status is EpisodeStatus.FINISHED
            assert submitted.outcome.reward == 1.0
            assert sessions_of(server).session_count() == 1  # ended, held until closed
            await client.close(start.session_id)
            assert sessions_of(server).session_count() == 0
    asyncio.run(scenario())


def test_list_environments_and_score_trajectory_reach_the_session_manager(server):
    async def scenario():
        async with EnvironmentClient(server.address) as client:
            infos = {info.name: info for info in await client.list_environments()}
            start = await client.open(SPEC)
            await client.close(start.session_id)
            a, b = product_of(start).split(" * ")
            messages = [*start.messages, {"role": "assistant", "content": str(int(a) * int(b))}]
            right = await client.score_trajectory(Trajectory("arithmetic_tools", {}, messages, id="t1", seed=1,
                                                             split="train", index=0))
            wrong = await client.score_trajectory(Trajectory("arithmetic_tools", {}, [*messages[:-1], {
                "role": "assistant", "content": "7"}], id="t2", seed=1, split="train", index=0))
            return infos, right, wrong
    infos, right, wrong = asyncio.run(scenario())
    assert set(infos["arithmetic_tools"].splits) == {"train", "test"}
    assert {t.name for t in infos["arithmetic_tools"].tools} == {"calculator", "submit_answer"}
    assert (right.id, right.status, right.reward) == ("t1", EpisodeStatus.FINISHED, 1.0)
    assert (wrong.id, wrong.status, wrong.reward) == ("t2", EpisodeStatus.FINISHED, 0.0)


def test_the_environment_service_has_a_health_entry_and_is_reflected(server):
    with grpc.insecure_channel(server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="reward.v1.EnvironmentService"), timeout=HANG_GUARD_S)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                                  timeout=HANG_GUARD_S)
        names = {s.name for reply in replies for s in reply.list_services_response.service}
        assert {"reward.v1.EnvironmentService", "reward.v1.RewardService"} <= names


def test_the_routers_own_server_refuses_serve_environments_without_the_environments(server):
    # The router knows no environments (they sit above it): asked to serve them, its create_server
    # refuses rather than start without the EnvironmentService.
    config = ServerConfig(port=0, serve_environments=True, serve_sandbox=False)
    with pytest.raises(ValueError, match="environments.hosting"):
        router_server.create_server(config, scorer=server.scorer)
    plain = router_server.create_server(dataclasses.replace(config, serve_environments=False), scorer=server.scorer)
    try:
        assert plain.hosted == ()
        with pytest.raises(ValueError, match="serves no environments"):
            sessions_of(plain)
    finally:
        plain.stop(0)


def test_a_client_that_goes_away_mid_episode_leaves_no_session(server):
    with grpc.insecure_channel(server.address) as channel:
        stub = environment_pb2_grpc.EnvironmentServiceStub(channel)
        requests = iter([pb.EpisodeRequest(open=pb.EpisodeSpec(environment="arithmetic_tools", split="train",
                                                               index=1))])
        replies = stub.Episode(_then_hang(requests))
        assert next(replies).WhichOneof("kind") == "started"
        assert sessions_of(server).session_count() == 1
    # the channel is closed: the stream is cancelled, the server releases its session
    wait_for(lambda: sessions_of(server).session_count() == 0, "the session of the cancelled stream to be closed")


def _then_hang(requests):
    yield from requests
    time.sleep(HANG_GUARD_S)  # the stream stays open (not half-closed) until the channel closes


def children_of(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def serve_process(log: Path, *flags: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "reward_service", "serve", "--port", str(port),
                                 "--serve-environments", *SMALL, *flags], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT)
    address = f"127.0.0.1:{port}"
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest(service="reward.v1.EnvironmentService")
        deadline = time.monotonic() + HANG_GUARD_S
        while True:
            try:
                if health.Check(request, timeout=1).status == health_pb2.HealthCheckResponse.SERVING:
                    return proc, address
            except grpc.RpcError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, \
                f"the server did not start: {log.read_text()[-3000:]}"
            time.sleep(0.1)


@pytest.mark.slow
def test_sigterm_ends_running_episodes_typed_and_leaves_nothing_running(tmp_path):
    log = tmp_path / "serve.log"
    proc, address = serve_process(log, "--grace-s", "2")
    try:
        async def scenario():
            async with EnvironmentClient(address) as client:
                start = await client.open(SPEC)
                await client.call_tool(start.session_id, ToolCall("calculator", {"expression": "2 * 3"}))
                workers = children_of(proc.pid)
                assert workers, "the server runs its worker processes"
                proc.send_signal(signal.SIGTERM)
                assert await asyncio.to_thread(proc.wait, HANG_GUARD_S) == 0, log.read_text()[-3000:]
                with pytest.raises(EpisodeError) as ended:
                    await client.call_tool(start.session_id, ToolCall("calculator", {"expression": "2 * 3"}))
                assert ended.value.status is EpisodeStatus.SESSION_LOST, (ended.value, log.read_text()[-3000:])
                return workers
        workers = asyncio.run(scenario())
        wait_for(lambda: not any(alive(pid) for pid in workers), "the server's workers to exit")
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_a_killed_server_process_ends_its_sessions_with_session_lost(tmp_path):
    proc, address = serve_process(tmp_path / "serve.log")
    try:
        async def scenario():
            async with EnvironmentClient(address) as client:
                start = await client.open(SPEC)
                os.kill(proc.pid, signal.SIGKILL)
                await asyncio.to_thread(proc.wait)
                with pytest.raises(EpisodeError) as lost:
                    await client.call_tool(start.session_id, ToolCall("calculator", {"expression": "2 * 3"}))
                assert lost.value.status is EpisodeStatus.SESSION_LOST and address in str(lost.value)
        asyncio.run(scenario())
    finally:
        for pid in children_of(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
