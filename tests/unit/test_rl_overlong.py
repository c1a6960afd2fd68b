"""DAPO soft overlong punishment and overlong filtering."""

import pytest
import torch

from trainer_client.rl.overlong import overlong_filter_mask, overlong_penalty, truncated_from_lengths


def test_no_penalty_up_to_max_len_minus_cache_len():
    # max_len 20, cache 4: free up to 16 tokens
    assert overlong_penalty(torch.tensor([0, 10, 16]), max_len=20, cache_len=4).tolist() == [0.0, 0.0, 0.0]


def test_penalty_is_linear_inside_the_cache_window():
    # ((20 - 4) - L) / 4: L=17 -> -0.25, L=18 -> -0.5, L=20 -> -1
    out = overlong_penalty(torch.tensor([17, 18, 20]), max_len=20, cache_len=4)
    assert out.tolist() == pytest.approx([-0.25, -0.5, -1.0])


def test_penalty_is_full_beyond_max_len():
    assert overlong_penalty(torch.tensor([21, 500]), max_len=20, cache_len=4).tolist() == [-1.0, -1.0]


def test_penalty_scales_with_the_penalty_factor():
    # 0.5 * (16 - 18) / 4 = -0.25
    assert overlong_penalty(torch.tensor([18]), 20, 4, penalty=0.5).item() == pytest.approx(-0.25)


def test_cache_len_outside_zero_to_max_len_is_rejected():
    with pytest.raises(ValueError, match="cache_len"):
        overlong_penalty(torch.tensor([1]), max_len=20, cache_len=0)


def test_truncated_completions_are_removed_from_the_loss_mask():
    mask = torch.tensor([[True, True, False], [True, True, True]])
    out = overlong_filter_mask(mask, truncated=torch.tensor([False, True]))
    assert out.tolist() == [[True, True, False], [False, False, False]]


def test_length_at_max_len_counts_as_truncated():
    assert truncated_from_lengths(torch.tensor([19, 20, 21]), 20).tolist() == [False, True, True]
