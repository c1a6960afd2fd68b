"""The server exports Prometheus metrics on --metrics-port."""

import urllib.request

import pytest
from prometheus_client import generate_latest

from reward_core.contract import RolloutResult, RolloutStatus, ScoreBatchResult, group_stats
from reward_core.ports import free_port
from reward_service.pool.worker_pool import ItemTimeout, PoolConfig, WorkerCrashed, WorkerPool
from reward_service.router.metrics import UNKNOWN_TASK_LABEL, RewardMetrics
from tests.integration import pool_jobs
from tests.integration.conftest import start_server
from trainer_client import RewardClient


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


def scrape(port: int) -> dict[str, float]:
    """``{'name{labels}': value}`` of every sample on the server's /metrics."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in body.splitlines() if line and not line.startswith("#")}


def test_scores_groups_and_zero_variance_groups_are_counted_by_task():
    port = free_port()
    server = start_server(workers=1, metrics_port=port)
    try:
        assert server.metrics.port == port
        right = {"task": "gsm8k", "completion": "#### 1", "reference": "1"}
        wrong = {"task": "gsm8k", "completion": "#### 2", "reference": "1"}
        with RewardClient(server.address) as client:
            client.score_groups([[dict(right, id="a"), dict(right, id="b")],  # all equal: zero variance
                                 [dict(right, id="c"), dict(wrong, id="d")]])
        samples = scrape(port)
    finally:
        server.stop(0)
    assert samples['reward_groups_total{task="gsm8k"}'] == 2.0
    assert samples['reward_zero_variance_groups_total{task="gsm8k"}'] == 1.0
    assert samples['reward_score_count{task="gsm8k"}'] == 4.0
    assert samples['reward_score_total_sum{task="gsm8k"}'] == 3.0
    assert samples['reward_score_bucket{le="0.0",task="gsm8k"}'] == 1.0
    assert samples['reward_score_bucket{le="0.9",task="gsm8k"}'] == 1.0
    assert samples['reward_score_bucket{le="1.0",task="gsm8k"}'] == 4.0
    assert samples["reward_open_streams"] == 0.0


def test_unscored_rollouts_have_no_score():
    metrics = RewardMetrics(known_tasks=["gsm8k"])
    results = [RolloutResult("a", RolloutStatus.TIMEOUT, task="gsm8k", group_id="g"),
               RolloutResult("b", RolloutStatus.OK, 0.5, task="gsm8k", group_id="g")]
    metrics.observe_batch("Score", ScoreBatchResult("r", results, group_stats(results)))
    body = generate_latest(metrics.registry).decode()
    assert 'reward_score_count{task="gsm8k"} 1.0' in body and 'reward_score_total_sum{task="gsm8k"} 0.5' in body
    assert 'reward_zero_variance_groups_total{task="gsm8k"} 1.0' in body  # one scored reward: no variance


def test_open_streams_gauge_follows_stream_opened_and_closed():
    metrics = RewardMetrics()
    value = lambda: metrics.registry.get_sample_value("reward_open_streams")  # noqa: E731
    with metrics.track_stream():
        metrics.stream_opened()
        assert value() == 2.0
        metrics.stream_closed()
    assert value() == 0.0


def test_pool_backlog_restarts_and_timeouts_are_read_at_scrape_time():
    metrics = RewardMetrics()
    value = metrics.registry.get_sample_value
    assert value("reward_pool_queue_depth") is None  # no pool attached: no series
    with WorkerPool(pool_jobs.dispatch, PoolConfig(num_workers=1, item_timeout_s=30, name="metrics-test")) as pool:
        metrics.attach_pool(pool)
        stuck = pool.submit(("sleep_then_return", 30.0), timeout_s=0.5)
        quick = [pool.submit(("square", 3)) for _ in range(2)]
        assert value("reward_pool_queue_depth") == 3.0  # one running, two queued (or three queued)
        with pytest.raises(ItemTimeout):
            stuck.result(timeout=30)
        assert [f.result(timeout=60) for f in quick] == [9, 9]
        assert value("reward_pool_queue_depth") == 0.0
        assert value("reward_worker_restarts_total", {"reason": "timeout"}) == 1.0
        assert value("reward_worker_restarts_total", {"reason": "crash"}) == 0.0
        assert value("reward_pool_item_timeouts_total") == 1.0
        assert value("reward_pool_workers", {"state": "alive"}) == 1.0
        with pytest.raises(WorkerCrashed):
            pool.submit(("kill_self", None)).result(timeout=30)
        assert value("reward_worker_restarts_total", {"reason": "crash"}) == 1.0


def test_metrics_endpoint_reports_its_port_and_closes():
    metrics = RewardMetrics()
    metrics.serve_http(0)
    try:
        assert metrics.port > 0
        body = urllib.request.urlopen(f"http://127.0.0.1:{metrics.port}/metrics", timeout=10).read().decode()
        assert "reward_open_streams 0.0" in body
    finally:
        metrics.close()
    assert metrics.port == 0
    metrics.close()  # idempotent
