"""The group trainer's TRPO update: one natural-gradient step per batch, inside a KL trust region.

    algorithm: trpo            # grpo.update=trpo; the trpo section holds delta and the solver

TRPO (Schulman et al., 2015, arXiv:1502.05477) is the step between the plain policy
gradient and PPO's clip: maximise the surrogate E[rho * A] subject to a bound delta on the
mean KL(pi_old || pi_new). On this trainer, for one batch of completions:

1. Old distributions: the policy's full next-token distribution at every completion
   position, before the step (the "states" are the positions of the valid tokens).
2. g: the gradient of the surrogate (``rl.trpo.surrogate_objective``, aggregated by
   ``grpo.loss_agg``) at theta_old.
3. s ~ (F + damping I)^-1 g by ``trpo.cg_iters`` conjugate-gradient iterations, each a
   Fisher-vector product by double backprop of the exact mean per-token KL.
4. The full step scaled to the KL's quadratic model at delta (``trpo.max_kl``), then a
   backtracking line search on the *measured* KL (exact, over the vocabulary, token mean
   over the batch) and the surrogate: the largest fraction ``backtrack_coeff^k`` with KL <=
   delta and a surrogate gain is taken, else the policy is left exactly as it was.

Only the policy's trainable parameters move; there is no optimizer step (the run's AdamW
and learning rate are not used by this update). The model is in eval mode throughout so
the KL that is measured is the KL of the policy that samples (no dropout), and attention
runs on PyTorch's plain ("math") kernel: the fused ones have no double backward. Each Fisher-
vector product repeats the forward pass per micro-batch (``grpo.micro_batch_size``), so
memory is that of one micro-batch's graph plus every micro-batch's old distributions
([rows, Tc, vocab] floats): a museum piece for small models, correct rather than fast.

Per update it returns ``trpo/kl`` (measured KL after the update; 0 when rejected),
``trpo/step_fraction``, ``trpo/accepted``, ``trpo/surrogate_improvement``,
``trpo/expected_improvement``, ``trpo/cg_residual``, ``trpo/cg_iterations``,
``trpo/line_search_tries`` and ``trpo/grad_norm``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from trainer_client.rl.masking import aggregation_weight, masked_mean
from trainer_client.rl.trpo import (
    LineSearchResult,
    backtracking_line_search,
    categorical_kl,
    conjugate_gradient,
    fisher_vector_product,
    flat_grad,
    surrogate_objective,
    trust_region_step,
)
from trainer_client.train.grpo_config import GrpoConfig
from trainer_client.train.grpo_update import TrainBatch
from trainer_client.train.logprobs import completion_log_dists
from trainer_client.train.trpo_config import TrpoConfig


@dataclass
class _Micro:
    rows: TrainBatch
    surrogate_share: float  # this micro-batch's weight in the batch's surrogate (its aggregation weight)
    kl_share: float  # its share of the batch's valid tokens (the KL is a token mean)
    old_log_dist: torch.Tensor  # [b, Tc, V] before the step
    old_logp: torch.Tensor  # [b, Tc] of the sampled tokens


class _Objective:
    """The batch's surrogate and mean KL as functions of the model's current parameters."""

    def __init__(self, model: torch.nn.Module, batch: TrainBatch, config: GrpoConfig, *, temperature: float,
                 norm_len: int) -> None:
        self.model, self.config, self.temperature, self.norm_len = model, config, temperature, norm_len
        total = aggregation_weight(batch.loss_mask, config.loss_agg)
        tokens = float(batch.loss_mask.sum())
        self.micros: list[_Micro] = []
        for start in range(0, len(batch), config.micro_batch_size):
            rows = batch.rows(torch.arange(start, min(start + config.micro_batch_size, len(batch)),
                                           device=batch.completion_ids.device))
            if not rows.loss_mask.any():
                continue
            with torch.no_grad():
                old = self._log_dist(rows)
            self.micros.append(_Micro(rows, aggregation_weight(rows.loss_mask, config.loss_agg) / total,
                                      float(rows.loss_mask.sum()) / tokens, old,
                                      old.gather(-1, rows.completion_ids.unsqueeze(-1)).squeeze(-1)))

    def _log_dist(self, rows: TrainBatch) -> torch.Tensor:
        return completion_log_dists(self.model, rows.prompt_ids, rows.prompt_mask, rows.completion_ids,
                                    rows.completion_mask, temperature=self.temperature)

    def surrogate(self, m: _Micro, log_dist: torch.Tensor) -> torch.Tensor:
        logp = log_dist.gather(-1, m.rows.completion_ids.unsqueeze(-1)).squeeze(-1)
        return surrogate_objective(logp, m.old_logp, m.rows.advantages, m.rows.loss_mask, self.config.loss_agg,
                                   self.norm_len)

    @staticmethod
    def mean_kl(m: _Micro, log_dist: torch.Tensor) -> torch.Tensor:
        return masked_mean(categorical_kl(m.old_log_dist, log_dist), m.rows.loss_mask)

    def gradient(self, params: list[torch.Tensor]) -> tuple[torch.Tensor, float]:
        """Flat gradient of the batch's surrogate at the current parameters, and the surrogate's value."""
        grad = torch.zeros(sum(p.numel() for p in params), device=params[0].device)
        value = 0.0
        for m in self.micros:
            surrogate = self.surrogate(m, self._log_dist(m.rows))
            grad += m.surrogate_share * flat_grad(surrogate, params)
            value += m.surrogate_share * float(surrogate.detach())
        return grad, value

    def fisher_product(self, params: list[torch.Tensor], v: torch.Tensor, damping: float) -> torch.Tensor:
        out = damping * v
        for m in self.micros:
            out = out + m.kl_share * fisher_vector_product(self.mean_kl(m, self._log_dist(m.rows)), params, v)
        return out

    @torch.no_grad()
    def measure(self) -> tuple[float, float]:
        """(mean KL(pi_old || pi) over the batch's valid tokens, surrogate) at the current parameters."""
        kl = surrogate = 0.0
        for m in self.micros:
            log_dist = self._log_dist(m.rows)
            kl += m.kl_share * float(self.mean_kl(m, log_dist))
            surrogate += m.surrogate_share * float(self.surrogate(m, log_dist))
        return kl, surrogate


def trpo_update(model: torch.nn.Module, batch: TrainBatch, config: GrpoConfig, trpo: TrpoConfig, *,
                temperature: float, norm_len: int) -> dict[str, Any]:
    """One TRPO step of ``model``'s trainable parameters on ``batch`` (see the module docstring); its stats."""
    was_training = model.training
    model.eval()
    try:
        with sdpa_kernel(SDPBackend.MATH):  # the fused attention kernels have no double backward
            objective = _Objective(model, batch, config, temperature=temperature, norm_len=norm_len)
            params = [p for p in model.parameters() if p.requires_grad]
            return _step(objective, params, trpo) if objective.micros else {}
    finally:
        model.train(was_training)


def _step(objective: _Objective, params: list[torch.Tensor], trpo: TrpoConfig) -> dict[str, Any]:
    grad, surrogate_before = objective.gradient(params)
    cg = conjugate_gradient(lambda v: objective.fisher_product(params, v, trpo.cg_damping), grad, iters=trpo.cg_iters)
    step = trust_region_step(cg.x, objective.fisher_product(params, cg.x, trpo.cg_damping), grad, trpo.max_kl)
    theta_old = torch.nn.utils.parameters_to_vector(params).detach().clone()

    def evaluate(fraction: float) -> tuple[float, float]:
        torch.nn.utils.vector_to_parameters(theta_old + fraction * step.step, params)
        kl, surrogate = objective.measure()
        return kl, surrogate - surrogate_before

    if step.expected_improvement > 0:
        result = backtracking_line_search(evaluate, max_kl=trpo.max_kl, backtrack_coeff=trpo.backtrack_coeff,
                                          backtrack_iters=trpo.backtrack_iters)
    else:  # no ascent direction (all advantages 0: e.g. every group zero-variance): nothing to search
        result = LineSearchResult(False, 0.0, 0.0, 0.0, 0)
    if not result.accepted:
        torch.nn.utils.vector_to_parameters(theta_old, params)
    return {"trpo/kl": result.kl, "trpo/step_fraction": result.step_fraction, "trpo/accepted": int(result.accepted),
            "trpo/surrogate_improvement": result.improvement, "trpo/expected_improvement": step.expected_improvement,
            "trpo/cg_residual": cg.residual_norm, "trpo/cg_iterations": cg.iterations,
            "trpo/line_search_tries": result.tries, "trpo/grad_norm": float(grad.norm()),
            "policy_loss": -surrogate_before}
