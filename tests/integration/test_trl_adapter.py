"""The reward service as a TRL reward function, against a real server on loopback.

First the adapter on its own (one request per call, statuses, the unscored policies),
then TRL's real ``GRPOTrainer`` for a few steps on the tiny model with the adapter as its
only reward function. There, rows of the ``raise`` test task always score 1, ``gsm8k``
rows score what the untrained model earns (0 or 1), and rows naming a task the server does
not know come back unscored: the adapter returns ``None`` for them and TRL must leave
them out of its reward mean (so the mean is not pulled towards 0) and give them
advantage 0.
"""

from __future__ import annotations

import math

import pytest

from reward_core.clients import EndpointUnreachable
from reward_core.ports import free_port
from tests.integration.conftest import start_server
from trainer_client.trl_adapter import NothingScoredError, RewardServiceReward


def _call(reward: RewardServiceReward, completions: list[str], tasks: list[str], gold: str = "4"):
    prompts = [f"p{i // 2}" for i in range(len(completions))]  # groups of two
    return reward(prompts=prompts, completions=completions, task=tasks, reference=[{"answer": gold}] * len(tasks),
                  trainer_state=None)


class _CountingStub:
    """Counts Score calls on the client's stub."""

    def __init__(self, stub):
        self._stub, self.score_calls = stub, 0

    def Score(self, *args, **kwargs):  # noqa: N802 - the gRPC method name
        self.score_calls += 1
        return self._stub.Score(*args, **kwargs)


def test_a_whole_batch_goes_out_in_one_request(reward_server):
    with RewardServiceReward(reward_server.address, timeout_s=30) as reward:
        stub = reward.client._stub = _CountingStub(reward.client._stub)
        rewards = _call(reward, ["#### 4", "#### 5", "#### 4", "#### 4"], ["gsm8k"] * 4)
    assert rewards == [1.0, 0.0, 1.0, 1.0]
    assert stub.score_calls == 1


def test_unscored_rollouts_come_back_none_not_zero(reward_server):
    with RewardServiceReward(reward_server.address, timeout_s=30) as reward:
        rewards = _call(reward, ["raise", "fine", "#### 5", "#### 4"], ["raise", "raise", "gsm8k", "no_such_task"])
    assert rewards == [None, 1.0, 0.0, None]
    assert [r.status.name for r in reward.last_results] == ["ERROR", "OK", "OK", "UNKNOWN_TASK"]


def test_drop_group_drops_every_completion_of_a_group_with_an_unscored_one(reward_server):
    with RewardServiceReward(reward_server.address, timeout_s=30, unscored="drop_group") as reward:
        rewards = _call(reward, ["raise", "fine", "fine", "fine"], ["raise"] * 4)
    assert rewards == [None, None, 1.0, 1.0]


def test_metrics_go_to_trls_log_metric(reward_server):
    logged: dict[str, float] = {}
    with RewardServiceReward(reward_server.address, timeout_s=30, name="svc") as reward:
        reward(prompts=["p", "p", "q", "q"], completions=["raise", "fine", "fine", "fine"], task=["raise"] * 4,
               reference=[{}] * 4, log_metric=logged.__setitem__)
    assert logged["svc/unscored_frac"] == 0.25
    assert logged["svc/zero_variance_frac"] == 1.0  # both groups: every scored reward is 1
    assert logged["svc/score_s"] > 0


def test_step_scores_pass_through_to_trls_logs(reward_server):
    metrics, extra = {}, {}
    reward = RewardServiceReward(reward_server.address, task="steps", reference="answer")
    rewards = reward(["q", "q"], ["3 + 4 = 7\n7 * 2 = 15\n#### 15", "3 + 4 = 7\n7 * 2 = 14\n#### 14"],
                     answer=["14", "14"], log_metric=metrics.__setitem__, log_extra=extra.__setitem__)
    assert rewards == [0.0, 1.0]
    assert [[step["label"] for step in steps] for steps in extra[f"{reward.__name__}_steps"]] \
        == [["correct", "wrong", "neutral"], ["correct", "correct", "neutral"]]
    assert metrics[f"{reward.__name__}/step_score_mean"] == pytest.approx(3 / 4)
    assert [len(r.steps) for r in reward.last_results] == [3, 3]


def test_nothing_scored_raises(reward_server):
    with RewardServiceReward(reward_server.address, timeout_s=30) as reward:
        with pytest.raises(NothingScoredError, match="UNKNOWN_TASK"):
            _call(reward, ["#### 4", "#### 4"], ["no_such_task"] * 2)


