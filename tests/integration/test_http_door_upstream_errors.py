"""An upstream call that fails is answered with that call's own HTTP status on every door, in our words.

The HTTP door over a real EnvironmentService on loopback that is gone (UNAVAILABLE), slower than the door's
deadline (DEADLINE_EXCEEDED) or broken (INTERNAL), asked what its environments are through each protocol that
lists them: NeMo Gym's ``tools``, OpenEnv's ``metadata`` and ``schema``, ORS's ``list_environments``. Each
answers 503 (with ``Retry-After``), 504 or 500 with the client's message naming the upstream -- never a bare
500 page, never "unavailable" for a deadline.
"""

from __future__ import annotations

import grpc
import httpx
import pytest

from reward_core.ports import free_port
from reward_service.http_door.door import DoorConfig
from reward_service.http_door.upstream import UpstreamConfig
from tests.http_fixtures import running_door, serve_door_config
from tests.integration.episode_hosts import serving
from tests.integration.test_client_call_errors import _ListingHost

SHORT_S = 0.5  # the door's upstream deadline: far below the slow host's 60 s
HANG_GUARD = pytest.mark.timeout(120)
#: Each protocol's route that lists the environments, and where its answer keeps the message.
LISTING_ROUTES = {
    "gym": ("/gym-env/adder/tools", lambda body: body["message"]),
    "openenv-metadata": ("/openenv/adder/metadata", lambda body: body["message"]),
    "openenv-schema": ("/openenv/adder/schema", lambda body: body["message"]),
    "ors": ("/list_environments", lambda body: body["detail"]),
}


def ask_every_listing_route(environments: str, timeout_s: float = 30.0) -> dict[str, httpx.Response]:
    config = DoorConfig(UpstreamConfig(f"127.0.0.1:{free_port()}", timeout_s=timeout_s, environments=environments))
    with serve_door_config(config) as (url, _):
        return {name: httpx.get(url + path, timeout=60) for name, (path, _) in LISTING_ROUTES.items()}


def message(name: str, reply: httpx.Response) -> str:
    return LISTING_ROUTES[name][1](reply.json())


@HANG_GUARD
def test_an_environment_service_that_is_gone_is_503_with_retry_after_on_every_door():
    address = f"127.0.0.1:{free_port()}"
    for name, reply in ask_every_listing_route(address).items():
        assert reply.status_code == 503, (name, reply.text)
        assert reply.headers["Retry-After"] == "1"
        assert message(name, reply).startswith(f"the environment service at {address} is unavailable: "), name


@HANG_GUARD
def test_an_environment_service_past_the_doors_deadline_is_504_not_unavailable():
    with serving(_ListingHost("slow")) as server:
        replies = ask_every_listing_route(server.address, timeout_s=SHORT_S)
    for name, reply in replies.items():
        assert reply.status_code == 504, (name, reply.text)
        assert "Retry-After" not in reply.headers
        assert f"the environment service at {server.address} did not answer within {SHORT_S:g} s" in message(
            name, reply), name


@HANG_GUARD
def test_a_broken_environment_service_is_500_naming_its_error():
    with serving(_ListingHost("broken")) as server:
        replies = ask_every_listing_route(server.address)
    for name, reply in replies.items():
        assert reply.status_code == 500, (name, reply.text)
        said = message(name, reply)
        assert said.startswith(f"the environment service at {server.address} failed the call: INTERNAL: "), name
        assert "the environment table is corrupt" in said


@HANG_GUARD
def test_the_google_rpc_status_body_carries_the_calls_code():
    address = f"127.0.0.1:{free_port()}"
    reply = ask_every_listing_route(address)["gym"]
    assert reply.json()["code"] == grpc.StatusCode.UNAVAILABLE.value[0] and reply.json()["details"] == []


@HANG_GUARD
def test_a_reward_server_that_is_gone_is_named_in_our_words_not_grpcs():
    address = f"127.0.0.1:{free_port()}"
    with running_door(address) as url:
        replies = {"tasks": httpx.get(f"{url}/v1/tasks", timeout=60),
                   "score": httpx.post(f"{url}/v1/score", json={"rollouts": [{"id": "a", "task": "gsm8k"}]},
                                       timeout=60),
                   "openrlhf": httpx.post(f"{url}/openrlhf/gsm8k", json={"query": ["q"], "prompts": ["q"],
                                                                                "labels": ["1"]}, timeout=60)}
    for name, reply in replies.items():
        assert reply.status_code == 503, (name, reply.text)
        said = reply.json()["message"]
        assert said.startswith(f"the reward service at {address} is unavailable: "), (name, said)
        assert "ipv4:" not in said and "failed to connect to all addresses" not in said, name
