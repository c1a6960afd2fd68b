"""``serve-http --auth-token-file``: the door checks its callers' token and sends its own upstream.

A reward server that wants a token, behind a front door given the same token file (as
``reward-service serve-http`` builds it: :func:`resolved_door_config`): a caller with the right
token is scored (the door used to send no token upstream, and the caller got the reward server's
401 "carried none"); a caller without it is refused by the door.
"""

from __future__ import annotations

import os

import httpx
import pytest

from reward_core.server_security import ServerSecurityConfig
from reward_service.http_door.server import HttpServerConfig, resolved_door_config
from reward_service.http_door.upstream import UpstreamConfig
from reward_service.router.config import ScorerConfig, ServerConfig
from reward_service.router.server import create_server
from tests.http_fixtures import serve_door_config

TOKEN = "door-token-8c1d"
ROLLOUT = {"id": "a", "task": "gsm8k", "completion": "2 + 2 = 4\n#### 4", "reference": "4"}


@pytest.fixture(autouse=True)
def no_suite_environment(monkeypatch):
    for name in [n for n in os.environ if n.startswith("REWARD_SUITE_")]:
        monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def token_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("secrets") / "token"
    path.write_text(TOKEN + "\n")
    return path


@pytest.fixture(scope="module")
def token_server(token_file):
    server = create_server(ServerConfig(host="127.0.0.1", port=0, grace_s=0, scorer=ScorerConfig(workers=1),
                                        security=ServerSecurityConfig(auth_token_file=str(token_file))))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def door(token_server, token_file):
    config = resolved_door_config(HttpServerConfig(upstream=UpstreamConfig(token_server.address)),
                                  ServerSecurityConfig(auth_token_file=str(token_file)), environ={})
    with serve_door_config(config) as (url, _):
        yield url


def test_a_caller_with_the_right_token_is_scored_through_a_door_sharing_the_token_file(door):
    reply = httpx.post(f"{door}/v1/score", json={"rollouts": [ROLLOUT]},
                       headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert reply.status_code == 200, reply.text
    [result] = reply.json()["results"]
    assert (result["score"], result["status"]) == (1.0, "ROLLOUT_STATUS_OK")


def test_a_caller_without_the_token_is_refused_by_the_door(door):
    reply = httpx.post(f"{door}/v1/score", json={"rollouts": [ROLLOUT]}, timeout=60)
    assert reply.status_code == 401, reply.text


def test_an_upstream_token_from_the_environment_wins_over_the_doors_own(token_file):
    config = resolved_door_config(HttpServerConfig(upstream=UpstreamConfig("127.0.0.1:1")),
                                  ServerSecurityConfig(auth_token_file=str(token_file)),
                                  environ={"REWARD_SUITE_AUTH_TOKEN": "upstream-only"})
    assert config.token == TOKEN
    assert config.upstream.security is not None and config.upstream.security.auth_token == "upstream-only"
