"""`reward-service status` against real servers: health, tasks, metrics; exit 1 when unreachable."""

from __future__ import annotations

import logging

import pytest

from reward_core.ports import free_port
from reward_core.server_security import ServerSecurityConfig
from reward_service.cli import main
from reward_service.status_cli import MetricsSnapshot, metrics_lines
from tests.integration.conftest import start_server
from trainer_client import RewardClient

TOKEN = "status-test-token"


@pytest.fixture(autouse=True)
def restore_logging():
    """main() installs its log handler on the root logger: take it off again."""
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    yield
    root.handlers[:] = saved[1]
    root.setLevel(saved[0])


@pytest.fixture(scope="module")
def server_with_metrics():
    port = free_port()
    server = start_server(workers=1, metrics_port=port)
    with RewardClient(server.address) as client:
        client.score([{"id": "a", "task": "gsm8k", "completion": "#### 1", "reference": "1"},
                      {"id": "b", "task": "gsm8k", "completion": "#### 2", "reference": "1"},
                      {"id": "c", "task": "nope", "completion": "", "reference": "1"}])
    yield server, f"http://127.0.0.1:{port}/metrics"
    server.stop(0)


def run_status(capsys, *argv: str) -> tuple[int, str]:
    code = main(["status", *argv])
    return code, capsys.readouterr().out


def test_status_shows_health_tasks_and_rollout_counts(server_with_metrics, capsys):
    server, url = server_with_metrics
    code, out = run_status(capsys, "--endpoint", server.address, "--metrics-url", url, "--interval", "0.2")
    assert code == 0, out
    assert "server SERVING, reward.v1.RewardService SERVING" in out
    assert "gsm8k (task)" in out and "math_with_format (composite)" in out
    assert "rollouts      3 answered, 0.0 rollouts/s over the last" in out
    assert "unscored      33.3% of rollouts (UNKNOWN_TASK 1)" in out
    assert "mean score    gsm8k 0.500 (n=2)" in out
    assert out.rstrip().endswith("status: OK")


def test_status_reports_the_tasks_start_up_checks_once_done(server_with_metrics, capsys):
    server, _ = server_with_metrics
    assert server.scorer.startup_checks.wait(120)
    checked = len(server.scorer.startup_checks.names)
    code, out = run_status(capsys, "--endpoint", server.address)
    line = next(li for li in out.splitlines() if li.startswith("  checks"))
    assert code == 0 and f"{checked}/{checked} tasks checked; canaries: " in line, line
    assert "self-check failed" not in line and "rewarded canaries" not in line and " 0 failed" in line


def test_status_without_metrics_url_checks_only_grpc(server_with_metrics, capsys):
    server, _ = server_with_metrics
    code, out = run_status(capsys, "--endpoint", server.address)
    assert code == 0 and "SERVING" in out and "metrics" not in out


def test_a_closed_port_is_reported_unreachable_with_exit_1(capsys):
    code, out = run_status(capsys, "--endpoint", f"127.0.0.1:{free_port()}", "--timeout", "2")
    assert code == 1
    assert "UNAVAILABLE" in out and "unreachable" in out and "Traceback" not in out
    assert out.rstrip().endswith("status: NOT OK")


def test_an_unreachable_metrics_url_is_exit_1(server_with_metrics, capsys):
    server, _ = server_with_metrics
    code, out = run_status(capsys, "--endpoint", server.address, "--metrics-url",
                           f"http://127.0.0.1:{free_port()}/metrics", "--interval", "0")
    assert code == 1 and "unreachable" in out


def test_status_uses_the_client_security_flags(tmp_path, capsys):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    server = start_server(workers=1, security=ServerSecurityConfig(auth_token_file=str(token_file)))
    try:
        code, out = run_status(capsys, "--endpoint", server.address)
        assert code == 1 and "ListTasks failed: UNAUTHENTICATED" in out  # health is open, ListTasks is not
        code, out = run_status(capsys, "--endpoint", server.address, "--auth-token-file", str(token_file))
        assert code == 0 and "gsm8k (task)" in out
    finally:
        server.stop(0)


def test_rates_come_from_two_scrapes():
    def snapshot(rollouts: float, taken_at: float) -> MetricsSnapshot:
        return MetricsSnapshot.parse(
            "# TYPE reward_rollouts counter\n"
            f'reward_rollouts_total{{status="OK",task="gsm8k"}} {rollouts}\n'
            "# TYPE reward_pool_queue_depth gauge\nreward_pool_queue_depth 7\n"
            "# TYPE reward_worker_restarts counter\n"
            'reward_worker_restarts_total{reason="crash"} 2\nreward_worker_restarts_total{reason="timeout"} 1\n'
            "# TYPE reward_groups counter\nreward_groups_total{task=\"gsm8k\"} 4\n"
            "# TYPE reward_zero_variance_groups counter\nreward_zero_variance_groups_total{task=\"gsm8k\"} 1\n",
            taken_at)

    text = "\n".join(metrics_lines(snapshot(130, 12.0), snapshot(100, 10.0)))
    assert "130 answered, 15.0 rollouts/s over the last 2.0s" in text
    assert "queue depth   7 pool items" in text
    assert "restarts      3 workers replaced (crash 2, timeout 1)" in text
    assert "zero variance 25.0% of 4 groups" in text
