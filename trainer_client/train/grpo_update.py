"""The group trainer's policy update (the GRPO family): ``ppo_epochs`` passes of clipped-surrogate steps.

The loss is the clipped surrogate (+ KL, + entropy) on per-completion [N] or per-token
[N, Tc] advantages (process supervision).

Each pass shuffles the completions (with a generator seeded by run seed, step and
epoch, so resume is exact) into mini-batches of ``mini_batch_size`` (one optimizer step
each; 0 means the whole batch) and runs them in micro-batches of ``micro_batch_size``
rows, or by token budget (``max_tokens_per_micro_batch``, ``micro_batches``), with gradient
accumulation. Micro-batch losses are weighted so that the accumulated
gradient equals that of the whole mini-batch under the chosen aggregation: by valid
tokens (``token``), by sequences with a valid token (``sequence``) or by rows
(``seq_sum_norm``).

Old log-probs are the ones stored at sampling time; when the batch is optimised exactly
once (one epoch, one mini-batch) the policy has not moved before its forward pass, so
``old_logp`` may be None and the current log-probs (detached) stand in for it, as in
TRL's ``GRPOTrainer``, saving a forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from trainer_client.rl import clipped_policy_loss, entropy_bonus, kl_estimate, kl_loss, masked_mean
from trainer_client.rl.masking import aggregation_weight
from trainer_client.train.grpo_config import GrpoConfig
from trainer_client.train.logprobs import completion_logprobs
from trainer_client.train.micro_batches import plan_micro_batches, used_columns


@dataclass
class TrainBatch:
    """One step's training data, one row per completion."""

    prompt_ids: torch.Tensor  # [N, Tp]
    prompt_mask: torch.Tensor  # [N, Tp] bool
    completion_ids: torch.Tensor  # [N, Tc]
    completion_mask: torch.Tensor  # [N, Tc] bool: the completion's own tokens (attended)
    loss_mask: torch.Tensor  # [N, Tc] bool: completion tokens of scored, kept completions
    advantages: torch.Tensor  # [N] per completion, or [N, Tc] per token (process supervision)
    old_logp: torch.Tensor | None  # [N, Tc], None: single pass (see module docstring)
    ref_logp: torch.Tensor | None  # [N, Tc], None when beta == 0

    def __len__(self) -> int:
        return self.completion_ids.shape[0]

    def rows(self, index: torch.Tensor) -> TrainBatch:
        pick = lambda t: None if t is None else t[index]  # noqa: E731
        return TrainBatch(self.prompt_ids[index], self.prompt_mask[index], self.completion_ids[index],
                          self.completion_mask[index], self.loss_mask[index], self.advantages[index],
                          pick(self.old_logp), pick(self.ref_logp))

    def columns(self, start: int, end: int) -> TrainBatch:
        """Prompt columns ``[start:]`` and completion columns ``[:end]`` (``micro_batches.used_columns``)."""
        cut = lambda t: None if t is None else t[:, :end]  # noqa: E731
        advantages = self.advantages if self.advantages.dim() == 1 else cut(self.advantages)
        return TrainBatch(self.prompt_ids[:, start:], self.prompt_mask[:, start:], cut(self.completion_ids),
                          cut(self.completion_mask), cut(self.loss_mask), advantages, cut(self.old_logp),
                          cut(self.ref_logp))


def single_pass(config: GrpoConfig, batch_size: int) -> bool:
    """Whether each completion is optimised on exactly once with the sampling-time weights."""
    return config.ppo_epochs == 1 and (config.mini_batch_size == 0 or config.mini_batch_size >= batch_size)


def micro_batch_loss(model: torch.nn.Module, mb: TrainBatch, config: GrpoConfig, *, temperature: float,
                     norm_len: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Loss of one micro-batch (with graph) under the batch's own aggregation, and detached stats."""
    out = completion_logprobs(model, mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask,
                              temperature=temperature, with_entropy=True, entropy_grad=config.entropy_coef > 0)
    old = out.logp.detach() if mb.old_logp is None else mb.old_logp
    loss, stats = clipped_policy_loss(out.logp, old, mb.advantages, mb.loss_mask, eps_low=config.eps_low,
                                      eps_high=config.eps_high, agg=config.loss_agg, dual_clip_c=config.dual_clip_c,
                                      norm_len=norm_len)
    stats = {k: stats[k] for k in ("clip_frac", "approx_kl", "ratio_mean")}
    stats["policy_loss"] = loss.detach()
    if mb.ref_logp is not None:
        kl = kl_estimate(out.logp, mb.ref_logp, config.kl_estimator)
        loss = loss + kl_loss(kl, mb.loss_mask, config.beta, config.loss_agg, norm_len)
        stats["kl"] = masked_mean(kl.detach(), mb.loss_mask)
    stats["entropy"] = masked_mean(out.entropy.detach(), mb.loss_mask)
    if config.entropy_coef:
        loss = loss + entropy_bonus(out.entropy, mb.loss_mask, config.entropy_coef, config.loss_agg, norm_len)
    return loss, stats


def grpo_update(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: TrainBatch, config: GrpoConfig, *,
                temperature: float, norm_len: int, max_grad_norm: float, seed: int, step: int) -> dict[str, Any]:
    """Runs the optimisation passes over ``batch``; returns mean stats (token-weighted) and grad norms."""
    model.train()
    n = len(batch)
    mini = config.mini_batch_size or n
    totals: dict[str, float] = {}
    weight_sum = 0.0
    grad_norms: list[float] = []
    optimizer_steps = 0
    for epoch in range(config.ppo_epochs):
        gen = torch.Generator().manual_seed(seed * 1_000_003 + step * 1_009 + epoch)
        order = torch.randperm(n, generator=gen) if config.ppo_epochs > 1 or mini < n else torch.arange(n)
        for start in range(0, n, mini):
            mb_rows = order[start: start + mini].to(batch.completion_ids.device)
            mini_batch = batch.rows(mb_rows)
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
                loss, stats = micro_batch_loss(model, micro, config, temperature=temperature, norm_len=norm_len)
                (loss * share).backward()
                tokens = float(micro.loss_mask.sum())
                for key, value in stats.items():
                    totals[key] = totals.get(key, 0.0) + float(value) * tokens
                totals["loss"] = totals.get("loss", 0.0) + float(loss.detach()) * tokens
                weight_sum += tokens
            params = [p for p in model.parameters() if p.grad is not None]
            norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm if max_grad_norm > 0 else float("inf"))
            grad_norms.append(float(norm))
            optimizer.step()
            optimizer_steps += 1
    result: dict[str, Any] = {k: v / weight_sum for k, v in totals.items()} if weight_sum else {}
    result["grad_norm"] = sum(grad_norms) / len(grad_norms) if grad_norms else None
    result["optimizer_steps"] = optimizer_steps
    return result
