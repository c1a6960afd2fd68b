"""Micro-batches by token budget (max_tokens_per_micro_batch): the plan keeps every pass within the budget,
and the accumulated gradient (GRPO and PPO) and the log-probs equal the whole batch's."""

from __future__ import annotations

import pytest
import torch

from tests.grpo_fixtures import save_tiny_policy, tiny_policy
from trainer_client.train.config import ModelConfig, SamplingConfig
from trainer_client.train.grpo_config import GrpoConfig
from trainer_client.train.grpo_update import TrainBatch, grpo_update
from trainer_client.train.logprobs import batched_logprobs
from trainer_client.train.micro_batches import padded_tokens, plan_micro_batches, used_columns
from trainer_client.train.models import load_policy
from trainer_client.train.ppo_config import PpoConfig
from trainer_client.train.ppo_update import PpoBatch, ppo_update
from trainer_client.train.rollouts import PromptRow, generate_groups
from trainer_client.train.value_head import batched_values, load_critic

# prompts of different lengths, so left padding and the budget both bite
ROWS = [PromptRow("a", "What is 2 + 3?", {"answer": "5"}, "gsm8k"),
        PromptRow("b", "Compute 3 * 4 - 2 + 9 - 1 and give the result.", {"answer": "18"}, "gsm8k"),
        PromptRow("c", "7 + 8?", {"answer": "15"}, "gsm8k")]


def _masks(prompt_lengths, completion_lengths, tp=6, tc=6):
    prompt = torch.tensor([[j >= tp - n for j in range(tp)] for n in prompt_lengths])
    completion = torch.tensor([[j < n for j in range(tc)] for n in completion_lengths])
    return prompt, completion


def test_rows_are_packed_longest_first_within_the_budget():
    prompt, completion = _masks([2, 3, 1, 4], [5, 1, 2, 2])  # totals 7, 4, 3, 6
    plan = plan_micro_batches(prompt, completion, max_rows=8, max_tokens=12)
    assert [p.tolist() for p in plan] == [[0], [1, 3], [2]]  # hand-packed: 1x7, then 2x(4+2)=12, then 3
    assert all(padded_tokens(prompt[p], completion[p]) <= 12 for p in plan)


def test_a_row_longer_than_the_budget_runs_alone_and_max_rows_still_caps_a_pass():
    prompt, completion = _masks([4, 1, 1, 1], [6, 1, 1, 1])
    plan = plan_micro_batches(prompt, completion, max_rows=2, max_tokens=8)
    assert [p.tolist() for p in plan] == [[0], [1, 2], [3]]


def test_without_a_budget_passes_are_consecutive_chunks_of_max_rows():
    prompt, completion = _masks([1] * 5, [1] * 5)
    assert [p.tolist() for p in plan_micro_batches(prompt, completion, max_rows=2)] == [[0, 1], [2, 3], [4]]


def test_used_columns_cut_the_padding_no_row_attends_to():
    prompt, completion = _masks([2, 3], [1, 4])
    assert used_columns(prompt, completion) == (3, 4)


@pytest.fixture(scope="module")
def rollouts():
    model, tokenizer = tiny_policy()
    torch.manual_seed(0)
    return generate_groups(model, tokenizer, ROWS, SamplingConfig(group_size=4, max_new_tokens=12))


def _budget(ro) -> int:
    """A budget that forces several passes: room for about three of the longest rows."""
    longest = int(ro.prompt_mask.sum(1).max() + ro.completion_mask.sum(1).max())
    return 3 * longest


def _grads_after(update, models) -> list[torch.Tensor]:
    for model in models:
        model.zero_grad(set_to_none=True)
    update()
    return [p.grad.clone() for model in models for p in model.parameters()]


@pytest.mark.parametrize("agg", ["token", "sequence", "seq_sum_norm"])
def test_grpo_gradient_by_token_budget_equals_the_whole_batch(rollouts, agg):
    model, _ = tiny_policy()
    ro = rollouts
    loss_mask = ro.completion_mask.clone()
    loss_mask[5] = False  # an unscored row
    batch = TrainBatch(ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, loss_mask,
                       torch.linspace(-1.5, 1.5, len(ro.texts)), None, None)
    budget = _budget(ro)
    assert len(plan_micro_batches(ro.prompt_mask, ro.completion_mask, max_rows=64, max_tokens=budget)) >= 3
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # leaves the weights, and the gradients, in place
    grads = []
    for config in (GrpoConfig(loss_agg=agg, micro_batch_size=len(batch)),
                   GrpoConfig(loss_agg=agg, micro_batch_size=len(batch), max_tokens_per_micro_batch=budget)):
        grads.append(_grads_after(lambda c=config: grpo_update(model, optimizer, batch, c, temperature=1.0,
                                                               norm_len=12, max_grad_norm=0.0, seed=0, step=0),
                                  [model]))
    assert any(g.abs().sum() > 0 for g in grads[0])
    for whole, split in zip(*grads):
        torch.testing.assert_close(whole, split, atol=1e-6, rtol=1e-4)


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    return save_tiny_policy(tmp_path_factory.mktemp("policy"))


def test_ppo_gradients_by_token_budget_equal_the_whole_batch(rollouts, policy_dir):
    config = ModelConfig(path=str(policy_dir))
    policy = load_policy(str(policy_dir), config, trainable=True)
    critic = load_critic(str(policy_dir), config, trainable=True)
    ro = rollouts
    tensors = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)
    old_logp = batched_logprobs(policy, *tensors, temperature=1.0, micro_batch_size=64) - 0.05
    old_values = batched_values(critic, *tensors, micro_batch_size=64) + 0.1
    advantages = torch.linspace(-1, 1, ro.completion_ids.numel()).view_as(old_logp)
    batch = PpoBatch(*tensors, ro.completion_mask, advantages, advantages * 0.5 + 0.3, old_logp, old_values, None)
    budget = _budget(ro)
    optimizer = torch.optim.SGD([*policy.parameters(), *critic.parameters()], lr=0.0)
    grads = []
    for ppo in (PpoConfig(ppo_epochs=1, micro_batch_size=len(batch)),
                PpoConfig(ppo_epochs=1, micro_batch_size=len(batch), max_tokens_per_micro_batch=budget)):
        grads.append(_grads_after(lambda c=ppo: ppo_update(policy, critic, optimizer, batch, c, temperature=1.0,
                                                           norm_len=12, max_grad_norm=0.0, seed=0, step=0),
                                  [policy, critic]))
    for whole, split in zip(*grads):
        torch.testing.assert_close(whole, split, atol=1e-6, rtol=1e-4)


def test_logprobs_and_values_by_token_budget_equal_the_whole_batch(rollouts, policy_dir):
    config = ModelConfig(path=str(policy_dir))
    policy = load_policy(str(policy_dir), config, trainable=False)
    critic = load_critic(str(policy_dir), config, trainable=False)
    ro = rollouts
    tensors = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)
    mask = ro.completion_mask
    whole = batched_logprobs(policy, *tensors, temperature=1.0, micro_batch_size=64)
    split = batched_logprobs(policy, *tensors, temperature=1.0, micro_batch_size=64, max_tokens=_budget(ro))
    torch.testing.assert_close(whole[mask], split[mask], atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        torch.nn.init.normal_(critic.score.weight)  # a new head is zero: give the values something to differ by
    values = batched_values(critic, *tensors, micro_batch_size=64)
    torch.testing.assert_close(values[mask], batched_values(critic, *tensors, micro_batch_size=64,
                                                            max_tokens=_budget(ro))[mask], atol=1e-5, rtol=1e-5)
