"""Real reward servers on loopback port 0, shared per module."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent import futures

import grpc
import pytest

from reward.v1 import reward_pb2_grpc
from reward_core.config_flags import dataclass_from_values
from reward_service.environments.hosting import create_server
from reward_service.router.config import ServerConfig
from reward_service.router.rewards_config import CompositeSpec, RewardsConfig, TaskSpec
from reward_service.router.server import RewardServer
from sandbox.server import SandboxServer, SandboxServerConfig
from sandbox.server import create_server as create_sandbox_server
from tests.docker_fixtures import docker_executor, docker_runner_image  # noqa: F401  (sandbox docker backend)
from trainer_client import RewardClient

TEST_REWARDS = RewardsConfig(
    tasks=(
        TaskSpec("hang", "tests.integration.stress_tasks:HangTask"),
        TaskSpec("crash", "tests.integration.stress_tasks:CrashTask"),
        TaskSpec("sleep", "tests.integration.stress_tasks:SleepTask"),
        TaskSpec("raise", "tests.integration.stress_tasks:RaiseTask"),
        TaskSpec("bad_check", "tests.integration.stress_tasks:BadCheckTask"),
        TaskSpec("metadata", "tests.integration.stress_tasks:MetadataTask"),
    ),
    rewards=(CompositeSpec("math_with_format", {"math": 1.0, "format": 0.2}),),
)


def start_server(**overrides) -> RewardServer:
    """A started server, built as ``reward-service serve`` builds it (episodes too with ``serve_environments``);
    ``overrides`` are named as the flags are (``max_queue``, not ``scorer=``); ``rewards`` is the scorer's
    rewards config."""
    settings = dict(host="127.0.0.1", port=0, workers=2, item_timeout_s=1.5, max_rollouts_per_request=64,
                    max_message_mb=1, rewards=TEST_REWARDS, grace_s=0)
    settings.update(overrides)
    settings["scorer.rewards"] = settings.pop("rewards")
    return create_server(dataclass_from_values(ServerConfig, settings))


@pytest.fixture(scope="module")
def sandbox_server() -> Iterator[SandboxServer]:
    """A real sandbox server on loopback (2 slots), for tasks that call a remote sandbox endpoint."""
    server = create_sandbox_server(SandboxServerConfig(port=0, workers=2, grace_s=0.0))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def reward_server():
    server = start_server()
    yield server
    server.stop(0)


@pytest.fixture
def client(reward_server):
    with RewardClient(reward_server.address, timeout_s=60, chunk_size=32) as c:
        yield c


@pytest.fixture
def stub(reward_server):
    channel = grpc.insecure_channel(reward_server.address)
    yield reward_pb2_grpc.RewardServiceStub(channel)
    channel.close()


@contextlib.contextmanager
def fake_grpc_server(add_servicer: Callable, servicer) -> Iterator[str]:
    """A plain grpc server on loopback for a hand-written (misbehaving) servicer; yields its address."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    add_servicer(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0)
