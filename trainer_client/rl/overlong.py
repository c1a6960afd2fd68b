"""DAPO's two treatments of over-long completions (Yu et al., 2025, arXiv:2503.14476, sec. 3.4).

Soft overlong punishment (eq. 13), added to the task reward, with L_max = ``max_len``
and L_cache = ``cache_len``:

    R_len(L) = 0                               if L <= L_max - L_cache
             = ((L_max - L_cache) - L) / L_cache   if L_max - L_cache < L <= L_max
             = -1                              if L > L_max

(scaled here by ``penalty``). Overlong filtering: truncated completions are masked out of
the loss, since a truncated reasoning chain is not evidence that the reasoning was wrong.
"""

from __future__ import annotations

import torch


def overlong_penalty(lengths: torch.Tensor, max_len: int, cache_len: int, penalty: float = 1.0) -> torch.Tensor:
    """Per-completion reward shaping [B] (<= 0) from completion lengths [B] in tokens.

    0 up to ``max_len - cache_len``, linear down to ``-penalty`` at ``max_len``, ``-penalty``
    beyond. Add it to the (scored) rewards before computing advantages; NaN + x stays NaN,
    so unscored completions stay unscored.
    """
    if not 0 < cache_len <= max_len:
        raise ValueError(f"need 0 < cache_len <= max_len, got cache_len={cache_len}, max_len={max_len}")
    excess = lengths.to(torch.float32) - (max_len - cache_len)
    return -penalty * (excess / cache_len).clamp(0.0, 1.0)


def truncated_from_lengths(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """bool [B]: length >= max_len. Prefer the engine's finish reason ("length") when
    available: a completion that ends with EOS exactly at ``max_len`` tokens is not truncated."""
    return lengths >= max_len


def overlong_filter_mask(token_mask: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """[B, T] loss mask with every token of a truncated completion (``truncated`` [B] bool) turned off."""
    keep = ~truncated.to(device=token_mask.device, dtype=torch.bool)
    return token_mask.to(torch.bool) & keep[:, None]
