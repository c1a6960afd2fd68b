"""The EnvironmentService over real gRPC servers on loopback: one bidirectional stream per episode.

The servicer runs over a scripted EpisodeHost (tests/integration/episode_hosts.py) whose sessions
the tests observe, so "the server released the session" is checked on the server's own state.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from reward.v1 import environment_pb2 as pb
from reward.v1 import environment_pb2_grpc
from reward_core.clients.environment import BlockingEnvironmentClient, EnvironmentClient
from reward_core.clients.errors import EndpointUnreachable, ServerUnavailable
from reward_core.episode_contract import (
    EpisodeError,
    EpisodeHost,
    EpisodeSpec,
    EpisodeSpecError,
    EpisodeStatus,
    ToolCall,
    Trajectory,
)
from reward_core.ports import free_port
from tests.integration.episode_hosts import INFO, ScriptedHost, serving

ROOT = Path(__file__).resolve().parents[2]
SPEC = EpisodeSpec("adder", row={"a": 20, "b": 22}, seed=7)
#: Bounds a wait for something that happens promptly, so a bug fails the test instead of hanging it.
HANG_GUARD_S = 30.0


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.01)


def test_the_client_is_an_episode_host():
    async def scenario():
        client = EnvironmentClient("127.0.0.1:1", connect_timeout_s=1)
        assert isinstance(client, EpisodeHost)
        await client.close_client()
    asyncio.run(scenario())


def test_a_full_episode_runs_over_one_stream_with_results_in_call_order():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                start = await client.open(SPEC)
                assert start.messages == ({"role": "user", "content": "20 + 22?"},)
                assert [t.name for t in start.tools] == ["add", "echo", "block", "submit"]
                assert start.tools[0].parameters["properties"]["a"] == {"type": "integer"}
                calls = [ToolCall("add", {"a": 20, "b": i}, call_id=f"c{i}") for i in range(5)]
                results = [await client.call_tool(start.session_id, c) for c in calls]
                assert [(r.call_id, r.output, r.reward) for r in results] == [
                    (f"c{i}", str(20 + i), 0.1) for i in range(5)]
                assert results[0].metadata == {"args": {"a": 20, "b": 0}}  # ints stay ints through JSON text
                state = await client.state(start.session_id)
                assert (state.status, state.turns) == (EpisodeStatus.RUNNING, 5)
                outcome = await client.finish(start.session_id, "42")
                assert (outcome.status, outcome.reward, outcome.components) == (EpisodeStatus.FINISHED, 1.0,
                                                                                {"correct": 1.0})
                assert outcome.step_rewards == (0.1,) * 5 and outcome.session_id == start.session_id
                await client.close(start.session_id)
                return start.session_id
        session_id = asyncio.run(scenario())
        assert server.host.released == [session_id] and not server.host.sessions


def test_a_submitting_tool_call_carries_the_outcome_and_later_calls_get_the_ended_status():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                start = await client.open(SPEC)
                result = await client.call_tool(start.session_id, ToolCall("submit", {"answer": 41}))
                assert result.finished and result.outcome.status is EpisodeStatus.FINISHED
                assert result.outcome.reward == 0.0  # a wrong answer is scored 0, not unscored
                with pytest.raises(EpisodeError) as ended:
                    await client.call_tool(start.session_id, ToolCall("echo"))
                assert ended.value.status is EpisodeStatus.FINISHED
                # the stream stays usable after a typed error
                assert (await client.state(start.session_id)).outcome.reward == 0.0
        asyncio.run(scenario())


def test_step_rewards_keep_none_for_steps_without_one():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                start = await client.open(SPEC)
                await client.call_tool(start.session_id, ToolCall("echo", {"x": [1, "two"]}))
                await client.call_tool(start.session_id, ToolCall("add", {"a": 1, "b": 2}))
                return await client.finish(start.session_id)
        outcome = asyncio.run(scenario())
        assert outcome.step_rewards == (None, 0.1) and outcome.reward == 0.0


def test_close_releases_the_session_on_the_server_and_is_idempotent():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                start = await client.open(SPEC)
                assert list(server.host.sessions) == [start.session_id]
                await client.close(start.session_id)
                assert server.host.released == [start.session_id]  # released before close returned
                await client.close(start.session_id)
                with pytest.raises(EpisodeError) as lost:
                    await client.call_tool(start.session_id, ToolCall("echo"))
                assert lost.value.status is EpisodeStatus.SESSION_LOST
                assert client.session_ids == []
        asyncio.run(scenario())
        wait_for(lambda: server.servicer.open_streams == 0, "the server's stream to end")


def test_leaving_the_client_closes_every_session_it_holds():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                return [(await client.open(SPEC)).session_id for _ in range(3)]
        ids = asyncio.run(scenario())
        assert sorted(server.host.released) == sorted(ids) and not server.host.sessions


def test_a_client_cancelled_mid_call_has_its_session_closed_on_the_server():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                start = await client.open(SPEC)
                call = asyncio.create_task(client.call_tool(start.session_id, ToolCall("block")))
                await asyncio.to_thread(server.host.blocked.wait, HANG_GUARD_S)
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
                assert client.session_ids == []
                return start.session_id
        session_id = asyncio.run(scenario())
        assert server.host.wait_released(session_id, HANG_GUARD_S)


def test_closing_a_session_with_a_call_in_flight_ends_the_call_and_releases_the_session():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                start = await client.open(SPEC)
                call = asyncio.create_task(client.call_tool(start.session_id, ToolCall("block")))
                await asyncio.to_thread(server.host.blocked.wait, HANG_GUARD_S)
                await client.close(start.session_id)
                with pytest.raises(EpisodeError) as closed:
                    await call
                assert closed.value.status is EpisodeStatus.SESSION_LOST
                return start.session_id
        session_id = asyncio.run(scenario())
        assert server.host.wait_released(session_id, HANG_GUARD_S)


def test_a_client_process_killed_mid_episode_has_its_session_closed_on_the_server():
    with serving() as server:
        code = ("import sys, time\n"
                "from reward_core.clients.environment import BlockingEnvironmentClient\n"
                "from reward_core.episode_contract import EpisodeSpec\n"
                f"client = BlockingEnvironmentClient({server.address!r})\n"
                "print(client.open(EpisodeSpec('adder')).session_id, flush=True)\n"
                "time.sleep(600)\n")
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            session_id = proc.stdout.readline().strip()
            assert session_id in server.host.sessions
            proc.kill()
            proc.wait()
            assert server.host.wait_released(session_id, HANG_GUARD_S)
        finally:
            proc.kill()
            proc.wait()


def test_a_killed_server_ends_the_session_with_session_lost():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.integration.episode_hosts", "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("serving on")

        async def scenario():
            async with EnvironmentClient(f"127.0.0.1:{port}") as client:
                start = await client.open(SPEC)
                assert (await client.call_tool(start.session_id, ToolCall("add", {"a": 1, "b": 1}))).output == "2"
                proc.send_signal(signal.SIGKILL)
                await asyncio.to_thread(proc.wait)
                with pytest.raises(EpisodeError) as lost:
                    await client.call_tool(start.session_id, ToolCall("add", {"a": 1, "b": 1}))
                assert lost.value.status is EpisodeStatus.SESSION_LOST
                assert f"127.0.0.1:{port}" in str(lost.value)
                with pytest.raises(EpisodeError) as again:  # every later call too
                    await client.finish(start.session_id)
                assert again.value.status is EpisodeStatus.SESSION_LOST
                await client.close(start.session_id)  # a lost session closes without error
        asyncio.run(scenario())
    finally:
        proc.kill()
        proc.wait()


def test_a_stopping_server_ends_running_episodes_with_session_lost_and_refuses_new_ones():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                idle = await client.open(SPEC)
                busy = await client.open(SPEC)
                call = asyncio.create_task(client.call_tool(busy.session_id, ToolCall("block")))
                await asyncio.to_thread(server.host.blocked.wait, HANG_GUARD_S)
                await asyncio.to_thread(server.stop, 5.0)
                with pytest.raises(EpisodeError) as in_flight:
                    await call
                assert in_flight.value.status is EpisodeStatus.SESSION_LOST
                assert "shutting down" in str(in_flight.value)
                with pytest.raises(EpisodeError) as waiting:
                    await client.call_tool(idle.session_id, ToolCall("echo"))
                assert waiting.value.status is EpisodeStatus.SESSION_LOST
                return idle.session_id, busy.session_id
        ids = asyncio.run(scenario())
        assert sorted(server.host.released) == sorted(ids) and not server.host.sessions


def test_an_open_waiting_for_admission_when_the_server_stops_is_refused_unavailable():
    host = ScriptedHost()
    host.hold_opens = True
    with serving(host) as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                opening = asyncio.create_task(client.open(SPEC))
                await asyncio.to_thread(host.open_waiting.wait, HANG_GUARD_S)
                await asyncio.to_thread(server.stop, 5.0)
                with pytest.raises(ServerUnavailable):
                    await opening
        asyncio.run(scenario())
        assert host.open_cancelled.is_set() and not host.sessions


def test_a_draining_server_refuses_new_episodes_unavailable():
    with serving() as server:
        server.servicer.begin_drain()

        async def scenario():
            async with EnvironmentClient(server.address) as client:
                with pytest.raises(ServerUnavailable) as refused:
                    await client.open(SPEC)
                assert "draining" in str(refused.value) and server.address in str(refused.value)
        asyncio.run(scenario())
        assert not server.host.sessions


def test_an_admission_refusal_is_typed_with_its_retry_hint():
    host = ScriptedHost()
    host.full = True
    with serving(host) as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                with pytest.raises(EpisodeError) as refused:
                    await client.open(SPEC)
                assert (refused.value.status, refused.value.retry_after_s) == (EpisodeStatus.REFUSED, 2.0)
                assert client.session_ids == []
        asyncio.run(scenario())
        wait_for(lambda: server.servicer.open_streams == 0, "the server's stream to end")


def test_an_unusable_request_is_a_spec_error_on_the_stream_and_on_score_trajectory():
    host = ScriptedHost()
    with serving(host) as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                with pytest.raises(EpisodeSpecError, match="no environment 'nope'"):
                    await client.open(EpisodeSpec("nope"))
                with pytest.raises(EpisodeSpecError, match="no environment 'nope'"):
                    await client.score_trajectory(Trajectory("nope", {}, []))
                host.full = True
                with pytest.raises(EpisodeError) as refused:
                    await client.score_trajectory(Trajectory("adder", {"a": 1, "b": 1}, []))
                assert (refused.value.status, refused.value.retry_after_s) == (EpisodeStatus.REFUSED, 1.5)
                assert not isinstance(refused.value, EpisodeSpecError)
        asyncio.run(scenario())


def test_a_request_out_of_protocol_ends_the_stream_invalid_argument():
    with serving() as server, grpc.insecure_channel(server.address) as channel:
        stub = environment_pb2_grpc.EnvironmentServiceStub(channel)
        replies = stub.Episode(iter([pb.EpisodeRequest(tool_call=pb.ToolCall(name="echo"))]), timeout=HANG_GUARD_S)
        with pytest.raises(grpc.RpcError) as bad:
            list(replies)
        assert bad.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "`open`" in bad.value.details()
        replies = stub.Episode(iter([pb.EpisodeRequest(open=pb.EpisodeSpec(environment="adder")),
                                     pb.EpisodeRequest(tool_call=pb.ToolCall(name="echo", arguments_json="{1"))]),
                               timeout=HANG_GUARD_S)
        with pytest.raises(grpc.RpcError) as malformed:
            list(replies)
        assert malformed.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "arguments_json" in malformed.value.details()
        assert server.host.wait_released("s0", HANG_GUARD_S)


def test_list_environments_and_score_trajectory():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address) as client:
                infos = await client.list_environments()
                score = await client.score_trajectory(Trajectory(
                    "adder", {"a": 1, "b": 2}, [{"role": "user", "content": "1 + 2?"},
                                                {"role": "assistant", "content": "3"}], id="t1"))
                return infos, score
        infos, score = asyncio.run(scenario())
        assert infos == [INFO]
        assert (score.id, score.status, score.reward, score.turn_rewards) == ("t1", EpisodeStatus.FINISHED, 1.0,
                                                                              {1: 0.5})


def test_the_blocking_client_runs_an_episode():
    with serving() as server, BlockingEnvironmentClient(server.address) as client:
        start = client.open(EpisodeSpec("adder", client_id="rank-3"))
        assert start.metadata == {"client": "rank-3"}
        assert client.call_tool(start.session_id, ToolCall("add", {"a": 2, "b": 3})).output == "5"
        assert client.finish(start.session_id, "5").reward == 1.0
        client.close(start.session_id)
        assert server.host.released == [start.session_id]


def test_an_unreachable_endpoint_fails_fast_naming_the_address():
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()

    async def scenario():
        async with EnvironmentClient(address, connect_timeout_s=HANG_GUARD_S) as client:
            with pytest.raises(EndpointUnreachable) as unreachable:
                await client.open(SPEC)
            assert address in str(unreachable.value) and "refused" in str(unreachable.value)
    asyncio.run(scenario())
    assert time.monotonic() - started < HANG_GUARD_S  # the refusal ended it, not the connect timeout


def test_the_server_names_the_client_from_its_metadata():
    with serving() as server:
        async def scenario():
            async with EnvironmentClient(server.address, client_id="trainer-0") as client:
                return await client.open(EpisodeSpec("adder"))
        assert asyncio.run(scenario()).metadata == {"client": "trainer-0"}
