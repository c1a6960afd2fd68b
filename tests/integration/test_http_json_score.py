"""``POST /v1/score``: our contract as JSON through the front door equals gRPC ``Score``."""

from __future__ import annotations

import httpx
import pytest

from tests.http_fixtures import running_door
from tests.integration.conftest import start_server

ROLLOUTS = [{"id": "a", "task": "gsm8k", "completion": "so #### 4", "reference": {"answer": "4"}, "groupId": "g"},
            {"id": "b", "task": "gsm8k", "completion": "so #### 5", "reference": {"answer": "4"}, "groupId": "g"},
            {"id": "c", "task": "nope", "completion": "x"}]


@pytest.fixture(scope="module")
def door(reward_server):
    with running_door(reward_server.address) as url:
        yield url


def test_json_score_equals_grpc_score(door, reward_server):
    reply = httpx.post(f"{door}/v1/score", json={"requestId": "j1", "rollouts": ROLLOUTS}, timeout=60)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert [r["id"] for r in body["results"]] == ["a", "b", "c"]
    assert [(r["score"], r["scored"], r["status"]) for r in body["results"]] == [
        (1.0, True, "ROLLOUT_STATUS_OK"), (0.0, True, "ROLLOUT_STATUS_OK"),
        (0.0, False, "ROLLOUT_STATUS_UNKNOWN_TASK")]
    assert body["groups"][0]["groupId"] == "g" and body["groups"][0]["mean"] == 0.5


def test_field_names_as_in_the_proto_are_accepted(door):
    reply = httpx.post(f"{door}/v1/score", json={"request_id": "j2", "rollouts": [
        {"id": "a", "task": "gsm8k", "completion": "#### 4", "reference": {"answer": "4"}, "group_id": "g"}]})
    assert reply.status_code == 200 and reply.json()["results"][0]["score"] == 1.0


def test_a_bare_gold_reference_is_read_as_the_python_client_reads_it(door, client):
    rollouts = [{"id": "s", "task": "gsm8k", "completion": "#### 4", "reference": "4"},
                {"id": "n", "task": "gsm8k", "completion": "#### 4", "reference": 4},
                {"id": "w", "task": "gsm8k", "completion": "#### 5", "reference": 4.0},
                {"id": "o", "task": "gsm8k", "completion": "#### 4", "reference": {"answer": "4"}}]
    reply = httpx.post(f"{door}/v1/score", json={"rollouts": rollouts}, timeout=60)
    assert reply.status_code == 200, reply.text
    over_http = [(r["id"], r["score"], r["status"]) for r in reply.json()["results"]]
    assert over_http == [("s", 1.0, "ROLLOUT_STATUS_OK"), ("n", 1.0, "ROLLOUT_STATUS_OK"),
                         ("w", 0.0, "ROLLOUT_STATUS_OK"), ("o", 1.0, "ROLLOUT_STATUS_OK")]
    assert [(r.id, r.score) for r in client.score(rollouts)] == [(i, s) for i, s, _ in over_http]


def test_a_reference_of_another_shape_is_a_bad_request(door):
    for bad in ([4], True):
        reply = httpx.post(f"{door}/v1/score", json={"rollouts": [
            {"id": "a", "task": "gsm8k", "completion": "#### 4", "reference": bad}]})
        assert reply.status_code == 400 and "reference" in reply.json()["message"], reply.text


def test_errors_are_transcoded(door):
    dup = httpx.post(f"{door}/v1/score",
                     json={"rollouts": [{"id": "a", "task": "gsm8k"}, {"id": "a", "task": "gsm8k"}]})
    assert dup.status_code == 400 and dup.json()["code"] == 3 and "duplicate" in dup.json()["message"]
    not_json = httpx.post(f"{door}/v1/score", content=b"{nope")
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["message"]
    wrong_field = httpx.post(f"{door}/v1/score", json={"rolouts": []})
    assert wrong_field.status_code == 400 and "ScoreRequest" in wrong_field.json()["message"]


def test_tasks_health_and_metrics(door):
    tasks = httpx.get(f"{door}/v1/tasks", timeout=60).json()["tasks"]
    assert "gsm8k" in {t["name"] for t in tasks}
    health = httpx.get(f"{door}/healthz")
    assert health.status_code == 200 and health.json()["upstreams"]["reward"] is True
    metrics = httpx.get(f"{door}/metrics").text
    assert 'http_door_requests_total{route="/v1/score",status="200"}' in metrics


def test_a_token_is_required_when_set(reward_server):
    with running_door(reward_server.address, token="s3cret") as url:
        assert httpx.post(f"{url}/v1/score", json={"rollouts": []}).status_code == 401
        ok = httpx.post(f"{url}/v1/score", json={"rollouts": []}, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        assert httpx.get(f"{url}/healthz").status_code == 200  # probes need no token


def test_a_draining_upstream_is_503_with_retry_after(reward_server):
    server = start_server(workers=1)
    try:
        with running_door(server.address) as url:
            server.begin_drain()
            reply = httpx.post(f"{url}/v1/score", json={"rollouts": [{"id": "a", "task": "gsm8k"}]})
            assert reply.status_code == 503 and reply.headers["Retry-After"] == "1"
    finally:
        server.stop(0)
