"""ORS over our real environments: the ``openreward`` client runs ``arithmetic_tools`` episodes through the
door onto the in-process session manager (real calculator workers, real ``math`` verification), and as in
production: onto ``reward-service serve --serve-environments`` through the door's gRPC EnvironmentClient."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

pytest.importorskip("openreward")

from openreward import AsyncOpenReward  # noqa: E402
from openreward.api.environments.types import Message, TextBlock, ToolCallBlock, ToolResultBlock  # noqa: E402

from reward_service.environments.env_config import EnvironmentsConfig  # noqa: E402
from reward_service.environments.hosting import create_server  # noqa: E402
from reward_service.http_door import ors  # noqa: E402
from reward_service.http_door.door import DoorConfig  # noqa: E402
from reward_service.http_door.upstream import UpstreamConfig  # noqa: E402
from reward_service.router.config import ScorerConfig, ServerConfig  # noqa: E402
from tests.http_fixtures import serve_door_config  # noqa: E402
from tests.session_manager_door import door_on_session_manager  # noqa: E402


@pytest.fixture(autouse=True)
def no_update_check(monkeypatch):
    monkeypatch.setenv("OPENREWARD_DISABLE_UPDATE_CHECK", "1")


@pytest.fixture(scope="module")
def door():
    with door_on_session_manager([ors.routes]) as (url, _, manager):
        yield url, manager


async def episode(url: str, index: int, answer_with_calculator: bool):
    client = AsyncOpenReward(api_key="", base_url=url)
    try:
        env = client.environments.get("arithmetic_tools", base_url=url)
        async with env.session(split="test", index=index) as session:
            [question] = [b.text for b in await session.get_prompt() if "*" in b.text]
            a, b = map(int, re.findall(r"\d+", question))
            tools = [t.name for t in await session.list_tools()]
            shown = (await session.call_tool("calculator", {"expression": f"{a} * {b}"})).blocks[0].text
            answer = str(a * b) if answer_with_calculator else str(a * b + 1)
            final = await session.call_tool("submit_answer", {"answer": answer})
            call = ToolCallBlock(id="c1", name="calculator", input={"expression": f"{a} * {b}"})
            scores = await session.score_group([
                [Message(role="assistant", blocks=[call]),
                 Message(role="user", blocks=[ToolResultBlock(tool_call_id="c1", blocks=[TextBlock(text=shown)])]),
                 Message(role="assistant", blocks=[TextBlock(text=f"The answer is {a * b}.")])],
                [Message(role="assistant", blocks=[TextBlock(text="The answer is 7.")])]])
            return tools, shown, final, scores, str(a * b)
    finally:
        await client.environments.aclose()


def test_the_openreward_client_runs_an_arithmetic_episode_with_the_calculator(door):
    url, manager = door
    tools, shown, final, scores, product = asyncio.run(episode(url, 3, answer_with_calculator=True))
    assert tools == ["calculator", "submit_answer"] and product in shown
    assert final.finished and final.reward == 1.0 and final.metadata["outcome"]["status"] == "FINISHED"
    assert [s.reward for s in scores] == [1.0, 0.0]
    assert manager.session_count() == 0  # leaving the session deleted it


def test_a_wrong_submission_is_a_scored_zero(door):
    url, _ = door
    _, _, final, _, _ = asyncio.run(episode(url, 4, answer_with_calculator=False))
    assert final.finished and final.reward == 0.0 and final.metadata["outcome"]["status"] == "FINISHED"


def test_bare_paths_serve_the_environment_x_deployment_names(door):
    url, _ = door
    for name, tools in (("arithmetic_tools", ["calculator", "submit_answer"]),
                        ("math_tools", ["python", "calculator", "submit_answer"])):
        reply = httpx.get(f"{url}/tools", headers={"X-Deployment": name}).json()
        assert [t["name"] for t in reply["tools"]] == tools
        assert [t["name"] for t in httpx.get(f"{url}/{name}/tools").json()["tools"]] == tools


def test_the_door_runs_ors_episodes_on_the_environment_server_over_grpc():
    small = EnvironmentsConfig(calculator_workers=1, verify_workers=1, sandbox_concurrency=1)
    server = create_server(ServerConfig(port=0, serve_environments=True, scorer=ScorerConfig(workers=1),
                                        environments=small))
    try:
        with serve_door_config(DoorConfig(UpstreamConfig(server.address)), [ors.routes]) as (url, app):
            tools, shown, final, scores, product = asyncio.run(episode(url, 5, answer_with_calculator=True))
            client = app.state.door.up.environments
            assert app.state.door.episodes is client and client.session_ids == []  # /delete closed its stream
    finally:
        server.stop(1.0)
    assert product in shown and final.finished and final.reward == 1.0 and [s.reward for s in scores] == [1.0, 0.0]
