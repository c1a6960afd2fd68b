"""OpenEnv at the HTTP door (``openenv_door.py``), driven by the ``openenv`` package's own clients (0.10.0).

``GenericEnvClient`` speaks the WebSocket protocol (reset/step/state); ``MCPToolClient`` opens a session
over HTTP ``/mcp`` (JSON-RPC), attaches its WebSocket to it and calls tools over HTTP; plain HTTP
``/reset``, ``/step``, ``/state`` keep the episode by ``session_id``. The scripted host
(``tests/scripted_episode_host.py``) checks each protocol property; the last tests run whole episodes on
the real session manager.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

pytest.importorskip("openenv")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from openenv.core.mcp_client import MCPToolClient  # noqa: E402
from websockets.asyncio.client import connect as ws_connect  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402

from reward_service.http_door import openenv_door  # noqa: E402
from reward_service.http_door.door import DoorConfig  # noqa: E402
from reward_service.http_door.upstream import UpstreamConfig  # noqa: E402
from tests.http_fixtures import serve_door_config  # noqa: E402
from tests.scripted_episode_host import ScriptedHost  # noqa: E402
from tests.session_manager_door import door_on_session_manager, settled  # noqa: E402

TOKEN = "openenv-token-7"


def serve(host: ScriptedHost, token: str = ""):
    return serve_door_config(DoorConfig(UpstreamConfig("127.0.0.1:1"), token=token), [openenv_door.routes],
                             episodes=host)


@pytest.fixture()
def door():
    host = ScriptedHost()
    with serve(host) as (url, _):
        yield f"{url}/openenv/arith", host


def call_tool(name: str, **arguments) -> dict:
    return {"type": "call_tool", "tool_name": name, "arguments": arguments}


def test_a_websocket_episode_with_the_generic_client(door):
    base, host = door

    async def episode():
        async with GenericEnvClient(base_url=base) as env:
            reset = await env.reset(split="train", index=2, seed=5)
            added = await env.step(call_tool("add", a=2, b=7))
            final = await env.step(call_tool("submit_answer", answer="9"))
            state = await env.state()
            return reset, added, final, state

    reset, added, final, state = asyncio.run(episode())
    assert reset.observation["messages"][-1]["content"] == "What is 2 + 7?" and not reset.done
    assert [t["name"] for t in reset.observation["tools"]][:2] == ["add", "submit_answer"]
    assert (added.observation["result"], added.reward, added.done) == ("9", None, False)
    assert (final.reward, final.done, final.metadata["episode_status"]) == (1.0, True, "FINISHED")
    assert state["episode_status"] == "FINISHED" and state["session_id"] == reset.metadata["session_id"]
    assert settled(lambda: host.closed == ["ep-0"])  # the connection's end closed its episode


def test_a_dropped_connection_closes_its_episode(door):
    base, host = door

    async def drop():
        async with ws_connect(base.replace("http://", "ws://") + "/ws") as socket:
            await socket.send(json.dumps({"type": "reset", "data": {"index": 1}}))
            answer = json.loads(await socket.recv())
        return answer  # the socket closes without a close message

    assert asyncio.run(drop())["type"] == "observation"
    assert settled(lambda: host.closed == ["ep-0"])


def test_a_final_message_ends_and_verifies_the_episode(door):
    base, _ = door

    async def episode():
        async with GenericEnvClient(base_url=base) as env:
            await env.reset(index=1)
            return await env.step({"type": "message", "content": "8"})

    final = asyncio.run(episode())
    assert (final.done, final.reward, final.metadata["scored"]) == (True, 0.0, True)


def test_an_unscored_tool_failure_has_no_reward_and_a_tool_error(door):
    base, _ = door

    async def episode():
        async with GenericEnvClient(base_url=base) as env:
            await env.reset(index=0)
            return await env.step(call_tool("flaky"))

    failed = asyncio.run(episode())
    assert (failed.done, failed.reward, failed.metadata["scored"]) == (True, None, False)
    assert failed.metadata["episode_status"] == "TOOL_FAILED"
    assert failed.observation["error"]["error_type"] == "execution_error"


def test_a_bad_action_is_a_validation_error(door):
    base, host = door

    async def episode():
        async with GenericEnvClient(base_url=base) as env:
            await env.reset(index=0)
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                await env.step({"type": "dance"})
            return await env.step(call_tool("add", a=1, b=1))

    assert asyncio.run(episode()).observation["result"] == "2" and host.calls["add"] == 1


def test_an_admission_refusal_is_a_capacity_error():
    with serve(ScriptedHost(refuse_s=2.0)) as (url, _):
        async def episode():
            async with GenericEnvClient(base_url=f"{url}/openenv/arith") as env:
                await env.reset(index=0)

        with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            asyncio.run(episode())


def test_the_mcp_tool_client_calls_tools_over_http_in_its_session(door):
    base, host = door

    async def episode():
        async with MCPToolClient(base_url=base) as env:
            await env.reset(index=3)
            tools = await env.list_tools()
            added = await env.call_tool("add", a=3, b=7)
            submitted = await env.call_tool("submit_answer", answer="10")
            state = await env.state()
            with pytest.raises(RuntimeError, match="SESSION|ended"):
                await env.call_tool("add", a=1, b=1)
            return tools, added, submitted, state

    tools, added, submitted, state = asyncio.run(episode())
    assert [t.name for t in tools][:2] == ["add", "submit_answer"] and (added, submitted) == ("10", "submitted")
    assert settled(lambda: host.closed == ["ep-0"])  # the client's close closed the session and its episode


def test_an_mcp_tool_failure_raises_in_the_client(door):
    base, _ = door

    async def episode():
        async with MCPToolClient(base_url=base) as env:
            await env.reset(index=0)
            await env.call_tool("flaky")

    with pytest.raises(RuntimeError, match="Tool 'flaky' failed"):
        asyncio.run(episode())


def rpc(base: str, method: str, **params) -> dict:
    return httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()


def test_a_session_has_one_websocket_and_closes_once_it_lets_go(door):
    base, host = door
    session = rpc(base, "openenv/session/create")["result"]["session_id"]
    url = base.replace("http://", "ws://") + f"/ws?session_id={session}"

    async def two_sockets():
        async with ws_connect(url) as first:
            async with ws_connect(url) as second:
                refused = json.loads(await second.recv())
            await first.send(json.dumps({"type": "reset", "data": {"index": 0}}))
            reset = json.loads(await first.recv())
            closing = rpc(base, "openenv/session/close", session_id=session)["result"]
            return refused, reset, closing, list(host.closed)

    refused, reset, closing, closed_while_held = asyncio.run(two_sockets())
    assert refused["data"]["code"] == "SESSION_ERROR" and reset["type"] == "observation"
    assert closing == {"session_id": session, "closed": False, "closing": True} and closed_while_held == []
    assert settled(lambda: host.closed == ["ep-0"])


def test_plain_http_keeps_the_episode_by_session_id(door):
    base, host = door
    reset = httpx.post(f"{base}/reset", json={"seed": 1, "split": "test", "index": 1, "episode_id": "mine"}).json()
    session = reset["metadata"]["session_id"]
    added = httpx.post(f"{base}/step", json={"action": call_tool("add", a=1, b=7), "session_id": session}).json()
    final = httpx.post(f"{base}/step", json={"action": call_tool("submit_answer", answer="8"),
                                             "session_id": session}).json()
    state = httpx.get(f"{base}/state", params={"session_id": session}).json()
    assert added["observation"]["result"] == "8" and (final["reward"], final["done"]) == (1.0, True)
    assert (state["episode_id"], state["episode_status"]) == ("mine", "FINISHED")
    assert httpx.post(f"{base}/close", json={"session_id": session}).status_code == 200
    assert host.closed == ["ep-0"]
    assert httpx.get(f"{base}/state", params={"session_id": session}).status_code == 503


def test_http_step_without_a_session_is_a_bad_request(door):
    base, _ = door
    step = httpx.post(f"{base}/step", json={"action": call_tool("add", a=1, b=1)})
    assert step.status_code == 422 and "session_id" in step.json()["detail"]


def test_an_unknown_environment_is_not_found():
    with serve(ScriptedHost()) as (url, _):
        assert httpx.post(f"{url}/openenv/nope/reset", json={}).status_code == 404
        assert httpx.get(f"{url}/openenv/nope/metadata").status_code == 404


def test_health_metadata_and_schema(door):
    base, _ = door
    assert httpx.get(f"{base}/health").json() == {"status": "healthy"}
    assert httpx.get(f"{base}/metadata").json()["name"] == "arith"
    assert set(httpx.get(f"{base}/schema").json()) == {"action", "observation", "state"}


def test_the_websocket_needs_the_token_when_the_door_has_one():
    with serve(ScriptedHost(), token=TOKEN) as (url, _):
        async def episode(headers):
            async with GenericEnvClient(base_url=f"{url}/openenv/arith", headers=headers) as env:
                return await env.reset(index=4)

        with pytest.raises(ConnectionError) as refused:
            asyncio.run(episode(None))
        reset = asyncio.run(episode({"Authorization": f"Bearer {TOKEN}"}))
    assert isinstance(refused.value.__cause__, InvalidStatus) and not reset.done


@pytest.fixture(scope="module")
def real_door():
    with door_on_session_manager([openenv_door.routes]) as (url, _, manager):
        yield f"{url}/openenv/arithmetic_tools", manager


def test_a_real_episode_over_the_websocket(real_door):
    base, manager = real_door

    async def episode():
        async with GenericEnvClient(base_url=base) as env:
            reset = await env.reset(split="test", index=0, seed=3)
            question = reset.observation["messages"][-1]["content"]
            a, b = [int(x) for x in question.removeprefix("What is ").rstrip("?").split(" * ")]
            computed = await env.step(call_tool("calculator", expression=f"{a} * {b}"))
            final = await env.step(call_tool("submit_answer", answer=str(a * b)))
            return computed, final

    computed, final = asyncio.run(episode())
    assert not computed.done and (final.reward, final.done) == (1.0, True)
    assert settled(lambda: manager.session_count() == 0)


def test_a_real_episode_through_the_mcp_client(real_door):
    base, manager = real_door

    async def episode():
        async with MCPToolClient(base_url=base) as env:
            await env.reset(split="test", index=1)
            return await env.call_tool("calculator", expression="6 * 7")

    assert "42" in asyncio.run(episode()) and settled(lambda: manager.session_count() == 0)
