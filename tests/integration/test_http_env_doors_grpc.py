"""The Gym and OpenEnv doors as deployed: the door's episode host is the EnvironmentService's gRPC client,
and the reward server runs the episodes (``reward-service serve --serve-environments``).

One whole episode per protocol, from the protocol's client to the session manager behind the stream,
and back: the reward is the verifier's, and the server holds no session afterwards.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from reward_service.environments.hosting import sessions_of
from reward_service.http_door import gym_env, openenv_door
from tests.http_fixtures import serve_app
from tests.integration.conftest import start_server
from tests.session_manager_door import settled

openenv = pytest.importorskip("openenv")
from openenv.core.generic_client import GenericEnvClient  # noqa: E402


@pytest.fixture(scope="module")
def deployed():
    server = start_server(serve_environments=True, **{"environments.max_sessions": 4,
                                                      "environments.sandbox_concurrency": 1})
    try:
        with serve_app(server.address, [gym_env.routes, openenv_door.routes]) as (url, _):
            yield url, server
    finally:
        server.stop(0)


def test_a_gym_episode_runs_on_the_reward_servers_sessions(deployed):
    url, server = deployed
    base = f"{url}/gym-env/arithmetic_tools"
    row = {"responses_create_params": {"input": [{"role": "user", "content": "What is 4321 * 5678?"}]},
           "expected_answer": str(4321 * 5678)}
    seeded = httpx.post(f"{base}/seed_session", json=row, timeout=60)
    computed = httpx.post(f"{base}/calculator", json={"expression": "4321 * 5678"}, cookies=seeded.cookies,
                          timeout=60)
    submitted = httpx.post(f"{base}/submit_answer", json={"answer": str(4321 * 5678)}, cookies=computed.cookies,
                           timeout=60)
    items = [{"type": "function_call", "name": "submit_answer", "call_id": "c1",
              "arguments": json.dumps({"answer": str(4321 * 5678)})}]
    response = {"id": "r", "created_at": 1.0, "model": "m", "object": "response", "output": items,
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    verified = httpx.post(f"{base}/verify", json=row | {"response": response}, cookies=submitted.cookies, timeout=60)
    assert str(4321 * 5678) in computed.json()["output"] and submitted.json()["done"] is True
    assert verified.json()["reward"] == 1.0 and settled(lambda: sessions_of(server).session_count() == 0)


def test_an_openenv_episode_runs_on_the_reward_servers_sessions(deployed):
    url, server = deployed

    async def episode():
        async with GenericEnvClient(base_url=f"{url}/openenv/arithmetic_tools") as env:
            await env.reset(row={"prompt": "What is 12 * 12?", "reference": {"answer": "144"}})
            computed = await env.step({"type": "call_tool", "tool_name": "calculator",
                                       "arguments": {"expression": "12 * 12"}})
            final = await env.step({"type": "message", "content": "The answer is \\boxed{144}."})
            return computed, final

    computed, final = asyncio.run(episode())
    assert "144" in computed.observation["result"] and (final.reward, final.done) == (1.0, True)
    assert settled(lambda: sessions_of(server).session_count() == 0)  # the closed connection's cleanup, upstream
