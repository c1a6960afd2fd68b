"""ORS at the HTTP door, driven by the ``openreward`` package's own client (0.1.167) over loopback.

The host is the scripted one (``tests/scripted_episode_host.py``), so each protocol property is
checked on its own: rows as tasks, a whole episode, rewards, errors that are never rewards, large
results in chunks, resume by task id, keepalive pings, admission, auth by ``X-API-Key``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest
from prometheus_client import generate_latest

openreward = pytest.importorskip("openreward")

from openreward import AsyncOpenReward  # noqa: E402
from openreward.api.environments.types import Message, Task, TextBlock  # noqa: E402
from openreward.api.errors import (  # noqa: E402
    ScoreGroupFailed,
    SessionTerminatedError,
    ToolCallError,
    ToolFailed,
)

from reward_service.http_door import ors  # noqa: E402
from reward_service.http_door.door import DoorConfig  # noqa: E402
from reward_service.http_door.upstream import UpstreamConfig  # noqa: E402
from tests.http_fixtures import serve_door_config  # noqa: E402
from tests.scripted_episode_host import ScriptedHost  # noqa: E402

TOKEN = "ors-key-5e2"
# The client builds a call's coroutine before it checks that its session is dead, and drops it unawaited.
pytestmark = pytest.mark.filterwarnings("ignore:coroutine 'resumable_sse' was never awaited:RuntimeWarning")


@pytest.fixture(autouse=True)
def no_update_check(monkeypatch):
    monkeypatch.setenv("OPENREWARD_DISABLE_UPDATE_CHECK", "1")


def serve(host, *, token: str = "", **settings):
    config = DoorConfig(UpstreamConfig("127.0.0.1:1"), token=token)
    return serve_door_config(config, [ors.ors_routes(ors.OrsSettings(**settings))], episodes=host)


@pytest.fixture()
def door():
    host = ScriptedHost()
    with serve(host, ping_s=0.05) as (url, app):
        yield url, host, app


def run(scenario):
    return asyncio.run(scenario)


async def with_env(url: str, body, *, api_key: str = "", name: str = "arith"):
    client = AsyncOpenReward(api_key=api_key, base_url=url)
    try:
        return await body(client.environments.get(name, base_url=url))
    finally:
        await client.environments.aclose()


def sse_events(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of an SSE body (comments skipped)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if lines:
            event = next(line[7:] for line in lines if line.startswith("event: "))
            events.append((event, "\n".join(line[6:] for line in lines if line.startswith("data: "))))
    return events


def test_an_environments_rows_are_its_tasks(door):
    url, _, _ = door

    async def body(env):
        return (await env.list_splits(), await env.num_tasks("train"), await env.list_tasks("test"),
                await env.get_task("train", -1), await env.get_task_range("train", 1, 3))

    splits, count, listed, last, ranged = run(with_env(url, body))
    assert splits == ["train", "test"] and count == 5
    assert [t.task_spec for t in listed] == [{"split": "test", "index": 0}, {"split": "test", "index": 1}]
    assert last.task_spec == {"split": "train", "index": 4} and last.environment_name == "arith"
    assert [t.task_spec["index"] for t in ranged] == [1, 2]
    assert httpx.get(f"{url}/list_environments").json() == ["arith"]


def test_a_listed_task_or_a_row_of_our_shape_opens_a_session(door):
    url, _, _ = door

    async def body(env):
        listed = await env.list_tasks("test")
        async with env.session(task=listed[1]) as by_spec:
            first = [b.text for b in await by_spec.get_prompt()]
        row = Task(server_name="arith", environment_name="arith", namespace=None,
                   task_spec={"prompt": "What is 35 + 7?", "reference": {"answer": "42"}})
        async with env.session(task=row) as by_row:
            return first, [b.text for b in await by_row.get_prompt()], await by_row.call_tool(
                "submit_answer", {"answer": "42"})

    first, second, final = run(with_env(url, body))
    assert first[-1] == "What is 1 + 7?" and second[-1] == "What is 35 + 7?" and final.reward == 1.0


def test_a_whole_episode_runs_through_the_openreward_client(door):
    url, host, app = door

    async def body(env):
        async with env.session(split="train", index=2) as session:
            prompt = await session.get_prompt()
            messages = await session.get_messages()
            tools = await session.list_tools()
            added = await session.call_tool("add", {"a": 2, "b": 7})
            final = await session.call_tool("submit_answer", {"answer": "9"})
            with pytest.raises(ToolCallError) as after:
                await session.call_tool("add", {"a": 1, "b": 1})
            scores = await session.score_group([
                [Message(role="assistant", blocks=[TextBlock(text="it is 9")])],
                [Message(role="assistant", blocks=[TextBlock(text="it is 10")])]])
            gauge = generate_latest(app.state.door.registry).decode()
            return prompt, messages, tools, added, final, after.value, scores, gauge

    prompt, messages, tools, added, final, after, scores, open_during = run(with_env(url, body))
    assert [b.text for b in prompt] == ["[system]", "Use the tools.", "[user]", "What is 2 + 7?"]
    assert [(m.role, m.blocks[0].text) for m in messages] == [("system", "Use the tools."), ("user", "What is 2 + 7?")]
    assert [t.name for t in tools] == ["add", "submit_answer", "shout", "wait", "flaky"]
    assert tools[0].input_schema["required"] == ["a", "b"]
    assert added.blocks[0].text == "9" and added.reward is None and not added.finished
    assert final.finished and final.reward == 1.0
    assert final.metadata["outcome"]["status"] == "FINISHED" and final.metadata["outcome"]["components"] == {
        "accuracy": 1.0}
    assert after.reason == "episode_finished"
    assert [s.reward for s in scores] == [1.0, 0.0]
    assert "http_door_ors_sessions 1.0" in open_during
    assert host.open_ids == set() and len(host.closed) == 1  # leaving the session (/delete) closed it
    assert "http_door_ors_sessions 0.0" in generate_latest(app.state.door.registry).decode()


def test_a_wrong_answer_is_a_scored_zero(door):
    url, _, _ = door

    async def body(env):
        async with env.session(split="test", index=0) as session:
            return await session.call_tool("submit_answer", {"answer": "8"})

    final = run(with_env(url, body))
    assert final.finished and final.reward == 0.0 and final.metadata["outcome"]["status"] == "FINISHED"


def test_a_failure_of_ours_is_an_error_never_a_reward(door):
    url, host, _ = door

    async def body(env):
        async with env.session(split="train", index=0) as session:
            with pytest.raises(ToolFailed) as failed:
                await session.call_tool("flaky", {})
            with pytest.raises(SessionTerminatedError):  # the client ends the session on a failed tool
                await session.call_tool("add", {"a": 1, "b": 2})
            return failed.value

    failed = run(with_env(url, body))
    assert "TOOL_FAILED" in str(failed) and "deadline" in str(failed)
    assert host.calls["add"] == 0


def test_an_unknown_tool_or_bad_arguments_are_the_callers_to_fix(door):
    url, host, _ = door

    async def body(env):
        async with env.session(split="train", index=0) as session:
            with pytest.raises(ToolCallError) as unknown:
                await session.call_tool("divide", {"a": 1})
            with pytest.raises(ToolCallError) as bad:
                await session.call_tool("add", {"a": "one", "b": 2})
            still = await session.call_tool("add", {"a": 1, "b": 2})  # the session lives on
            return unknown.value, bad.value, still

    unknown, bad, still = run(with_env(url, body))
    assert unknown.reason == "not_found" and bad.reason == "input_validation" and "a: 'one'" in bad.detail
    assert still.blocks[0].text == "3" and host.calls["add"] == 1


def test_a_large_result_arrives_whole_in_chunks(door):
    url, _, _ = door
    size = 3 * 4096 + 17

    async def body(env):
        async with env.session(split="train", index=0) as session:
            return await session.call_tool("shout", {"n": size})

    assert run(with_env(url, body)).blocks[0].text == ("ab " * size)[:size]
    sid = httpx.post(f"{url}/create_session").text.split("data: ")[1].split("\r\n")[0]
    httpx.post(f"{url}/create", json={"split": "train", "index": 0}, headers={"X-Session-ID": sid})
    reply = httpx.post(f"{url}/arith/call", json={"name": "shout", "input": {"n": size}},
                       headers={"X-Session-ID": sid})
    events = sse_events(reply.text)
    assert [e for e, _ in events] == ["task_id", "chunk", "chunk", "chunk", "end"]
    assert all(len(d) <= 4096 and not d[:1].isspace() for _, d in events[1:])
    assert json.loads("".join(d for _, d in events[1:]))["output"]["blocks"][0]["text"] == ("ab " * size)[:size]


def test_a_dropped_stream_resumes_by_task_id_without_running_the_call_again(door):
    url, host, _ = door
    sid = httpx.post(f"{url}/create_session").text.split("data: ")[1].split("\r\n")[0]
    assert httpx.post(f"{url}/create", json={"split": "train", "index": 0},
                      headers={"X-Session-ID": sid}).json() == {"sid": sid}
    with httpx.stream("POST", f"{url}/arith/call", json={"name": "wait", "input": {}},
                      headers={"X-Session-ID": sid}) as first:
        lines = first.iter_lines()
        assert next(lines) == "event: task_id"
        task_id = next(lines)[len("data: "):]
    # the first stream is gone; the call runs on
    host.gate.set()
    reply = httpx.post(f"{url}/arith/call", json={"name": "ignored", "input": {}, "task_id": task_id},
                       headers={"X-Session-ID": sid})
    events = sse_events(reply.text)
    assert events[0] == ("task_id", task_id) and events[-1][0] == "end"
    assert json.loads(events[-1][1])["output"]["blocks"][0]["text"] == "waited"
    assert host.calls["wait"] == 1
    other = httpx.post(f"{url}/arith/call", json={"name": "add", "input": {}, "task_id": "f" * 32},
                       headers={"X-Session-ID": sid})
    assert sse_events(other.text) == [("error", "unknown task_id")]


def test_a_slow_call_is_kept_alive_by_pings(door):
    url, host, _ = door
    sid = httpx.post(f"{url}/create_session").text.split("data: ")[1].split("\r\n")[0]
    httpx.post(f"{url}/create", json={"split": "train", "index": 0}, headers={"X-Session-ID": sid})
    seen = []
    with httpx.stream("POST", f"{url}/call", json={"name": "wait", "input": {}},
                      headers={"X-Session-ID": sid, "X-Deployment": "arith"}) as stream:
        for line in stream.iter_lines():
            seen.append(line)
            if line.startswith(":"):
                host.gate.set()  # the result may come only after a ping was seen
    assert seen.index(": ping") < seen.index("event: end")


def test_an_unscored_candidate_fails_its_group_and_the_session_lives(door):
    url, _, _ = door

    async def body(env):
        async with env.session(split="train", index=1) as session:
            with pytest.raises(ScoreGroupFailed) as failed:
                await session.score_group([[Message(role="assistant", blocks=[TextBlock(text="8")])],
                                           [Message(role="assistant", blocks=[TextBlock(text="UNSCORABLE")])]])
            return failed.value, await session.call_tool("add", {"a": 1, "b": 1})

    failed, still = run(with_env(url, body))
    assert "candidate 1: ERROR" in str(failed) and "not 0" in str(failed) and still.blocks[0].text == "2"


def test_admission_refusal_is_429_with_the_retry_hint():
    with serve(ScriptedHost(refuse_s=2.5)) as (url, _):
        reply = httpx.post(f"{url}/create", json={"split": "train", "index": 0}, headers={"X-Session-ID": "s1"})
    assert reply.status_code == 429 and reply.headers["retry-after"] == "3"
    assert reply.json()["detail"].startswith("REFUSED")


def test_the_api_key_is_the_doors_token():
    host = ScriptedHost()
    with serve(host, token=TOKEN) as (url, _):
        async def body(env):
            async with env.session(split="train", index=0) as session:
                return await session.call_tool("add", {"a": 20, "b": 22})

        assert run(with_env(url, body, api_key=TOKEN)).blocks[0].text == "42"
        refused = httpx.post(f"{url}/create_session", headers={"X-API-Key": "wrong"})
    assert refused.status_code == 401


def test_an_unreachable_environment_server_is_503_to_retry():
    with serve(None) as (url, app):  # no host given: the door's own client of --upstream (nothing there)
        reply = httpx.get(f"{url}/list_environments", timeout=60)
        assert app.state.door.episodes is app.state.door.up.environments
    assert reply.status_code == 503 and reply.headers["retry-after"] == "1"
    detail = reply.json()["detail"]
    assert detail.startswith("the environment service at ") and " is unavailable: " in detail


def test_stopping_the_door_closes_its_open_sessions():
    host = ScriptedHost()
    with serve(host) as (url, _):
        for sid in ("a", "b"):
            httpx.post(f"{url}/create", json={"split": "train", "index": 0}, headers={"X-Session-ID": sid})
        assert len(host.open_ids) == 2
    assert host.open_ids == set() and len(host.closed) == 2


def test_a_client_that_gives_up_while_waiting_for_admission_leaves_no_session():
    gate = threading.Event()
    host = ScriptedHost(open_gate=gate)
    with serve(host) as (url, _):
        with pytest.raises(httpx.TimeoutException):  # the client gives up and hangs up while admission waits
            httpx.post(f"{url}/create", json={"split": "train", "index": 0}, headers={"X-Session-ID": "gone"},
                       timeout=0.5)
        gate.set()
        deadline = time.monotonic() + 60
        while not host.closed and time.monotonic() < deadline:  # a bound on the wait, not on its length
            time.sleep(0.05)
        assert host.closed == ["ep-0"] and host.open_ids == set()
