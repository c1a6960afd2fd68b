"""Per-token estimators of KL(pi || pi_ref) from log-probs of tokens sampled from pi.

With log r = ref_logp - logp (r = pi_ref / pi at the sampled token):

    k1 = -log r = logp - ref_logp                  unbiased, high variance, can be < 0
    k2 = 0.5 * (log r)^2                           biased, low variance, >= 0
    k3 = (r - 1) - log r                           unbiased, low variance, >= 0

All three are from J. Schulman, "Approximating KL Divergence" (2020),
http://joschu.net/blog/kl-approx.html. k3 is the estimator GRPO puts in its loss (Shao et
al., 2024, arXiv:2402.03300, eq. 4); verl calls these "kl", "mse" and "low_var_kl".
Inputs are log-probs of the *sampled* tokens, any matching shape (typically [B, T]).
"""

from __future__ import annotations

from typing import Literal

import torch

KlKind = Literal["k1", "k2", "k3"]


def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k1 = logp - ref_logp."""
    return logp - ref_logp


def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k2 = 0.5 * (logp - ref_logp)^2."""
    return 0.5 * (logp - ref_logp) ** 2


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor, log_ratio_clip: float | None = 20.0) -> torch.Tensor:
    """k3 = exp(ref_logp - logp) - (ref_logp - logp) - 1, which is >= 0.

    ``log_ratio_clip`` clamps ref_logp - logp to [-c, c] before the exp, as verl does
    (c = 20), so a token the reference finds far likelier cannot overflow to inf and
    poison the loss; None disables it. The clamp leaves |log r| <= c exact.
    """
    log_r = ref_logp - logp
    if log_ratio_clip is not None:
        log_r = log_r.clamp(-log_ratio_clip, log_ratio_clip)
    return torch.expm1(log_r) - log_r


def kl_estimate(logp: torch.Tensor, ref_logp: torch.Tensor, kind: KlKind = "k3") -> torch.Tensor:
    """Per-element KL estimate of the given ``kind`` ("k1", "k2" or "k3"); see the module docstring."""
    if kind == "k1":
        return kl_k1(logp, ref_logp)
    if kind == "k2":
        return kl_k2(logp, ref_logp)
    if kind == "k3":
        return kl_k3(logp, ref_logp)
    raise ValueError(f"unknown KL estimator {kind!r}; expected 'k1', 'k2' or 'k3'")
