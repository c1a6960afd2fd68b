"""The GRPO update: micro-batch gradient accumulation reproduces the whole-batch gradient, per aggregation."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.grpo_fixtures import tiny_policy
from trainer_client.train.grpo_config import GrpoConfig, SamplingConfig
from trainer_client.train.grpo_update import TrainBatch, aggregation_weight, grpo_update, micro_batch_loss, single_pass
from trainer_client.train.rollouts import PromptRow, generate_groups

ROWS = [PromptRow(str(i), f"What is {i} + {i + 1}?", {"answer": str(2 * i + 1)}, "gsm8k") for i in range(3)]


def _batch(model, tokenizer, unscored_row: int | None = None):
    torch.manual_seed(0)
    ro = generate_groups(model, tokenizer, ROWS, SamplingConfig(group_size=4, max_new_tokens=10))
    advantages = torch.linspace(-1.5, 1.5, len(ro.texts))
    loss_mask = ro.completion_mask.clone()
    if unscored_row is not None:
        loss_mask[unscored_row] = False
        advantages[unscored_row] = 0.0
    return TrainBatch(ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, loss_mask, advantages,
                      None, None)


def _grads(model, batch, config):
    model.zero_grad(set_to_none=True)
    total = aggregation_weight(batch.loss_mask, config.loss_agg)
    for start in range(0, len(batch), config.micro_batch_size):
        micro = batch.rows(torch.arange(start, min(start + config.micro_batch_size, len(batch))))
        share = aggregation_weight(micro.loss_mask, config.loss_agg) / total
        if share:
            loss, _ = micro_batch_loss(model, micro, config, temperature=1.0, norm_len=10)
            (loss * share).backward()
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("agg", ["token", "sequence", "seq_sum_norm"])
def test_micro_batches_accumulate_to_the_whole_batch_gradient(agg):
    model, tokenizer = tiny_policy()
    batch = _batch(model, tokenizer, unscored_row=5)
    whole = _grads(model, batch, GrpoConfig(loss_agg=agg, micro_batch_size=len(batch)))
    split = _grads(model, batch, GrpoConfig(loss_agg=agg, micro_batch_size=5))
    for a, b in zip(whole, split):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)


def test_an_unscored_row_gets_no_gradient():
    model, tokenizer = tiny_policy()
    batch = _batch(model, tokenizer, unscored_row=0)
    config = GrpoConfig(micro_batch_size=1)
    model.zero_grad(set_to_none=True)
    loss, _ = micro_batch_loss(model, batch.rows(torch.tensor([0])), config, temperature=1.0, norm_len=10)
    loss.backward()
    assert all(p.grad is None or not p.grad.any() for p in model.parameters())


def test_positive_advantages_become_likelier_after_an_update():
    model, tokenizer = tiny_policy()
    batch = _batch(model, tokenizer)
    batch.advantages = torch.where(torch.arange(len(batch)) % 2 == 0, 1.0, -1.0)
    config = GrpoConfig(micro_batch_size=4, ppo_epochs=2)
    before = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    from trainer_client.train.logprobs import batched_logprobs

    args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    batch.old_logp = batched_logprobs(before, *args, temperature=1.0, micro_batch_size=8)
    stats = grpo_update(model, optimizer, batch, config, temperature=1.0, norm_len=10, max_grad_norm=1.0, seed=0,
                        step=0)
    after = batched_logprobs(model, *args, temperature=1.0, micro_batch_size=8)
    delta = torch.where(batch.loss_mask, after - batch.old_logp, 0.0).sum(1)
    assert (delta[0::2] > 0).all() and (delta[1::2] < 0).all()
    assert stats["optimizer_steps"] == 2 and stats["approx_kl"] >= 0


def test_single_pass_only_when_each_completion_is_seen_once_by_unchanged_weights():
    assert single_pass(GrpoConfig(), 64)
    assert not single_pass(GrpoConfig(ppo_epochs=2), 64)
    assert not single_pass(GrpoConfig(mini_batch_size=16), 64)
    assert single_pass(GrpoConfig(mini_batch_size=64), 64)
