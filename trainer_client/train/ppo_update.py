"""The PPO update: ``ppo_epochs`` passes of mini-batch steps on the policy and the critic together.

Per micro-batch the loss is

    clipped surrogate(logp, old_logp, per-token advantages)          (policy)
    [+ kl_coef * KL(pi || pi_ref)   when the KL is in the loss]      (policy)
    [- entropy_coef * entropy]                                       (policy)
    + clipped value loss(V, old V, returns)                          (critic)

each term aggregated over the valid tokens as ``loss_agg`` says. Policy and critic are
separate networks with one AdamW (a parameter group each, so the critic has its own
learning rate), so the value loss needs no coefficient: it only reaches the critic, and
Adam is blind to a constant scale. Gradients are clipped per network.

Each pass shuffles the completions with a generator seeded by (run seed, step, epoch),
so resume is exact, into mini-batches of ``mini_batch_size`` (one optimizer step each; 0
means the whole batch) run as micro-batches of ``micro_batch_size`` rows, or by token
budget (``max_tokens_per_micro_batch``, ``micro_batches``), with gradient accumulation,
weighted so that the accumulated gradient is the mini-batch's (as GRPO's ``grpo_update``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch

from trainer_client.rl import clipped_policy_loss, entropy_bonus, kl_estimate, kl_loss, masked_mean, value_loss
from trainer_client.rl.masking import aggregation_weight
from trainer_client.train.logprobs import completion_logprobs
from trainer_client.train.micro_batches import plan_micro_batches, used_columns
from trainer_client.train.ppo_config import PpoConfig
from trainer_client.train.value_head import token_values


@dataclass
class PpoBatch:
    """One step's training data, one row per completion; token tensors are [N, Tc]."""

    prompt_ids: torch.Tensor  # [N, Tp]
    prompt_mask: torch.Tensor  # [N, Tp] bool
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor  # bool: the completion's own tokens (attended)
    loss_mask: torch.Tensor  # bool: tokens of scored completions
    advantages: torch.Tensor  # per token
    returns: torch.Tensor  # value targets
    old_logp: torch.Tensor  # rollout policy
    old_values: torch.Tensor  # rollout critic
    ref_logp: torch.Tensor | None  # frozen start policy; only when the KL is in the loss

    def __len__(self) -> int:
        return self.completion_ids.shape[0]

    def rows(self, index: torch.Tensor) -> PpoBatch:
        return PpoBatch(**{f.name: None if getattr(self, f.name) is None else getattr(self, f.name)[index]
                           for f in fields(self)})

    def columns(self, start: int, end: int) -> PpoBatch:
        """Prompt columns ``[start:]`` and completion columns ``[:end]`` (``micro_batches.used_columns``)."""
        return PpoBatch(**{f.name: None if getattr(self, f.name) is None else
                           getattr(self, f.name)[:, start:] if f.name.startswith("prompt_") else
                           getattr(self, f.name)[:, :end] for f in fields(self)})


def micro_batch_loss(policy: torch.nn.Module, critic: torch.nn.Module, mb: PpoBatch, config: PpoConfig, *,
                     temperature: float, norm_len: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Loss of one micro-batch (with graph through both networks) and its detached stats."""
    agg = config.loss_agg
    out = completion_logprobs(policy, mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask,
                              temperature=temperature, with_entropy=True, entropy_grad=config.entropy_coef > 0)
    policy_loss, p_stats = clipped_policy_loss(out.logp, mb.old_logp, mb.advantages, mb.loss_mask,
                                               eps_low=config.eps_low, eps_high=config.eps_high, agg=agg,
                                               norm_len=norm_len)
    loss = policy_loss
    stats = {k: p_stats[k] for k in ("clip_frac", "approx_kl", "ratio_mean")}
    stats["policy_loss"] = policy_loss.detach()
    if mb.ref_logp is not None:
        kl = kl_estimate(out.logp, mb.ref_logp, config.kl_estimator)
        loss = loss + kl_loss(kl, mb.loss_mask, config.kl_coef, agg, norm_len)
        stats["kl_loss_term"] = masked_mean(kl.detach(), mb.loss_mask)
    stats["entropy"] = masked_mean(out.entropy.detach(), mb.loss_mask)
    if config.entropy_coef:
        loss = loss + entropy_bonus(out.entropy, mb.loss_mask, config.entropy_coef, agg, norm_len)
    values = token_values(critic, mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask)
    v_loss, v_stats = value_loss(values, mb.old_values, mb.returns, mb.loss_mask, clip_range=config.value_clip,
                                 agg=agg, norm_len=norm_len)
    stats["value_loss"] = v_loss.detach()
    stats["value_clip_frac"] = v_stats["vf_clip_frac"]
    return loss + v_loss, stats


def _clip(model: torch.nn.Module, max_grad_norm: float) -> float:
    params = [p for p in model.parameters() if p.grad is not None]
    return float(torch.nn.utils.clip_grad_norm_(params, max_grad_norm if max_grad_norm > 0 else float("inf")))


def ppo_update(policy: torch.nn.Module, critic: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: PpoBatch,
               config: PpoConfig, *, temperature: float, norm_len: int, max_grad_norm: float, seed: int,
               step: int) -> dict[str, Any]:
    """Runs the optimisation passes over ``batch``; returns token-weighted mean stats and mean grad norms."""
    policy.train()
    critic.train()
    n = len(batch)
    mini = config.mini_batch_size or n
    totals: dict[str, float] = {}
    weight_sum = 0.0
    norms: dict[str, list[float]] = {"grad_norm": [], "critic_grad_norm": []}
    for epoch in range(config.ppo_epochs):
        gen = torch.Generator().manual_seed(seed * 1_000_003 + step * 1_009 + epoch)
        order = torch.randperm(n, generator=gen).to(batch.completion_ids.device)
        for start in range(0, n, mini):
            mini_batch = batch.rows(order[start: start + mini])
            total_weight = aggregation_weight(mini_batch.loss_mask, config.loss_agg)
            if not mini_batch.loss_mask.any():
                continue
            optimizer.zero_grad(set_to_none=True)
            for rows in plan_micro_batches(mini_batch.prompt_mask, mini_batch.completion_mask,
                                           max_rows=config.micro_batch_size,
                                           max_tokens=config.max_tokens_per_micro_batch):
                micro = mini_batch.rows(rows)
                share = aggregation_weight(micro.loss_mask, config.loss_agg) / total_weight
                if share == 0:
                    continue
                micro = micro.columns(*used_columns(micro.prompt_mask, micro.completion_mask))
                loss, stats = micro_batch_loss(policy, critic, micro, config, temperature=temperature,
                                               norm_len=norm_len)
                (loss * share).backward()
                tokens = float(micro.loss_mask.sum())
                for key, value in stats.items():
                    totals[key] = totals.get(key, 0.0) + float(value) * tokens
                totals["loss"] = totals.get("loss", 0.0) + float(loss.detach()) * tokens
                weight_sum += tokens
            norms["grad_norm"].append(_clip(policy, max_grad_norm))
            norms["critic_grad_norm"].append(_clip(critic, max_grad_norm))
            optimizer.step()
    result: dict[str, Any] = {k: v / weight_sum for k, v in totals.items()} if weight_sum else {}
    for key, values in norms.items():
        result[key] = sum(values) / len(values) if values else None
    result["optimizer_steps"] = len(norms["grad_norm"])
    return result
