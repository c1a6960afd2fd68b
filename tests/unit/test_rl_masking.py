"""Masked reductions, whitening, loss aggregation modes and unscored-reward masks."""

import math

import pytest
import torch

from trainer_client.rl.masking import (
    aggregate_loss,
    masked_mean,
    masked_sum,
    masked_var,
    reward_mask_from,
    whiten,
)

# Two completions: 4 valid tokens and 2 valid tokens (then padding).
LOSS = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 0.0, 0.0]])
MASK = torch.tensor([[True, True, True, True], [True, True, False, False]])


def test_masked_mean_ignores_nan_in_padding():
    x = torch.tensor([[1.0, 3.0, float("nan")]])
    m = torch.tensor([[True, True, False]])
    assert masked_mean(x, m).item() == 2.0  # (1 + 3) / 2


def test_masked_sum_along_a_dim():
    # row sums over valid tokens: 1+2+3+4 = 10, 5+6 = 11
    assert masked_sum(LOSS, MASK, dim=-1).tolist() == [10.0, 11.0]


def test_masked_mean_of_nothing_is_zero_not_nan():
    assert masked_mean(torch.ones(3), torch.zeros(3, dtype=torch.bool)).item() == 0.0


def test_masked_var_is_population_variance_by_default():
    # valid values 1, 2, 3, 4: mean 2.5, squared deviations 2.25+0.25+0.25+2.25 = 5
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 100.0])
    m = torch.tensor([True, True, True, True, False])
    assert masked_var(x, m).item() == pytest.approx(5 / 4)
    assert masked_var(x, m, unbiased=True).item() == pytest.approx(5 / 3)


def test_whiten_gives_zero_mean_unit_variance_over_valid_elements():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 7.0]])
    m = torch.tensor([[True, True, False], [True, True, True]])
    w = whiten(x, m)
    assert masked_mean(w, m).item() == pytest.approx(0.0, abs=1e-6)
    assert masked_var(w, m, unbiased=True).item() == pytest.approx(1.0, rel=1e-5)


def test_whiten_zeroes_masked_elements():
    w = whiten(torch.tensor([1.0, 2.0, float("nan")]), torch.tensor([True, True, False]))
    assert w[2].item() == 0.0 and not torch.isnan(w).any()


def test_whiten_without_shift_keeps_the_mean():
    x = torch.tensor([1.0, 2.0, 6.0])
    w = whiten(x, torch.ones(3, dtype=torch.bool), shift_mean=False)
    assert w.mean().item() == pytest.approx(3.0)


def test_token_mode_averages_over_all_valid_tokens_of_the_batch():
    # (1+2+3+4+5+6) / 6 = 21 / 6 = 3.5
    assert aggregate_loss(LOSS, MASK, "token").item() == pytest.approx(3.5)


def test_sequence_mode_averages_per_sequence_then_over_sequences():
    # mean(10/4, 11/2) = mean(2.5, 5.5) = 4.0
    assert aggregate_loss(LOSS, MASK, "sequence").item() == pytest.approx(4.0)


def test_sequence_mode_skips_rows_without_valid_tokens():
    loss = torch.cat([LOSS, torch.full((1, 4), float("nan"))])
    mask = torch.cat([MASK, torch.zeros(1, 4, dtype=torch.bool)])
    assert aggregate_loss(loss, mask, "sequence").item() == pytest.approx(4.0)


def test_seq_sum_norm_divides_sums_by_a_constant_length():
    # (10 + 11) / (B=2 * norm_len=8) = 21 / 16
    assert aggregate_loss(LOSS, MASK, "seq_sum_norm", norm_len=8).item() == pytest.approx(21 / 16)


def test_seq_sum_norm_without_norm_len_is_rejected():
    with pytest.raises(ValueError, match="norm_len"):
        aggregate_loss(LOSS, MASK, "seq_sum_norm")


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="unknown aggregation mode"):
        aggregate_loss(LOSS, MASK, "mean")


def test_token_mode_weighs_every_token_equally_and_sequence_mode_every_sequence():
    x = LOSS.clone().requires_grad_(True)
    aggregate_loss(x, MASK, "token").backward()
    # token: each of the 6 valid tokens gets 1/6
    assert torch.allclose(x.grad, MASK.float() / 6)
    x.grad = None
    aggregate_loss(x, MASK, "sequence").backward()
    # sequence: 1/(B=2 * len_i): 1/8 on the long row, 1/4 on the short row
    assert torch.allclose(x.grad, torch.tensor([[1 / 8] * 4, [1 / 4, 1 / 4, 0, 0]]))


def test_padding_gets_zero_gradient_even_when_it_holds_nan():
    x = torch.tensor([[1.0, float("nan")]], requires_grad=True)
    aggregate_loss(x, torch.tensor([[True, False]]), "token").backward()
    assert x.grad.tolist() == [[1.0, 0.0]]


def test_none_and_nan_rewards_are_unscored_and_become_nan_never_zero():
    values, valid = reward_mask_from([1.0, None, 0.0, math.nan])
    assert valid.tolist() == [True, False, True, False]
    assert values[0].item() == 1.0 and values[2].item() == 0.0
    assert torch.isnan(values[1]) and torch.isnan(values[3])
