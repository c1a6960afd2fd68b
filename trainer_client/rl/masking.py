"""Masked reductions, whitening and loss aggregation over padded [B, T] token tensors.

Convention: a mask is a bool (or 0/1) tensor broadcastable to the data; True marks a
valid element. Masked elements are *selected away* with ``torch.where``, never multiplied
by 0, so NaN or inf in padding (or in an unscored reward) cannot leak into a result or a
gradient. Reductions over zero valid elements return 0 rather than NaN.

References: TRL ``trl/core.py`` (``masked_mean``, ``masked_var``, ``masked_whiten``);
DAPO (Yu et al., 2025, arXiv:2503.14476) token-level loss; GRPO (Shao et al., 2024,
arXiv:2402.03300) per-sequence mean; Dr. GRPO (Liu et al., 2025, arXiv:2503.20783)
sum over tokens divided by a constant length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from trainer_client.rl_options import AGG_MODES, AggMode  # noqa: F401 - re-exported


def _bool_mask(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.broadcast_to(mask.to(device=x.device, dtype=torch.bool), x.shape)


def masked_sum(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None,
               keepdim: bool = False) -> torch.Tensor:
    """sum_i x_i over valid i (along ``dim``, or over everything when ``dim`` is None)."""
    m = _bool_mask(x, mask)
    return torch.where(m, x, torch.zeros_like(x)).sum(dim=dim, keepdim=keepdim)


def masked_count(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None,
                 keepdim: bool = False) -> torch.Tensor:
    """Number of valid elements (as x's dtype), along ``dim`` or in total."""
    return _bool_mask(x, mask).to(x.dtype).sum(dim=dim, keepdim=keepdim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None,
                keepdim: bool = False) -> torch.Tensor:
    """sum_i m_i x_i / max(sum_i m_i, 1): 0 where nothing is valid (TRL ``masked_mean``)."""
    total = masked_sum(x, mask, dim, keepdim)
    return total / masked_count(x, mask, dim, keepdim).clamp(min=1)


def masked_var(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None,
               unbiased: bool = False, keepdim: bool = False) -> torch.Tensor:
    """Variance over valid elements: sum m (x - mean)^2 / n, or / (n - 1) when ``unbiased``.

    Population variance by default (the std GRPO divides by). With ``unbiased`` and a
    single valid element the divisor is clamped to 1 (variance 0), where TRL raises.
    """
    mean = masked_mean(x, mask, dim, keepdim=True)
    sq = masked_sum((x - mean) ** 2, mask, dim, keepdim)
    n = masked_count(x, mask, dim, keepdim)
    return sq / ((n - 1) if unbiased else n).clamp(min=1)


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True,
           eps: float = 1e-8) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) over all valid elements; masked elements become 0.

    ``shift_mean=False`` adds the mean back (rescale only), as TRL's ``masked_whiten``.
    Uses the unbiased variance, as TRL and OpenRLHF do for advantage whitening.
    """
    mean = masked_mean(x, mask)
    var = masked_var(x, mask, unbiased=True)
    out = (x - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        out = out + mean
    return torch.where(_bool_mask(x, mask), out, torch.zeros_like(out))


def aggregate_loss(per_token_loss: torch.Tensor, mask: torch.Tensor, mode: AggMode = "token",
                   norm_len: int | None = None) -> torch.Tensor:
    """Reduces a [B, T] per-token loss to a scalar over the valid tokens.

    - ``"token"`` (DAPO): sum_{i,t} m l / sum_{i,t} m -- every token weighs the same, so
      long completions are not down-weighted.
    - ``"sequence"`` (original GRPO): mean_i [ sum_t m l / sum_t m ] over the sequences
      with at least one valid token -- each sequence weighs the same.
    - ``"seq_sum_norm"`` (Dr. GRPO): sum_{i,t} m l / (B * norm_len), i.e. per-sequence sums
      divided by a constant. ``norm_len`` must be that constant (the generation budget,
      ``max_new_tokens``), not the padded width of this batch, which varies batch to batch.
    """
    if per_token_loss.dim() != 2:
        raise ValueError(f"per_token_loss must be [B, T], got shape {tuple(per_token_loss.shape)}")
    if mode == "token":
        return masked_mean(per_token_loss, mask)
    if mode == "sequence":
        per_seq = masked_mean(per_token_loss, mask, dim=-1)
        has_tokens = masked_count(per_token_loss, mask, dim=-1) > 0
        return masked_mean(per_seq, has_tokens)
    if mode == "seq_sum_norm":
        if norm_len is None or norm_len <= 0:
            raise ValueError("mode 'seq_sum_norm' needs norm_len > 0: pass the generation "
                             "budget (max_new_tokens) as the constant normaliser")
        return masked_sum(per_token_loss, mask) / (per_token_loss.shape[0] * norm_len)
    raise ValueError(f"unknown aggregation mode {mode!r}; expected one of {AGG_MODES}")


def aggregation_weight(mask: torch.Tensor, mode: str) -> int:
    """What a micro-batch's share of its mini-batch loss is proportional to, under ``mode``."""
    if mode == "token":
        return int(mask.sum())
    if mode == "sequence":
        return int(mask.any(dim=-1).sum())
    return mask.shape[0]


def reward_mask_from(rewards: Sequence[float | None], dtype: torch.dtype = torch.float32,
                     device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Rewards as returned by a reward client (None = could not score) -> (values, valid).

    Unscored entries (None or NaN) become NaN in ``values`` and False in ``valid``; they are
    never turned into 0, which would be a real (wrong) reward. Pass ``valid`` on to
    ``grpo_advantages(valid_mask=...)`` and drop those rows from the loss mask.
    """
    floats = [math.nan if r is None else float(r) for r in rewards]
    values = torch.tensor(floats, dtype=dtype, device=device)
    return values, ~torch.isnan(values)
