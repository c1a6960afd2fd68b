"""Generalized Advantage Estimation over padded token sequences (PPO with a critic).

    delta_t = r_t + gamma * V_{t'} - V_t        (t' = next valid token; V = 0 after the last)
    A_t     = delta_t + gamma * lam * A_{t'}     (A = 0 after the last valid token)
    R_t     = A_t + V_t                          (value-function target)

Schulman et al., 2016, "High-Dimensional Continuous Control Using Generalized Advantage
Estimation" (arXiv:1506.02438). The masked recursion follows verl's
``compute_gae_advantage_return`` (``verl/trainer/ppo/core_algos.py``): masked tokens are
skipped -- V and A carry over them unchanged -- so right padding, left padding and masked
holes inside a sequence (e.g. tool output in multi-turn rollouts) are all handled. The end
of a sequence is terminal: there is no bootstrap from a truncated completion.
"""

from __future__ import annotations

import torch

from trainer_client.rl.masking import whiten


@torch.no_grad()
def gae_advantages(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor,
                   gamma: float, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token GAE advantages and returns, both [B, T], 0 at masked tokens, no gradient.

    rewards: [B, T] per-token rewards (e.g. from ``kl_penalty_in_reward``); values: [B, T]
    critic values V(s_t) from the rollout-time critic; mask: [B, T] bool, True on
    completion tokens. Entries at masked tokens are ignored, NaN included, so an unscored
    completion is handled by giving it an all-False mask row.
    Compute returns from these raw advantages, then whiten the advantages if wanted.
    """
    if not (rewards.shape == values.shape == mask.shape) or rewards.dim() != 2:
        raise ValueError(f"rewards, values and mask must share one [B, T] shape; got "
                         f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}")
    mask = mask.to(torch.bool)
    next_value = torch.zeros_like(values[:, 0])
    next_adv = torch.zeros_like(values[:, 0])
    columns = []
    for t in reversed(range(rewards.shape[1])):
        valid = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        adv = delta + gamma * lam * next_adv
        next_adv = torch.where(valid, adv, next_adv)
        next_value = torch.where(valid, values[:, t], next_value)
        columns.append(torch.where(valid, adv, torch.zeros_like(adv)))
    advantages = torch.stack(columns[::-1], dim=1)
    returns = torch.where(mask, advantages + values, torch.zeros_like(values))
    return advantages, returns


def whiten_advantages(advantages: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    """(A - mean) / std over all valid tokens of the batch; 0 at masked tokens (``masking.whiten``).

    PPO practice (TRL, OpenRLHF, verl): whiten advantages, never the returns.
    """
    return whiten(advantages, mask, shift_mean=shift_mean)
