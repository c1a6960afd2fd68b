"""PPO/GRPO loss terms on [B, T] token tensors. All losses are to be *minimised*.

- ``clipped_policy_loss``: PPO's clipped surrogate (Schulman et al., 2017,
  arXiv:1707.06347) with asymmetric "clip-higher" bounds (DAPO, Yu et al., 2025,
  arXiv:2503.14476) and optional dual clip for negative advantages (Ye et al., 2020,
  arXiv:1912.09729; as in verl ``compute_policy_loss``).
- ``value_loss``: clipped value loss as in OpenAI baselines ``ppo2`` / TRL ``PPOTrainer``.
- ``entropy_from_logits`` / ``entropy_bonus``: per-token policy entropy.
- ``kl_penalty_in_reward`` (PPO/RLHF, Ziegler et al., 2019, arXiv:1909.08593) versus
  ``kl_loss`` (GRPO: beta * KL directly in the loss).

Masked tokens are selected away before any exp or product, so padding holding garbage
(inf, NaN) yields neither NaN losses nor NaN gradients.
"""

from __future__ import annotations

import torch

from trainer_client.rl.kl import kl_k3
from trainer_client.rl.masking import AggMode, aggregate_loss, masked_mean


def _token_advantages(advantages: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Per-sequence [B] advantages broadcast to [B, T]; per-token [B, T] passed through."""
    if advantages.dim() == 1 and advantages.shape[0] == like.shape[0]:
        return advantages[:, None].expand_as(like)
    if advantages.shape == like.shape:
        return advantages
    raise ValueError(f"advantages must be [B] or [B, T] matching logp {tuple(like.shape)}, "
                     f"got {tuple(advantages.shape)}")


def clipped_policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor,
                        mask: torch.Tensor, *, eps_low: float = 0.2, eps_high: float = 0.2,
                        agg: AggMode = "token", dual_clip_c: float | None = None,
                        norm_len: int | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO clipped surrogate: per token, with ratio rho = exp(logp - old_logp),

        l = max(-A * rho, -A * clip(rho, 1 - eps_low, 1 + eps_high))
        l = min(l, -A * c)    where A < 0, if ``dual_clip_c`` = c (> 1) is given

    aggregated over valid tokens by ``aggregate_loss(l, mask, agg, norm_len)``.
    logp: [B, T] current policy log-probs of the sampled tokens (with grad); old_logp:
    [B, T] rollout-policy log-probs (treated as constants); advantages: [B] per sequence
    or [B, T] per token (constants); mask: [B, T] bool. GRPO/PPO: eps 0.2/0.2; DAPO
    clip-higher: eps_low 0.2, eps_high 0.28.

    Returns (loss, stats), stats detached scalars: ``clip_frac`` (share of valid tokens
    where the clipped term was the active one: the surrogate's gradient is 0 there),
    ``dual_clip_frac``, ``approx_kl`` (k3 estimate of KL(pi_old || pi), mean over
    valid tokens), ``ratio_mean``, ``ratio_max``.
    """
    if dual_clip_c is not None and dual_clip_c <= 1.0:
        raise ValueError(f"dual_clip_c must be > 1 (typically 3), got {dual_clip_c}")
    if not (logp.shape == old_logp.shape == mask.shape) or logp.dim() != 2:
        raise ValueError(f"logp, old_logp and mask must share one [B, T] shape; got {tuple(logp.shape)}, "
                         f"{tuple(old_logp.shape)}, {tuple(mask.shape)}")
    mask = mask.to(torch.bool)
    adv = _token_advantages(advantages.detach(), logp)
    adv = torch.where(mask, adv, torch.zeros_like(adv))
    log_ratio = torch.where(mask, logp - old_logp.detach(), torch.zeros_like(logp))
    ratio = torch.exp(log_ratio)
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    per_token = torch.maximum(unclipped, clipped)
    dual_active = torch.zeros_like(mask)
    if dual_clip_c is not None:
        cap = -adv * dual_clip_c
        dual_active = (adv < 0) & (per_token > cap)
        per_token = torch.where(dual_active, cap, per_token)
    loss = aggregate_loss(per_token, mask, agg, norm_len)
    with torch.no_grad():
        stats = {
            "clip_frac": masked_mean((clipped > unclipped).to(logp.dtype), mask),
            "dual_clip_frac": masked_mean(dual_active.to(logp.dtype), mask),
            "approx_kl": masked_mean(kl_k3(old_logp, logp, log_ratio_clip=None), mask),
            "ratio_mean": masked_mean(ratio, mask),
            "ratio_max": torch.where(mask, ratio, torch.zeros_like(ratio)).max(),
        }
    return loss, stats


def value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor,
               clip_range: float | None = None, agg: AggMode = "token",
               norm_len: int | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """0.5 * max((V - R)^2, (V_clip - R)^2), V_clip = V_old + clip(V - V_old, -c, c).

    Without ``clip_range`` it is 0.5 * (V - R)^2. All inputs [B, T]; ``old_values`` and
    ``returns`` (from ``gae_advantages``) are constants. Returns (loss, stats) with
    ``vf_clip_frac``: share of valid tokens where the clipped error was the larger one
    (the gradient is 0 there once V has left the clip range).
    """
    mask = mask.to(torch.bool)
    zeros = torch.zeros_like(values)
    v = torch.where(mask, values, zeros)
    old = torch.where(mask, old_values.detach(), zeros)
    ret = torch.where(mask, returns.detach(), zeros)
    err = (v - ret) ** 2
    if clip_range is None:
        per_token, clip_active = 0.5 * err, torch.zeros_like(mask)
    else:
        v_clipped = old + (v - old).clamp(-clip_range, clip_range)
        err_clipped = (v_clipped - ret) ** 2
        per_token, clip_active = 0.5 * torch.maximum(err, err_clipped), err_clipped > err
    loss = aggregate_loss(per_token, mask, agg, norm_len)
    return loss, {"vf_clip_frac": masked_mean(clip_active.to(values.dtype).detach(), mask)}


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """H = logsumexp(z) - sum_v softmax(z)_v z_v over the last (vocab) dim: [B, T, V] -> [B, T].

    The formula of verl ``entropy_from_logits``, applied to z - max(z): the shift leaves
    H and its gradient unchanged but avoids cancelling two large numbers (logits ~ 1e4
    lose ~1e-3 of H in float32 otherwise). -inf logits (banned tokens) contribute 0, not
    NaN. Compute in float32 if the logits are bf16 and the entropy is trained on.
    """
    z = logits - logits.amax(dim=-1, keepdim=True).detach()
    z = z.clamp(min=torch.finfo(logits.dtype).min)
    p = torch.softmax(z, dim=-1)
    return torch.logsumexp(z, dim=-1) - (p * z).sum(dim=-1)


def entropy_bonus(entropy: torch.Tensor, mask: torch.Tensor, coef: float, agg: AggMode = "token",
                  norm_len: int | None = None) -> torch.Tensor:
    """-coef * aggregate(H): *add* it to the loss; minimising it raises the entropy."""
    return -coef * aggregate_loss(entropy, mask, agg, norm_len)


def kl_penalty_in_reward(rewards_per_seq: torch.Tensor, kl_per_token: torch.Tensor,
                         mask: torch.Tensor, beta: float) -> torch.Tensor:
    """PPO/RLHF token rewards [B, T]: r_t = -beta * kl_t, plus the sequence reward on the last valid token.

    rewards_per_seq: [B]; kl_per_token: [B, T] (e.g. ``kl_estimate(logp_old, ref_logp,
    "k1")``, detached here: the penalty is part of the reward, not of the graph); mask: [B, T].
    Masked tokens get 0. A row with no valid token gets no reward at all, so an unscored
    (NaN) reward stays out as long as its row is masked; feed the result to ``gae_advantages``.
    """
    mask = mask.to(torch.bool)
    kl = torch.where(mask, kl_per_token.detach(), torch.zeros_like(kl_per_token))
    token_rewards = -beta * kl
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    last = torch.where(mask, positions, torch.full_like(positions, -1)).max(dim=1).values
    rows = torch.nonzero(last >= 0).squeeze(1)
    seq = rewards_per_seq.detach().to(token_rewards.dtype)
    return token_rewards.index_put((rows, last[rows]), seq[rows], accumulate=True)


def kl_loss(kl_per_token: torch.Tensor, mask: torch.Tensor, beta: float, agg: AggMode = "token",
            norm_len: int | None = None) -> torch.Tensor:
    """GRPO-style KL term beta * aggregate(kl) to add to the loss (kl with grad, e.g. k3(logp, ref_logp))."""
    return beta * aggregate_loss(kl_per_token, mask, agg, norm_len)