def test_nothing_scored_can_be_returned_as_all_none(reward_server):
    with RewardServiceReward(reward_server.address, timeout_s=30, fail_when_nothing_scored=False) as reward:
        assert _call(reward, ["#### 4", "#### 4"], ["no_such_task"] * 2) == [None, None]


def test_an_unreachable_endpoint_stops_the_run_at_the_first_call():
    with RewardServiceReward(f"127.0.0.1:{free_port()}", timeout_s=600, fail_when_nothing_scored=False) as reward:
        with pytest.raises(EndpointUnreachable, match="connection refused"):
            _call(reward, ["#### 4"], ["gsm8k"])


def test_a_request_that_fails_once_connected_counts_as_unscored():
    server = start_server()
    try:
        with RewardServiceReward(server.address, timeout_s=60, fail_when_nothing_scored=False) as reward:
            assert _call(reward, ["#### 4", "#### 5"], ["gsm8k"] * 2) == [1.0, 0.0]
            server.stop(0)                                  # the only server goes away mid-run
            assert _call(reward, ["#### 4", "#### 4"], ["gsm8k"] * 2) == [None, None]
        assert all(r.status.name == "ERROR" and "request failed" in r.error for r in reward.last_results)
    finally:
        server.stop(0)


# --- TRL's GRPOTrainer, a few steps -------------------------------------------------------------

G = 4  # num_generations
PROMPTS_PER_STEP = 4
STEPS = 3
# One step's prompts: one always-1 task, two real gsm8k problems, one unknown task (unscored).
TASKS = ("raise", "gsm8k", "no_such_task", "gsm8k")


class _RecordingReward(RewardServiceReward):
    """Keeps what TRL passed in and what the adapter returned, call by call."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[list, list[float | None]]] = []

    def __call__(self, prompts, completions, **kwargs):
        rewards = super().__call__(prompts, completions, **kwargs)
        self.seen.append((list(completions), rewards))
        return rewards


def test_trl_grpo_trainer_trains_on_our_rewards(reward_server, tmp_path):
    pytest.importorskip("trl")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from tests.grpo_fixtures import tiny_policy

    model, tokenizer = tiny_policy(seed=0)
    rows = [{"prompt": [{"role": "user", "content": f"What is {i} + 1?"}], "task": TASKS[i % len(TASKS)],
             "reference": {"answer": str(i + 1)}} for i in range(PROMPTS_PER_STEP * STEPS)]
    reward = _RecordingReward(reward_server.address, group_size=G, timeout_s=30)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=PROMPTS_PER_STEP * G,
                      num_generations=G, max_completion_length=12, max_steps=STEPS, learning_rate=1e-3,
                      logging_steps=1, report_to="none", save_strategy="no", use_cpu=True, disable_tqdm=True,
                      shuffle_dataset=False, seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=reward, args=args,
                          train_dataset=Dataset.from_list(rows))
    trainer.train()
    reward.close()

    assert len(reward.seen) == STEPS  # one call per step, each with the step's whole batch
    assert all(len(completions) == PROMPTS_PER_STEP * G for completions, _ in reward.seen)
    assert reward.seen[-1][0] == list(trainer._logs["completion"])  # the completions TRL trained on
    statuses = [r.status.name for r in reward.last_results]  # as the server answered
    assert statuses.count("UNKNOWN_TASK") == G
    assert all(r.scored for r in reward.last_results if r.status.name != "UNKNOWN_TASK")

    logs = [entry for entry in trainer.state.log_history if "rewards/reward_service/mean" in entry]
    assert len(logs) == STEPS
    for entry, (_, rewards) in zip(logs, reward.seen):
        scored = [r for r in rewards if r is not None]
        assert len(scored) == (PROMPTS_PER_STEP - 1) * G
        # TRL's mean is over scored rows only: the unscored ones are not read as 0.
        assert entry["rewards/reward_service/mean"] == pytest.approx(sum(scored) / len(scored))
        assert entry["reward_service/unscored_frac"] == pytest.approx(1 / PROMPTS_PER_STEP)

    last_rewards = list(trainer._logs["rewards"]["reward_service"])
    advantages = list(trainer._logs["advantages"])
    for ours, theirs, advantage in zip(reward.seen[-1][1], last_rewards, advantages):
        if ours is None:
            assert math.isnan(theirs) and advantage == 0.0  # masked: no signal from an unscored completion
        else:
            assert theirs == ours
