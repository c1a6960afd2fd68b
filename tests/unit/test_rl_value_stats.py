"""Explained variance of a critic: hand-computed values, masking, and the undefined case."""

import math

import pytest
import torch

from trainer_client.rl import explained_variance

ALL = torch.ones(1, 3, dtype=torch.bool)


def test_perfect_values_explain_everything():
    returns = torch.tensor([[1.0, 2.0, 4.0]])
    assert explained_variance(returns.clone(), returns, ALL).item() == pytest.approx(1.0)


def test_predicting_the_mean_explains_nothing():
    # R = (1, 2, 3), V = 2: Var[R - V] = Var[(-1, 0, 1)] = 2/3 = Var[R]  ->  0
    ev = explained_variance(torch.full((1, 3), 2.0), torch.tensor([[1.0, 2.0, 3.0]]), ALL)
    assert ev.item() == pytest.approx(0.0, abs=1e-6)


def test_hand_computed_value_ignores_masked_tokens():
    # valid R = (0, 2), V = (0.5, 1.5): Var[R - V] = Var[(-0.5, 0.5)] = 0.25, Var[R] = 1  ->  0.75
    values = torch.tensor([[0.5, 1.5, float("nan")]])
    returns = torch.tensor([[0.0, 2.0, 100.0]])
    mask = torch.tensor([[True, True, False]])
    assert explained_variance(values, returns, mask).item() == pytest.approx(0.75)


def test_worse_than_the_mean_is_negative():
    # R = (0, 2), V = (2, 0): Var[R - V] = Var[(-2, 2)] = 4, Var[R] = 1  ->  -3
    ev = explained_variance(torch.tensor([[2.0, 0.0]]), torch.tensor([[0.0, 2.0]]), torch.ones(1, 2, dtype=torch.bool))
    assert ev.item() == pytest.approx(-3.0)


def test_constant_returns_are_undefined_not_zero_or_one():
    ev = explained_variance(torch.zeros(1, 3), torch.full((1, 3), 1.0), ALL)
    assert math.isnan(ev.item())
