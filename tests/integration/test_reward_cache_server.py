"""A real server's reward cache: a repeated rollout is never verified twice (counted, not timed)."""

from reward_core.ports import free_port
from tests.integration.conftest import start_server
from tests.integration.test_metrics import scrape
from trainer_client import RewardClient

ROLLOUT = {"id": "a", "task": "gsm8k", "completion": "#### 72", "reference": "72"}


def test_a_repeated_rollout_is_answered_from_the_cache_not_verified_again():
    port = free_port()
    server = start_server(workers=1, metrics_port=port)
    try:
        with RewardClient(server.address) as client:
            first = client.score([ROLLOUT])[0]
            again = client.score([{**ROLLOUT, "id": "b"}])[0]  # same content, another id and call
        metrics = scrape(port)
    finally:
        server.stop(0)
    assert metrics['reward_cache_lookups_total{result="miss"}'] == 1
    assert metrics['reward_cache_lookups_total{result="hit"}'] == 1
    assert metrics['reward_verify_seconds_count{task="gsm8k"}'] == 1  # verified once
    assert metrics['reward_rollouts_total{status="OK",task="gsm8k"}'] == 2
    assert (again.id, again.score, again.status, again.explanation) == ("b", first.score, first.status,
                                                                         first.explanation)
    assert again.verifier_version == first.verifier_version != ""
    assert again.elapsed_ms == 0.0


def test_unscored_outcomes_are_verified_again():
    port = free_port()
    server = start_server(workers=1, metrics_port=port)
    failing = {"id": "r", "task": "raise", "completion": "raise", "reference": "1"}
    try:
        with RewardClient(server.address) as client:
            assert not client.score([failing])[0].scored
            assert not client.score([failing])[0].scored
        metrics = scrape(port)
    finally:
        server.stop(0)
    assert metrics['reward_cache_lookups_total{result="miss"}'] == 2
    assert metrics['reward_cache_stores_total'] == 0


def test_replicas_share_outcomes_through_one_sqlite_file(tmp_path):
    path = str(tmp_path / "rewards.sqlite")
    first = start_server(workers=1, reward_cache=path)
    try:
        with RewardClient(first.address) as client:
            client.score([ROLLOUT])
        first.scorer.cache.flush()
        port = free_port()
        second = start_server(workers=1, reward_cache=path, metrics_port=port)
        try:
            with RewardClient(second.address) as client:
                assert client.score([ROLLOUT])[0].score == 1.0
            metrics = scrape(port)
        finally:
            second.stop(0)
    finally:
        first.stop(0)
    assert metrics['reward_cache_lookups_total{result="hit"}'] == 1
    assert metrics.get('reward_verify_seconds_count{task="gsm8k"}', 0) == 0


def test_list_tasks_reports_the_version_results_carry():
    server = start_server(workers=1)
    try:
        with RewardClient(server.address) as client:
            versions = {info.name: info.verifier_version for info in client.list_tasks()}
            result = client.score([ROLLOUT])[0]
    finally:
        server.stop(0)
    assert result.verifier_version == versions["gsm8k"]
