"""DPO losses on sequence log-probs: pure functions, TRL's names and definitions.

With ``Δ = (log π(c) − log π_ref(c)) − (log π(r) − log π_ref(r))`` (completion log-probs summed
over tokens; ``c`` chosen, ``r`` rejected), ``β`` = ``beta`` and ``ε`` = ``label_smoothing``,
the per-pair losses are (TRL 1.16, ``DPOTrainer._compute_loss``):

- ``sigmoid`` (DPO):  ``−log σ(βΔ)``; with ``ε > 0``, conservative DPO (cDPO, TRL < 1.0):
  ``−(1−ε) log σ(βΔ) − ε log σ(−βΔ)`` — TRL 1.16 ignores ``label_smoothing`` for ``sigmoid``;
- ``hinge`` (SLiC):   ``max(0, 1 − βΔ)``;
- ``ipo``:            ``(Δ_tok − 1/(2β))²``, where ``Δ_tok`` uses per-token *means* (each log-ratio
  divided by its completion's token count, at least 1), as TRL does;
- ``robust`` (rDPO):  ``(−(1−ε) log σ(βΔ) + ε log σ(−βΔ)) / (1 − 2ε)``, ``0 ≤ ε < 0.5``.

The implicit rewards are ``β (log π − log π_ref)``; reward accuracy counts pairs whose chosen
reward is strictly higher, the margin is their difference (TRL's ``rewards/*`` metrics). The
optional SFT term (``rpo_alpha``; TRL 1.16: ``loss_type=[..., "sft"]``, ``loss_weights=[1, α]``) is
the mean negative log-prob over all chosen completion tokens of the batch.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from trainer_client.dpo.dpo_config import LOSS_TYPES, check_loss_options  # noqa: F401 - re-exported


class PairLogps(NamedTuple):
    """Summed completion log-probs [N] of a batch of pairs, under the policy and the reference."""

    chosen: torch.Tensor
    rejected: torch.Tensor
    ref_chosen: torch.Tensor
    ref_rejected: torch.Tensor


def dpo_losses(logps: PairLogps, *, beta: float = 0.1, loss_type: str = "sigmoid", label_smoothing: float = 0.0,
               chosen_tokens: torch.Tensor | None = None, rejected_tokens: torch.Tensor | None = None) -> torch.Tensor:
    """Per-pair DPO losses [N] (see the module docstring); ``ipo`` needs the completions' token counts."""
    check_loss_options(loss_type, beta, label_smoothing)
    chosen_ratio = logps.chosen - logps.ref_chosen
    rejected_ratio = logps.rejected - logps.ref_rejected
    delta = chosen_ratio - rejected_ratio
    eps = label_smoothing
    if loss_type == "sigmoid":
        return -(1 - eps) * F.logsigmoid(beta * delta) - eps * F.logsigmoid(-beta * delta)
    if loss_type == "hinge":
        return torch.relu(1 - beta * delta)
    if loss_type == "ipo":
        if chosen_tokens is None or rejected_tokens is None:
            raise ValueError("the ipo loss needs chosen_tokens and rejected_tokens (completion token counts)")
        per_token = chosen_ratio / chosen_tokens.clamp(min=1) - rejected_ratio / rejected_tokens.clamp(min=1)
        return (per_token - 1 / (2 * beta)) ** 2
    return (-(1 - eps) * F.logsigmoid(beta * delta) + eps * F.logsigmoid(-beta * delta)) / (1 - 2 * eps)


def sft_term(chosen_token_logps: torch.Tensor, chosen_mask: torch.Tensor) -> torch.Tensor:
    """Mean negative log-prob over the chosen completion tokens (``mask`` True) of the whole batch."""
    return -chosen_token_logps[chosen_mask.bool()].mean()


@torch.no_grad()
def reward_metrics(logps: PairLogps, beta: float) -> dict[str, float]:
    """TRL's logged names: ``rewards/chosen``, ``rewards/rejected``, ``rewards/accuracies``, ``rewards/margins``,
    ``logps/chosen``, ``logps/rejected`` (means over the pairs)."""
    chosen = beta * (logps.chosen - logps.ref_chosen)
    rejected = beta * (logps.rejected - logps.ref_rejected)
    return {
        "rewards/chosen": float(chosen.mean()),
        "rewards/rejected": float(rejected.mean()),
        "rewards/accuracies": float((chosen > rejected).float().mean()),
        "rewards/margins": float((chosen - rejected).mean()),
        "logps/chosen": float(logps.chosen.mean()),
        "logps/rejected": float(logps.rejected.mean()),
    }
