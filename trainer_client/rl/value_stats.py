"""How well a critic predicts its targets: explained variance over valid tokens.

    ev = 1 - Var[R - V] / Var[R]

1: the values predict the returns perfectly; 0: no better than predicting their mean;
< 0: worse than that. Undefined (NaN) when the returns do not vary. The diagnostic of
OpenAI baselines (``explained_variance``), TRL's ``PPOTrainer`` and verl's critic
metrics, here over the valid tokens of padded [B, T] tensors.
"""

from __future__ import annotations

import torch

from trainer_client.rl.masking import masked_count, masked_var


@torch.no_grad()
def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Scalar 1 - Var[R - V] / Var[R] over the tokens where ``mask`` is True (population variances).

    NaN when fewer than two tokens are valid or the valid returns are all equal: there is
    nothing to explain, and 0 or 1 would both be a made-up number.
    """
    mask = mask.to(torch.bool)
    var_returns = masked_var(returns, mask)
    if masked_count(returns, mask) < 2 or var_returns <= 0:
        return torch.tensor(float("nan"), dtype=returns.dtype, device=returns.device)
    return 1.0 - masked_var(returns - values, mask) / var_returns
