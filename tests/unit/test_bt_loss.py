"""Bradley–Terry loss, pairwise accuracy and reward statistics against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from trainer_client.rm.bt_loss import bradley_terry_loss, pairwise_accuracy, reward_stats

LOG2 = math.log(2.0)


def t(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def test_equal_rewards_cost_log_two():
    assert bradley_terry_loss(t(0.0), t(0.0)).item() == pytest.approx(LOG2)


def test_reward_gap_of_one_costs_log_one_plus_e_to_minus_one():
    # -log σ(1) = log(1 + e^-1) = 0.313261687...
    assert bradley_terry_loss(t(1.0), t(0.0)).item() == pytest.approx(0.3132616875)


def test_loss_is_the_mean_over_pairs():
    assert bradley_terry_loss(t(1.0, 0.0), t(0.0, 0.0)).item() == pytest.approx((0.3132616875 + LOG2) / 2)


def test_margin_is_subtracted_from_the_reward_gap():
    # gap 1 - margin 1 = 0  ->  log 2
    assert bradley_terry_loss(t(2.0), t(1.0), margin=t(1.0)).item() == pytest.approx(LOG2)


def test_centering_adds_coef_times_mean_squared_pair_sum():
    # BT part log 2 (equal rewards), centering 0.25 * (1 + 1)^2 = 1
    assert bradley_terry_loss(t(1.0), t(1.0), center_coef=0.25).item() == pytest.approx(LOG2 + 1.0)


def test_centering_is_zero_for_rewards_symmetric_around_zero():
    # -log σ(2) = log(1 + e^-2) = 0.126928011...
    assert bradley_terry_loss(t(1.0), t(-1.0), center_coef=5.0).item() == pytest.approx(0.1269280110)


def test_large_wrong_gap_gives_a_finite_linear_loss():
    assert bradley_terry_loss(t(-100.0), t(0.0)).item() == pytest.approx(100.0)


def test_gradient_at_equal_rewards_is_minus_one_half_for_chosen():
    rc, rr = t(0.0).requires_grad_(), t(0.0).requires_grad_()
    bradley_terry_loss(rc, rr).backward()
    assert (rc.grad.item(), rr.grad.item()) == pytest.approx((-0.5, 0.5))


def test_classifier_shaped_n_by_1_rewards_are_accepted():
    assert bradley_terry_loss(t(1.0).unsqueeze(-1), t(0.0).unsqueeze(-1)).item() == pytest.approx(0.3132616875)


def test_mismatched_shapes_are_rejected():
    with pytest.raises(ValueError, match="differ in shape"):
        bradley_terry_loss(t(1.0, 2.0), t(0.0))


def test_negative_center_coef_is_rejected():
    with pytest.raises(ValueError, match="center_coef"):
        bradley_terry_loss(t(1.0), t(0.0), center_coef=-1.0)


def test_accuracy_counts_wins_and_half_ties():
    # win, loss, tie -> (1 + 0 + 0.5) / 3
    assert pairwise_accuracy([1.0, 2.0, 3.0], [0.0, 3.0, 3.0]) == pytest.approx(0.5)


def test_accuracy_accepts_tensors():
    assert pairwise_accuracy(t(2.0, 2.0), t(1.0, 1.0)) == 1.0


def test_accuracy_of_no_pairs_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        pairwise_accuracy([], [])


def test_reward_stats_are_mean_and_population_std():
    mean, std = reward_stats([1.0, 2.0, 3.0, 4.0])
    assert (mean, std) == pytest.approx((2.5, math.sqrt(1.25)))


def test_reward_stats_of_one_value_has_zero_std():
    assert reward_stats(t(3.0)) == (3.0, 0.0)


def test_reward_stats_reject_nan():
    with pytest.raises(ValueError, match="NaN"):
        reward_stats([1.0, float("nan")])
