"""The server exports Prometheus metrics on --metrics-port."""

import socket
import urllib.request

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
    assert 'reward_rollouts_total{status="UNKNOWN_TASK",task="nope"} 1.0' in body
    assert 'reward_requests_total{code="OK",method="Score"} 1.0' in body
