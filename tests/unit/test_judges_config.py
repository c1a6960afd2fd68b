"""The rewards config's ``judges:`` section, the judge statuses, and the judge series on a server's /metrics."""

from __future__ import annotations

import math

import pytest
from prometheus_client import generate_latest

from reward_core.contract import RolloutStatus, retry_after_hint, retry_hint
from reward_service.judges import JudgeEndpoint, JudgeError, JudgeFailureKind, status_of
from reward_service.judges.judge_metrics import JudgeMetrics, judge_metrics
from reward_service.router.metrics import RewardMetrics
from reward_service.router.rewards_config import RewardsConfig, RewardsConfigError

JUDGES = {"small": {"base_url": "http://127.0.0.1:8000/v1", "model": "tiny", "max_concurrency": 4,
                    "cache": "off"}}


def test_a_task_naming_a_judge_gets_its_settings() -> None:
    config = RewardsConfig.from_dict({"judges": JUDGES, "tasks": {"ref": {"task": "judge_reference",
                                                                          "options": {"judge": "small"}}}})
    judge = JudgeEndpoint.from_options(config.tasks[0].options["judge"])
    assert judge == config.judges[0]
    assert (judge.name, judge.model, judge.max_concurrency, judge.cache) == ("small", "tiny", 4, "off")


def test_an_inline_judge_is_left_as_given() -> None:
    inline = {"base_url": "http://h/v1", "model": "m"}
    config = RewardsConfig.from_dict({"tasks": {"ref": {"task": "judge_reference", "options": {"judge": inline}}}})
    assert config.tasks[0].options["judge"] == inline


def test_an_unknown_judge_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(RewardsConfigError, match=r"'large'.*known: \['small'\]"):
        RewardsConfig.from_dict({"judges": JUDGES, "tasks": {"ref": {"task": "x", "options": {"judge": "large"}}}})


@pytest.mark.parametrize("settings,message", [
    ({"base_url": "http://h/v1"}, "model required"),
    ({"base_url": "http://h/v1", "model": "m", "temperature": 1}, r"unknown settings \['temperature'\]"),
    ({"base_url": "http://h/v1", "model": "m", "api": "completions"}, "api must be one of"),
    ({"base_url": "http://h/v1", "model": "m", "max_concurrency": 0}, "max_concurrency must be >= 1"),
])
def test_a_bad_judge_is_refused_saying_what_to_fix(settings: dict, message: str) -> None:
    with pytest.raises(RewardsConfigError, match=message):
        RewardsConfig.from_dict({"judges": {"j": settings}})


def test_each_failure_kind_is_its_own_unscored_status() -> None:
    statuses = [status_of(kind) for kind in JudgeFailureKind]
    assert statuses == [RolloutStatus.JUDGE_FAILED, RolloutStatus.JUDGE_UNPARSEABLE, RolloutStatus.JUDGE_RATE_LIMITED]
    assert not any(s.scored or s.retryable for s in statuses)


def test_the_retry_hint_reads_back() -> None:
    error = JudgeError(JudgeFailureKind.RATE_LIMITED, "over quota", retry_after_s=2.26)
    assert error.detail() == f"over quota; {retry_hint(2.26)}"
    assert retry_after_hint(error.detail()) == 2.3
    assert retry_after_hint("judge failed: HTTP 500") is None


def test_bias_figures_from_recorded_pairs_and_lengths() -> None:
    m = JudgeMetrics()
    for agreed, flipped in [(True, None), (True, None), (False, True), (False, False)]:
        m.record_order_pair("j", agreed=agreed, flipped=flipped)
    for length, reward in [(10, 0.0), (20, 0.5), (30, 1.0)]:
        m.record_length_reward("j", length, reward)
    stats = m.bias("j")
    assert (stats.pairs, stats.flip_rate, stats.order_agreement, stats.length_samples) == (4, 0.25, 0.5, 3)
    assert stats.length_reward_correlation == pytest.approx(1.0)
    assert math.isnan(m.bias("other").flip_rate)
    assert m.sample("reward_judge_flip_rate", {"judge": "j"}) == 0.25


def test_a_reward_servers_metrics_include_the_judges_series() -> None:
    judge_metrics().record_call("metrics-test-judge", "judge_failed", 0.5)
    text = generate_latest(RewardMetrics().registry).decode()
    assert 'reward_judge_calls_total{judge="metrics-test-judge",outcome="judge_failed"} 1.0' in text
