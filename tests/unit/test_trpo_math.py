"""TRPO's pure parts: CG solves SPD systems, F v by double backprop is the Fisher, the line search's rule."""

from __future__ import annotations

import math

import pytest
import torch

from trainer_client.rl.trpo import (
    backtracking_line_search,
    categorical_kl,
    conjugate_gradient,
    fisher_vector_product,
    trust_region_step,
)


def _spd(n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(n, n, generator=g, dtype=torch.float64)
    return m @ m.T + 0.5 * torch.eye(n, dtype=torch.float64)


def test_cg_solves_a_small_spd_system_exactly_in_n_iterations():
    a = _spd(5)
    b = torch.tensor([1.0, -2.0, 0.5, 3.0, 0.0], dtype=torch.float64)
    result = conjugate_gradient(lambda v: a @ v, b, iters=5, residual_tol=0.0)
    torch.testing.assert_close(result.x, torch.linalg.solve(a, b), rtol=1e-9, atol=1e-9)
    assert result.iterations == 5 and result.residual_norm < 1e-8


def test_cg_on_a_2x2_system_matches_the_hand_computed_solution():
    a = torch.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=torch.float64)  # x = (1/11, 7/11) for b = (1, 2)
    result = conjugate_gradient(lambda v: a @ v, torch.tensor([1.0, 2.0], dtype=torch.float64), iters=10)
    torch.testing.assert_close(result.x, torch.tensor([1 / 11, 7 / 11], dtype=torch.float64))
    assert result.iterations == 2  # stops once the residual is 0, not after all 10


def test_cg_stops_after_iters_with_the_residual_it_reached():
    a = _spd(8, seed=1)
    b = torch.ones(8, dtype=torch.float64)
    one = conjugate_gradient(lambda v: a @ v, b, iters=1, residual_tol=0.0)
    # one step from 0 is the steepest-descent step x = (b.b / b.A b) b
    torch.testing.assert_close(one.x, (b @ b) / (b @ a @ b) * b)
    assert one.iterations == 1
    assert one.residual_norm == pytest.approx(float(torch.linalg.norm(b - a @ one.x)))


