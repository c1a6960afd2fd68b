"""Per rollout, not per request (issue 22): an oversized rollout gets its own unscored status,
INVALID_ROLLOUT naming the caller's id, and the other rollouts of the request are scored -- over
gRPC, through the Python client and through the HTTP door's JSON route."""

from __future__ import annotations

import httpx
import pytest

from reward.v1 import reward_pb2 as pb
from reward_core.contract import RolloutStatus
from tests.http_fixtures import running_door
from tests.integration.conftest import start_server

LIMIT = 100


@pytest.fixture(scope="module")
def small_server():
    server = start_server(max_completion_chars=LIMIT)
    yield server
    server.stop(0)


def _rollouts() -> list[dict]:
    return [{"id": "good-1", "task": "gsm8k", "completion": "#### 4", "reference": {"answer": "4"}},
            {"id": "my-huge-one", "task": "gsm8k", "completion": "x" * (LIMIT + 1), "reference": {"answer": "4"}},
            {"id": "good-2", "task": "gsm8k", "completion": "#### 5", "reference": {"answer": "4"}}]


def test_an_oversized_rollout_is_unscored_alone(small_server) -> None:
    from reward_core.clients import RewardClient

    with RewardClient(small_server.address, timeout_s=60) as client:
        good1, huge, good2 = client.score(_rollouts())
    assert (good1.status, good1.score) == (RolloutStatus.OK, 1.0)
    assert (good2.status, good2.score) == (RolloutStatus.OK, 0.0)
    assert huge.status is RolloutStatus.INVALID_ROLLOUT and not huge.scored
    assert "my-huge-one" in huge.error and f"{LIMIT + 1} characters" in huge.error
    assert "--max-completion-chars" in huge.error


def test_the_wire_status_is_its_own(small_server) -> None:
    import grpc

    from reward.v1 import reward_pb2_grpc

    with grpc.insecure_channel(small_server.address) as channel:
        reply = reward_pb2_grpc.RewardServiceStub(channel).Score(pb.ScoreRequest(rollouts=[
            pb.Rollout(id="big", task="gsm8k", completion="y" * (LIMIT + 5))]), timeout=60)
    assert reply.results[0].status == pb.ROLLOUT_STATUS_INVALID_ROLLOUT


def test_through_the_http_door_the_error_names_the_callers_id(small_server) -> None:
    with running_door(small_server.address) as url:
        reply = httpx.post(f"{url}/v1/score", json={"rollouts": _rollouts()}, timeout=60)
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["id"] for r in results] == ["good-1", "my-huge-one", "good-2"]
    assert [r["scored"] for r in results] == [True, False, True]
    assert results[1]["status"] == "ROLLOUT_STATUS_INVALID_ROLLOUT" and "my-huge-one" in results[1]["error"]
