"""Bradley–Terry pairwise loss, pairwise accuracy and reward statistics: pure functions, no I/O.

Under the Bradley–Terry model P(chosen > rejected) = σ(r_c − r_r), so the negative
log-likelihood of a preference is ``−log σ(r_c − r_r − margin)`` (``margin`` as in Llama 2's
reward models: a larger preference gap asks for a larger reward gap). The reward-centering
term ``coef · mean((r_c + r_r)²)`` (Eisenstein et al. 2023, "Helping or Herding?"; TRL's
``center_rewards_coefficient``) pulls the pair's mean reward toward 0, which the BT loss alone
leaves undetermined.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F


def bradley_terry_loss(
    r_chosen: torch.Tensor,
    r_rejected: torch.Tensor,
    margin: torch.Tensor | None = None,
    center_coef: float = 0.0,
) -> torch.Tensor:
    """Mean over pairs of ``−log σ(r_c − r_r − margin)``, plus ``center_coef · mean((r_c + r_r)²)``.

    ``r_chosen``, ``r_rejected`` and ``margin`` are 1-D tensors of the same length (a
    trailing size-1 dimension, as a one-label classifier returns, is squeezed). Returns a
    scalar tensor that carries gradients.
    """
    r_chosen, r_rejected = _as_rewards(r_chosen), _as_rewards(r_rejected)
    if r_chosen.shape != r_rejected.shape:
        raise ValueError(f"r_chosen {tuple(r_chosen.shape)} and r_rejected {tuple(r_rejected.shape)} differ in shape")
    if r_chosen.numel() == 0:
        raise ValueError("bradley_terry_loss needs at least one pair")
    if center_coef < 0:
        raise ValueError(f"center_coef must be >= 0, got {center_coef}")
    diff = r_chosen - r_rejected
    if margin is not None:
        margin = _as_rewards(torch.as_tensor(margin, dtype=diff.dtype, device=diff.device))
        if margin.shape != diff.shape:
            raise ValueError(f"margin {tuple(margin.shape)} does not match the rewards {tuple(diff.shape)}")
        diff = diff - margin
    loss = -F.logsigmoid(diff).mean()  # logsigmoid is stable for large |diff|
    if center_coef:
        loss = loss + center_coef * torch.mean((r_chosen + r_rejected) ** 2)
    return loss


def pairwise_accuracy(r_chosen: torch.Tensor | Sequence[float], r_rejected: torch.Tensor | Sequence[float]) -> float:
    """Fraction of pairs with ``r_c > r_r``; an exact tie counts as half (a coin flip), not a win."""
    rc = _as_rewards(torch.as_tensor(r_chosen, dtype=torch.float64))
    rr = _as_rewards(torch.as_tensor(r_rejected, dtype=torch.float64))
    if rc.shape != rr.shape:
        raise ValueError(f"r_chosen {tuple(rc.shape)} and r_rejected {tuple(rr.shape)} differ in shape")
    if rc.numel() == 0:
        raise ValueError("pairwise_accuracy needs at least one pair")
    wins = (rc > rr).double() + 0.5 * (rc == rr).double()
    return float(wins.mean())


def reward_stats(rewards: torch.Tensor | Sequence[float]) -> tuple[float, float]:
    """``(mean, std)`` of rewards, population std (divide by n); std of a single reward is 0."""
    values = torch.as_tensor(rewards, dtype=torch.float64).flatten()
    if values.numel() == 0:
        raise ValueError("reward_stats needs at least one reward")
    mean = float(values.mean())
    std = float(values.std(correction=0))
    if not (math.isfinite(mean) and math.isfinite(std)):
        raise ValueError(f"rewards contain NaN or inf (mean={mean}, std={std})")
    return mean, std


def _as_rewards(x: torch.Tensor) -> torch.Tensor:
    """A reward vector: squeeze a trailing ``(N, 1)`` classifier dimension, reject anything else 2-D+."""
    if x.dim() == 2 and x.shape[-1] == 1:
        x = x.squeeze(-1)
    if x.dim() == 0:
        x = x.unsqueeze(0)
    if x.dim() != 1:
        raise ValueError(f"rewards must be shaped (N,) or (N, 1), got {tuple(x.shape)}")
    return x
