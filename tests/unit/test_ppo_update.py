"""The PPO update and its critic: per-token values, micro-batch accumulation, masking, and the critic's layout."""

from __future__ import annotations

import pytest
import torch

from tests.grpo_fixtures import save_tiny_policy
from trainer_client.train.config import ModelConfig, SamplingConfig
from trainer_client.train.grpo_update import aggregation_weight
from trainer_client.train.logprobs import batched_logprobs
from trainer_client.train.models import load_policy, load_tokenizer
from trainer_client.train.ppo_config import PpoConfig
from trainer_client.train.ppo_update import PpoBatch, micro_batch_loss, ppo_update
from trainer_client.train.rollouts import PromptRow, generate_groups
from trainer_client.train.value_head import batched_values, load_critic, token_values

ROWS = [PromptRow(str(i), f"What is {i} + {i + 1}?", {"answer": str(2 * i + 1)}, "gsm8k") for i in range(3)]


@pytest.fixture(scope="module")
def start(tmp_path_factory):
    return str(save_tiny_policy(tmp_path_factory.mktemp("start")))


def _models(start):
    config = ModelConfig(path=start)
    return load_policy(start, config, trainable=True), load_critic(start, config, trainable=True), load_tokenizer(start)


def _batch(policy, critic, tokenizer, unscored_row: int | None = None) -> PpoBatch:
    torch.manual_seed(0)
    ro = generate_groups(policy, tokenizer, ROWS, SamplingConfig(group_size=4, max_new_tokens=10))
    tensors = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)
    loss_mask = ro.completion_mask.clone()
    if unscored_row is not None:
        loss_mask[unscored_row] = False
    n, t = ro.completion_ids.shape
    advantages = torch.linspace(-1.5, 1.5, n * t).view(n, t)
    returns = torch.linspace(0.0, 1.0, n * t).view(n, t)
    old_logp = batched_logprobs(policy, *tensors, temperature=1.0, micro_batch_size=8)
    old_values = batched_values(critic, *tensors, micro_batch_size=8) + 0.05
    return PpoBatch(*tensors, loss_mask, advantages, returns, old_logp, old_values, None)


def _grads(policy, critic, batch, config):
    for model in (policy, critic):
        model.zero_grad(set_to_none=True)
    total = aggregation_weight(batch.loss_mask, config.loss_agg)
    for start in range(0, len(batch), config.micro_batch_size):
        micro = batch.rows(torch.arange(start, min(start + config.micro_batch_size, len(batch))))
        share = aggregation_weight(micro.loss_mask, config.loss_agg) / total
        if share:
            loss, _ = micro_batch_loss(policy, critic, micro, config, temperature=1.0, norm_len=10)
            (loss * share).backward()
    return [p.grad.clone() for m in (policy, critic) for p in m.parameters() if p.grad is not None]


def test_a_new_critic_starts_at_zero_and_saves_its_head(start, tmp_path):
    policy, critic, tokenizer = _models(start)
    batch = _batch(policy, critic, tokenizer)
    assert torch.equal(batch.old_values, torch.full_like(batch.old_values, 0.05))  # zero head + the test's 0.05
    with torch.no_grad():
        critic.score.weight.normal_()
    critic.save_pretrained(tmp_path / "critic")
    again = load_critic(str(tmp_path / "critic"), ModelConfig(path=start), trainable=False)
    assert torch.equal(again.score.weight, critic.score.weight)
    args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    torch.testing.assert_close(token_values(again, *args), token_values(critic, *args))


def test_values_do_not_depend_on_padding_or_batch_neighbours(start):
    policy, critic, tokenizer = _models(start)
    with torch.no_grad():
        critic.score.weight.normal_()
    batch = _batch(policy, critic, tokenizer)
    args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    together = batched_values(critic, *args, micro_batch_size=len(batch))
    alone = batched_values(critic, *args, micro_batch_size=1)
    torch.testing.assert_close(torch.where(batch.completion_mask, together, 0.0),
                               torch.where(batch.completion_mask, alone, 0.0), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("agg", ["token", "sequence", "seq_sum_norm"])
def test_micro_batches_accumulate_to_the_whole_batch_gradient(start, agg):
    policy, critic, tokenizer = _models(start)
    batch = _batch(policy, critic, tokenizer, unscored_row=5)
    whole = _grads(policy, critic, batch, PpoConfig(loss_agg=agg, micro_batch_size=len(batch), entropy_coef=0.01))
    split = _grads(policy, critic, batch, PpoConfig(loss_agg=agg, micro_batch_size=5, entropy_coef=0.01))
    assert len(whole) == len(split) > 0
    for a, b in zip(whole, split):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)


def test_an_unscored_row_gets_no_gradient_in_either_network(start):
    policy, critic, tokenizer = _models(start)
    batch = _batch(policy, critic, tokenizer, unscored_row=0)
    loss, _ = micro_batch_loss(policy, critic, batch.rows(torch.tensor([0])), PpoConfig(), temperature=1.0,
                               norm_len=10)
    loss.backward()
    for model in (policy, critic):
        assert all(p.grad is None or not p.grad.any() for p in model.parameters())


def test_the_update_moves_the_policy_by_the_advantages_and_the_critic_to_the_returns(start):
    policy, critic, tokenizer = _models(start)
    batch = _batch(policy, critic, tokenizer)
    sign = torch.where(torch.arange(len(batch)) % 2 == 0, 1.0, -1.0)
    batch.advantages = sign[:, None].expand_as(batch.advantages).clone()
    batch.returns = torch.ones_like(batch.returns)
    args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    optimizer = torch.optim.AdamW([{"params": list(policy.parameters())},
                                   {"params": list(critic.parameters()), "lr": 1e-2}], lr=1e-3)
    stats = ppo_update(policy, critic, optimizer, batch, PpoConfig(micro_batch_size=4, ppo_epochs=2, value_clip=None),
                       temperature=1.0, norm_len=10, max_grad_norm=1.0, seed=0, step=0)
    after = batched_logprobs(policy, *args, temperature=1.0, micro_batch_size=8)
    delta = torch.where(batch.loss_mask, after - batch.old_logp, 0.0).sum(1)
    assert (delta[0::2] > 0).all() and (delta[1::2] < 0).all()
    values = batched_values(critic, *args, micro_batch_size=8)
    assert (values[batch.loss_mask] > batch.old_values[batch.loss_mask]).all()  # towards the returns of 1
    assert stats["optimizer_steps"] == 2 and stats["value_loss"] > 0 and stats["critic_grad_norm"] > 0
