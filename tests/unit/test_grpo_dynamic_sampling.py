"""Dynamic sampling: zero-variance groups are dropped and more prompts drawn, within the round limit."""

from __future__ import annotations

import concurrent.futures

import torch

from reward_core.clients import GroupResult
from reward_core.contract import GroupStats, RolloutResult, RolloutStatus
from tests.grpo_fixtures import tiny_policy
from trainer_client.train.collect import collect_step
from trainer_client.train.grpo_config import GrpoConfig, SamplingConfig
from trainer_client.train.reward_overlap import ScoringJob
from trainer_client.train.rollouts import PromptRow, PromptSampler


class FakeScorer:
    """Scores prompts whose number is even as all-equal (no signal), odd ones as mixed."""

    def __init__(self) -> None:
        self.wait_s = 0.0
        self.calls = 0

    def submit(self, groups):
        self.calls += 1
        results = []
        for group in groups:
            signal = int(group[0]["prompt"].split()[-1]) % 2 == 1
            rs = [RolloutResult(r["id"], RolloutStatus.OK, score=float(signal and k == 0), task="gsm8k",
                                group_id=r["group_id"]) for k, r in enumerate(group)]
            results.append(GroupResult(group[0]["group_id"], rs, GroupStats(group[0]["group_id"], len(rs), len(rs),
                                                                            0.0, 0.0, not signal)))
        future = concurrent.futures.Future()
        future.set_result(results)
        return ScoringJob(groups, future)

    def wait(self, job):
        return job.future.result()


ROWS = [PromptRow(str(i), f"prompt {i}", {"answer": "1"}, "gsm8k") for i in range(40)]
SAMPLING = SamplingConfig(prompts_per_step=4, group_size=2, max_new_tokens=4, generation_batch_prompts=3)


def test_only_groups_with_signal_are_kept_and_the_batch_is_filled():
    model, tokenizer = tiny_policy()
    torch.manual_seed(0)
    data = collect_step(model, tokenizer, PromptSampler(ROWS, seed=0), FakeScorer(), SAMPLING,
                        GrpoConfig(dynamic_sampling=True, max_sampling_rounds=5), step=0)
    assert len(data.results) == 4 and data.rollouts.num_groups == 4
    assert all(int(row.prompt.split()[-1]) % 2 == 1 for row in data.rows)
    assert data.rounds >= 2 and len(data.sampled_results) > 4
    assert any(data.sampled_zero_variance)


def test_without_dynamic_sampling_every_group_is_kept():
    model, tokenizer = tiny_policy()
    data = collect_step(model, tokenizer, PromptSampler(ROWS, seed=0), FakeScorer(), SAMPLING, GrpoConfig(), step=0)
    assert data.rounds == 1 and len(data.results) == 4


def test_sampling_rounds_are_bounded():
    model, tokenizer = tiny_policy()
    even = [r for r in ROWS if int(r.id) % 2 == 0]  # no group ever carries signal
    data = collect_step(model, tokenizer, PromptSampler(even, seed=0), FakeScorer(), SAMPLING,
                        GrpoConfig(dynamic_sampling=True, max_sampling_rounds=3), step=0)
    assert data.rounds == 3 and data.results == []
