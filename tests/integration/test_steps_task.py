"""The ``steps`` task through a real server: step scores with spans, ListTasks, composites, JSONL."""

from __future__ import annotations

import json

import pytest

from reward_core.contract import RolloutStatus
from reward_service.cli import main as reward_service_main
from reward_service.router.rewards_config import CompositeSpec, RewardsConfig, TaskSpec
from tests.integration.conftest import start_server
from trainer_client import RewardClient

COMPLETION = "Step 1: 48/2 = 24\nStep 2: 24 + 10 = 35\nStep 3: she is happy\n#### 35"


@pytest.fixture(scope="module")
def server():
    rewards = RewardsConfig(
        tasks=(TaskSpec("steps_process", "steps", {"outcome_weight": 0.0, "process_weight": 1.0}),),
        rewards=(CompositeSpec("gsm8k_and_steps", {"gsm8k": 1.0, "steps_process": 0.5}),))
    server = start_server(workers=1, rewards=rewards)
    yield server
    server.stop(0)


def test_step_scores_come_back_with_their_spans(server):
    with RewardClient(server.address, timeout_s=60) as client:
        [result] = client.score([{"id": "a", "task": "steps", "completion": COMPLETION, "reference": "34"}])
        infos = {t.name: t for t in client.list_tasks()}
    assert result.status == RolloutStatus.OK and result.score == 0.0  # outcome only by default: 35 != 34
    assert [(COMPLETION[s.start:s.end], s.scored, s.score, s.label) for s in result.steps] == [
        ("Step 1: 48/2 = 24", True, 1.0, "correct"),
        ("Step 2: 24 + 10 = 35", True, 0.0, "wrong"),
        ("Step 3: she is happy\n#### 35", False, 0.0, "neutral")]
    assert result.components == {"outcome": 0.0, "process": 0.5}
    assert infos["steps"].produces_steps and infos["gsm8k_and_steps"].produces_steps
    assert not infos["gsm8k"].produces_steps


def test_a_process_variant_and_a_composite(server):
    with RewardClient(server.address, timeout_s=60) as client:
        process, mixed, outcome_only = client.score([
            {"id": "p", "task": "steps_process", "completion": COMPLETION, "reference": "34"},
            {"id": "m", "task": "gsm8k_and_steps", "completion": COMPLETION.replace("35", "34"),
             "reference": "34"},
            {"id": "o", "task": "gsm8k", "completion": COMPLETION, "reference": "35"}])
    assert process.score == 0.5
    # with 34 for 35, "24 + 10 = 34" holds and the answer is right: 1.0 * 1 + 0.5 * 1
    assert mixed.score == pytest.approx(1.5) and [s.label for s in mixed.steps] == ["correct", "correct", "neutral"]
    assert outcome_only.steps == ()  # an outcome-only task: nothing new


def test_unscored_stays_unscored(server):
    with RewardClient(server.address, timeout_s=60) as client:
        [bad] = client.score([{"id": "b", "task": "steps", "completion": COMPLETION, "reference": {"answer": ""}}])
    assert not bad.scored and bad.steps == ()


def test_jsonl_output_has_a_steps_field(tmp_path):
    rollouts = tmp_path / "in.jsonl"
    rollouts.write_text(json.dumps({"id": "a", "task": "steps", "completion": COMPLETION, "reference": "35"}) + "\n"
                        + json.dumps({"id": "b", "task": "gsm8k", "completion": "#### 4", "reference": "4"}) + "\n")
    out = tmp_path / "out.jsonl"
    assert reward_service_main(["score", "--in", str(rollouts), "--out", str(out), "--quiet", "--workers", "1"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [s["label"] for s in lines[0]["steps"]] == ["correct", "wrong", "neutral"]
    assert "steps" not in lines[1]