def _softmax_policy(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    states = torch.randn(3, 4, generator=g, dtype=torch.float64)  # 3 states, 4 features
    weight = torch.randn(5, 4, generator=g, dtype=torch.float64, requires_grad=True)  # 5 actions
    return states, weight


def _explicit_fisher(states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Mean over states of E_{a~pi}[grad log pi(a|s) grad log pi(a|s)^T], built from per-action scores."""
    w = weight.detach()
    fisher = torch.zeros(w.numel(), w.numel(), dtype=w.dtype)
    for s in states:
        scores = torch.func.jacrev(lambda w_, s=s: torch.log_softmax(w_ @ s, dim=-1))(w).reshape(5, -1)  # [A, P]
        p = torch.softmax(w @ s, dim=-1)
        fisher += (p[:, None, None] * scores[:, :, None] * scores[:, None, :]).sum(0)
    return fisher / len(states)


def test_fisher_vector_product_by_double_backprop_equals_the_explicit_fisher():
    states, weight = _softmax_policy()
    old = torch.log_softmax(states @ weight.detach().T, dim=-1)
    mean_kl = categorical_kl(old, torch.log_softmax(states @ weight.T, dim=-1)).mean()
    fisher = _explicit_fisher(states, weight)
    v = torch.linspace(-1, 1, weight.numel(), dtype=torch.float64)
    torch.testing.assert_close(fisher_vector_product(mean_kl, [weight], v), fisher @ v)
    torch.testing.assert_close(fisher_vector_product(mean_kl, [weight], v, damping=0.1), fisher @ v + 0.1 * v)


def test_categorical_kl_matches_the_closed_form_and_ignores_zero_probability_tokens():
    old = torch.log(torch.tensor([[0.5, 0.5, 0.0]]))
    new = torch.log(torch.tensor([[0.25, 0.25, 0.5]]))
    assert categorical_kl(old, new).item() == pytest.approx(math.log(2))


def test_trust_region_step_puts_the_quadratic_kl_at_max_kl():
    fisher = torch.tensor([[2.0, 0.0], [0.0, 8.0]], dtype=torch.float64)
    g = torch.tensor([1.0, 1.0], dtype=torch.float64)
    s = torch.linalg.solve(fisher, g)  # (0.5, 0.125); s^T F s = g.s = 0.625
    out = trust_region_step(s, fisher @ s, g, max_kl=0.01)
    beta = math.sqrt(2 * 0.01 / 0.625)
    torch.testing.assert_close(out.step, beta * s)
    assert out.quadratic_kl == pytest.approx(0.01)
    assert out.expected_improvement == pytest.approx(beta * 0.625)


def test_a_zero_gradient_gives_the_zero_step():
    out = trust_region_step(torch.zeros(3), torch.zeros(3), torch.zeros(3), max_kl=0.01)
    assert out.step.tolist() == [0.0, 0.0, 0.0] and out.expected_improvement == 0.0


def _recording(kl_at_full: float, improvement: float | None = None):
    """evaluate(): KL grows as fraction^2 (the quadratic model), the gain linearly (or a fixed value)."""
    tried: list[float] = []

    def evaluate(fraction: float) -> tuple[float, float]:
        tried.append(fraction)
        return kl_at_full * fraction ** 2, fraction if improvement is None else improvement
    return evaluate, tried


def test_line_search_accepts_the_full_step_when_it_keeps_the_trust_region():
    evaluate, tried = _recording(kl_at_full=0.009)
    result = backtracking_line_search(evaluate, max_kl=0.01, backtrack_coeff=0.8, backtrack_iters=10)
    assert (result.accepted, result.step_fraction, result.tries, tried) == (True, 1.0, 1, [1.0])
    assert result.kl == pytest.approx(0.009) and result.improvement == 1.0


def test_line_search_accepts_the_largest_shrunk_step_within_the_kl_budget():
    # KL(f) = 0.04 f^2 <= 0.01 needs f <= 0.5: 1, 0.8, 0.64 fail, 0.512 fails (0.0105), 0.4096 passes
    evaluate, tried = _recording(kl_at_full=0.04)
    result = backtracking_line_search(evaluate, max_kl=0.01, backtrack_coeff=0.8, backtrack_iters=10)
    assert result.accepted and result.step_fraction == pytest.approx(0.8 ** 4)
    assert tried == pytest.approx([1.0, 0.8, 0.64, 0.512, 0.4096])
    assert result.kl == pytest.approx(0.04 * 0.8 ** 8) and result.kl <= 0.01


def test_line_search_rejects_when_no_step_improves_the_surrogate():
    evaluate, tried = _recording(kl_at_full=0.001, improvement=-0.1)
    result = backtracking_line_search(evaluate, max_kl=0.01, backtrack_coeff=0.5, backtrack_iters=4)
    assert (result.accepted, result.step_fraction, result.kl, result.improvement) == (False, 0.0, 0.0, 0.0)
    assert tried == [1.0, 0.5, 0.25, 0.125]


def test_line_search_rejects_when_every_step_breaks_the_kl_budget():
    evaluate, _ = _recording(kl_at_full=100.0)
    result = backtracking_line_search(evaluate, max_kl=0.01, backtrack_coeff=0.8, backtrack_iters=3)
    assert not result.accepted and result.tries == 3


def test_line_search_rejects_a_nan_kl():
    result = backtracking_line_search(lambda f: (float("nan"), 1.0), max_kl=0.01, backtrack_iters=2)
    assert not result.accepted


@pytest.mark.parametrize("coeff, iters", [(0.0, 10), (1.0, 10), (0.8, 0)])
def test_line_search_refuses_bad_settings(coeff, iters):
    with pytest.raises(ValueError, match="backtrack"):
        backtracking_line_search(lambda f: (0.0, 1.0), max_kl=0.01, backtrack_coeff=coeff, backtrack_iters=iters)
