"""The server exports Prometheus metrics on --metrics-port."""

import socket
import urllib.request

from reward_service.metrics import UNKNOWN_TASK_LABEL
from tests.integration.conftest import start_server
from trainer_client import RewardClient


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scored_rollouts_are_counted_by_task_and_status():
    port = free_port()
    server = start_server(workers=1, metrics_port=port)
    try:
        with RewardClient(server.address) as client:
            client.score([{"id": "a", "task": "gsm8k", "completion": "#### 1", "reference": "1"},
                          {"id": "b", "task": "nope", "completion": "", "reference": "1"}])
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        server.stop(0)
    assert 'reward_rollouts_total{status="OK",task="gsm8k"} 1.0' in body
    assert f'reward_rollouts_total{{status="UNKNOWN_TASK",task="{UNKNOWN_TASK_LABEL}"}} 1.0' in body
    assert 'reward_requests_total{code="OK",method="Score"} 1.0' in body


def test_unknown_task_names_from_clients_share_one_series():
    port = free_port()
    server = start_server(workers=1, metrics_port=port)
    try:
        with RewardClient(server.address) as client:
            client.score([{"id": str(i), "task": f"made-up-{i}", "completion": "", "reference": "1"}
                          for i in range(50)])
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        server.stop(0)
    series = [line for line in body.splitlines() if line.startswith("reward_rollouts_total{")]
    assert series == [f'reward_rollouts_total{{status="UNKNOWN_TASK",task="{UNKNOWN_TASK_LABEL}"}} 50.0']
    assert "made-up" not in body
