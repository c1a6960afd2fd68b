"""Shaping rewards through a real reward server on loopback, with the shipped configs/rewards.yaml:
the group stage (Kimi 1.5's length reward) over a request's groups, unscored members, DAPO's and
open-r1-style composites, and today's rewards unchanged."""

from __future__ import annotations

import dataclasses

import pytest

from reward_core.contract import RolloutStatus
from reward_service.router.rewards_config import RewardsConfig, TaskSpec
from tests.integration.conftest import start_server
from trainer_client import RewardClient

RIGHT, WRONG = r"\boxed{3}", r"\boxed{4}"  # 9 characters each


@pytest.fixture(scope="module")
def server():
    shipped = RewardsConfig.from_yaml("configs/rewards.yaml")
    rewards = dataclasses.replace(shipped, tasks=shipped.tasks + (
        TaskSpec("kimi_gsm8k", "kimi_length", {"base": "gsm8k"}),
        TaskSpec("raise", "tests.integration.stress_tasks:RaiseTask"),
        TaskSpec("cosine_raise", "cosine_scaled", {"base": "raise"})))
    server = start_server(workers=2, rewards=rewards)
    yield server
    server.stop(0)


@pytest.fixture
def client(server):
    with RewardClient(server.address, timeout_s=60) as c:
        yield c


def row(rid, task, completion, gold="3", group="g"):
    return {"id": rid, "task": task, "completion": completion, "reference": gold, "group_id": group}


def scores(results):
    return {r.id: r.score for r in results}


def test_kimi_length_is_computed_over_each_group_of_the_request(client):
    results = client.score([
        row("a", "kimi_length", RIGHT), row("b", "kimi_length", RIGHT + "x" * 10),
        row("c", "kimi_length", WRONG + "x" * 20),  # g: lengths 9, 19, 29
        row("d", "kimi_length", WRONG, group="h"), row("e", "kimi_length", RIGHT + "x" * 4, group="h")])
    assert scores(results) == {"a": 0.5, "b": 0.0, "c": -0.5, "d": 0.0, "e": -0.5}
    assert all(r.status == RolloutStatus.OK for r in results)
    assert results[0].components == {"correct": 1.0, "length": 9.0}


def test_group_stats_are_over_the_shaped_scores(client):
    batch = client.score_batch([row("a", "kimi_length", RIGHT), row("b", "kimi_length", RIGHT + "x" * 10)])
    [group] = batch.groups  # both right, lengths 9 and 19: +0.5 and -0.5
    assert (group.mean, group.std, group.zero_variance) == (0.0, 0.5, False)


def test_an_unscored_member_stays_unscored_and_is_left_out_of_the_group(client):
    results = client.score([
        row("a", "kimi_length", RIGHT), row("bad", "kimi_length", RIGHT + "x" * 90, gold={"answer": ""}),
        row("b", "kimi_length", RIGHT + "x" * 10)])
    assert results[1].status == RolloutStatus.INVALID_REFERENCE and results[1].reward is None
    assert (results[0].score, results[2].score) == (0.5, -0.5)  # min/max over the two scored members only


def test_a_rollout_without_a_group_id_is_refused_not_zeroed(client):
    [r] = client.score([{"id": "x", "task": "kimi_length", "completion": RIGHT, "reference": "3"}])
    assert r.status == RolloutStatus.INVALID_REFERENCE and "group_id" in r.error


def test_a_group_sent_in_two_requests_is_shaped_per_request(client):
    [first] = client.score([row("a", "kimi_length", RIGHT)])
    [second] = client.score([row("b", "kimi_length", RIGHT + "x" * 10)])
    assert (first.score, second.score) == (0.0, 0.0)  # each request saw a group of one


def test_kimi_over_another_base(client):
    results = client.score([row("a", "kimi_gsm8k", "#### 3"), row("b", "kimi_gsm8k", "so #### 3")])
    assert scores(results) == {"a": 0.5, "b": -0.5}


def test_identical_rollouts_in_two_groups_are_shaped_in_each(client):
    results = client.score([row("a", "kimi_length", RIGHT, group="g1"), row("b", "kimi_length", RIGHT + "xx",
                                                                              group="g1"),
                            row("c", "kimi_length", RIGHT, group="g2"), row("d", "kimi_length", RIGHT + "xxxx",
                                                                              group="g2")])
    assert scores(results) == {"a": 0.5, "b": -0.5, "c": 0.5, "d": -0.5}


def test_the_composite_with_kimi_adds_half_the_group_length_reward(client):
    results = client.score([row("a", "math_kimi_length", RIGHT), row("b", "math_kimi_length", RIGHT + "x" * 10),
                            row("c", "math_kimi_length", WRONG + "x" * 20)])
    assert scores(results) == {"a": 1.25, "b": 1.0, "c": -0.25}
    assert results[0].components == {"math": 1.0, "kimi_length": 0.5, "kimi_length.correct": 1.0,
                                     "kimi_length.length": 9.0}


def test_dapo_math_pays_minus_one_for_a_wrong_answer(client):
    results = client.score([row("r", "dapo_math", RIGHT), row("w", "dapo_math", WRONG),
                            row("n", "dapo_math", "nothing")])
    assert scores(results) == {"r": 1.0, "w": -1.0, "n": -1.0}
    assert results[2].components == {"math_dapo": -1.0, "soft_overlong": 0.0}


def test_verl_gsm8k_pays_the_format_score_for_a_well_formed_wrong_answer(client):
    results = client.score([row("r", "gsm8k_verl", "#### 3"), row("w", "gsm8k_verl", "#### 5"),
                            row("n", "gsm8k_verl", "5")])
    assert scores(results) == {"r": 1.0, "w": 0.1, "n": 0.0}


def test_r1_shaped_sums_cosine_tags_and_repetition(client):
    completion = "<think>\nfine\n</think>\n<answer>\n" + RIGHT + "\n</answer>"  # 50 characters
    [r] = client.score([row("a", "r1_shaped", completion)])
    assert r.components["tag_count"] == 1.0 and r.components["repetition_penalty"] == 0.0
    assert r.components["cosine_after_think.correct"] == 1.0 and r.components["cosine_after_think.length"] == 50.0
    assert r.score == pytest.approx(r.components["cosine_after_think"] + 1.0)


def test_a_base_that_fails_makes_the_shaped_reward_error_never_a_number(client):
    results = client.score([{"id": "x", "task": "cosine_raise", "completion": "raise", "reference": {}},
                            {"id": "y", "task": "cosine_raise", "completion": "fine", "reference": {}}])
    assert results[0].status == RolloutStatus.ERROR and results[0].reward is None
    assert results[1].status == RolloutStatus.OK and results[1].components["correct"] == 1.0


def test_todays_rewards_are_unchanged(client):
    [fmt, plain] = client.score([row("f", "math_with_format", "<think>x</think><answer>" + RIGHT + "</answer>"),
                                 row("m", "math", WRONG)])
    assert (fmt.score, fmt.components) == (pytest.approx(1.2), {"math": 1.0, "format": 1.0})
    assert (plain.score, plain.status, plain.components) == (0.0, RolloutStatus.OK, {"math": 0.0})
