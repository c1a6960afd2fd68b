"""The pure parts of TRPO (Schulman et al., 2015, arXiv:1502.05477): CG, Fisher-vector products, the line search.

One TRPO update maximises the surrogate L(theta) = E[rho * A] (rho = pi_theta / pi_old on
the sampled tokens) subject to KL(pi_old || pi_theta) <= delta, approximately:

1. g = grad L at theta_old; F = the Hessian of the mean KL at theta_old (the Fisher
   information of the policy), never formed: F v is the gradient of (grad KL . v)
   (``fisher_vector_product``, "double backprop"), plus ``damping * v``.
2. s ~ F^-1 g by ``conjugate_gradient`` (a handful of iterations, F v products only).
3. The full step scales s so the quadratic model of the KL reaches delta:
   beta = sqrt(2 delta / s^T F s) (``trust_region_step``).
4. ``backtracking_line_search`` tries beta*s, coeff*beta*s, coeff^2*beta*s, ... and takes
   the first (largest) step whose *measured* KL is <= delta and whose surrogate improves;
   when none does, the update is rejected and theta stays theta_old.

Torch tensors in and out, no model code and no I/O: the caller says what the KL and the
surrogate are (closures) and how to move its parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from trainer_client.rl.masking import AggMode, aggregate_loss


@dataclass(frozen=True)
class CgResult:
    x: torch.Tensor  # the approximate solution of A x = b
    residual_norm: float  # ||b - A x|| after the last iteration
    iterations: int  # A v products spent (stops early once the residual is below tolerance)


def conjugate_gradient(matvec: Callable[[torch.Tensor], torch.Tensor], b: torch.Tensor, iters: int = 10,
                       residual_tol: float = 1e-10) -> CgResult:
    """Solves A x = b for a symmetric positive definite A given only ``matvec(v) = A v``, from x = 0.

    The textbook iteration (Nocedal & Wright, Algorithm 5.2): at most ``iters`` products,
    stopping once the squared residual norm is below ``residual_tol``. Exact after n
    iterations for an n x n A (in exact arithmetic).
    """
    if iters < 1:
        raise ValueError(f"conjugate_gradient needs iters >= 1, got {iters}")
    x = torch.zeros_like(b)
    r = b.clone()
    p = b.clone()
    rr = torch.dot(r, r)
    done = 0
    while done < iters and float(rr) > residual_tol:
        ap = matvec(p)
        alpha = rr / torch.dot(p, ap)
        x = x + alpha * p
        r = r - alpha * ap
        rr_next = torch.dot(r, r)
        p = r + (rr_next / rr) * p
        rr = rr_next
        done += 1
    return CgResult(x, math.sqrt(float(rr)), done)


def flat_grad(output: torch.Tensor, params: Sequence[torch.Tensor], *, create_graph: bool = False,
              retain_graph: bool | None = None) -> torch.Tensor:
    """d output / d params as one flat vector (zeros for parameters the output does not depend on)."""
    grads = torch.autograd.grad(output, list(params), create_graph=create_graph, retain_graph=retain_graph,
                                allow_unused=True)
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, params)])


def fisher_vector_product(mean_kl: torch.Tensor, params: Sequence[torch.Tensor], v: torch.Tensor,
                          damping: float = 0.0) -> torch.Tensor:
    """(H + damping I) v, H the Hessian of ``mean_kl`` w.r.t. ``params``, by double backprop.

    ``mean_kl`` is KL(pi_old || pi_theta) with pi_old detached, evaluated at theta = theta_old
    (with its graph): its gradient is 0 there and its Hessian is the Fisher information
    matrix, so this is the Fisher-vector product F v. ``v`` is flat (as ``flat_grad``).
    The graph of ``mean_kl`` is kept, so one forward pass serves several products.
    """
    grad = flat_grad(mean_kl, params, create_graph=True)
    hv = flat_grad(torch.dot(grad, v.detach()), params, retain_graph=True)
    return hv + damping * v


def categorical_kl(old_log_dist: torch.Tensor, new_log_dist: torch.Tensor) -> torch.Tensor:
    """Exact KL(old || new) per position over the last (vocabulary) dim: [..., V] log-probs -> [...].

    sum_v p_old(v) (log p_old(v) - log p_new(v)); ``old_log_dist`` is treated as a constant.
    Tokens with p_old = 0 (-inf log-prob) contribute 0.
    """
    old = old_log_dist.detach()
    p_old = old.exp()
    diff = torch.where(p_old > 0, old - new_log_dist, torch.zeros_like(new_log_dist))
    return (p_old * diff).sum(dim=-1)


def surrogate_objective(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                        agg: AggMode = "token", norm_len: int | None = None) -> torch.Tensor:
    """TRPO's surrogate (to *maximise*): aggregate over valid tokens of rho * A, rho = exp(logp - old_logp).

    logp: [B, T] with grad; old_logp: [B, T] constants; advantages: [B] per sequence or
    [B, T] per token; mask: [B, T] bool. Masked positions are selected away before the exp.
    At logp = old_logp its gradient is the policy gradient of ``aggregate(A * logp)``.
    """
    mask = mask.to(torch.bool)
    adv = advantages.detach()
    adv = adv[:, None].expand_as(logp) if adv.dim() == 1 else adv
    adv = torch.where(mask, adv, torch.zeros_like(logp))
    ratio = torch.exp(torch.where(mask, logp - old_logp.detach(), torch.zeros_like(logp)))
    return -aggregate_loss(-adv * ratio, mask, agg, norm_len)


@dataclass(frozen=True)
class TrustRegionStep:
    step: torch.Tensor  # the full step beta * s (flat)
    expected_improvement: float  # g . step: the surrogate's first-order gain for the full step
    quadratic_kl: float  # 0.5 step^T F step (= max_kl unless s^T F s was 0)


def trust_region_step(direction: torch.Tensor, fisher_direction: torch.Tensor, grad: torch.Tensor,
                      max_kl: float) -> TrustRegionStep:
    """Scales the search ``direction`` s (~ F^-1 g) to the step the KL's quadratic model puts at ``max_kl``.

    beta = sqrt(2 max_kl / s^T F s), with ``fisher_direction`` = F s. A direction with
    s^T F s <= 0 (a zero gradient) gives the zero step.
    """
    shs = float(torch.dot(direction, fisher_direction))
    if shs <= 0 or not math.isfinite(shs):
        return TrustRegionStep(torch.zeros_like(direction), 0.0, 0.0)
    beta = math.sqrt(2.0 * max_kl / shs)
    step = beta * direction
    return TrustRegionStep(step, float(torch.dot(grad, step)), 0.5 * beta * beta * shs)


@dataclass(frozen=True)
class LineSearchResult:
    accepted: bool
    step_fraction: float  # the accepted multiple of the full step (0.0 when rejected)
    kl: float  # the measured KL at the accepted step (0.0 when rejected: theta stays theta_old)
    improvement: float  # the surrogate's measured gain there (0.0 when rejected)
    tries: int  # evaluations made


def backtracking_line_search(evaluate: Callable[[float], tuple[float, float]], *, max_kl: float,
                             backtrack_coeff: float = 0.8, backtrack_iters: int = 10) -> LineSearchResult:
    """The largest of the fractions 1, c, c^2, ..., c^(iters-1) of the full step that keeps the trust region.

    ``evaluate(fraction)`` moves the parameters to theta_old + fraction * full_step and returns
    (measured KL(pi_old || pi), surrogate(theta) - surrogate(theta_old)). A fraction is accepted when
    the KL is <= ``max_kl`` and the improvement is > 0 (both finite); the parameters are left where
    the accepted evaluation put them. When no fraction passes the result is rejected and the
    caller restores theta_old.
    """
    if not 0 < backtrack_coeff < 1 or backtrack_iters < 1:
        raise ValueError(f"need 0 < backtrack_coeff < 1 and backtrack_iters >= 1; got {backtrack_coeff}, "
                         f"{backtrack_iters}")
    for i in range(backtrack_iters):
        fraction = backtrack_coeff ** i
        kl, improvement = evaluate(fraction)
        if math.isfinite(kl) and math.isfinite(improvement) and kl <= max_kl and improvement > 0:
            return LineSearchResult(True, fraction, kl, improvement, i + 1)
    return LineSearchResult(False, 0.0, 0.0, 0.0, backtrack_iters)
