"""GAE over padded sequences: hand-computed values and a naive reference implementation."""

import pytest
import torch

from trainer_client.rl.gae import gae_advantages, whiten_advantages
from trainer_client.rl.masking import masked_mean


def naive_gae(rewards, values, mask, gamma, lam):
    """A_t = sum_l (gamma*lam)^l delta_{t+l} over the valid tokens of each row, written out."""
    adv = torch.zeros_like(rewards)
    for b in range(rewards.shape[0]):
        idx = [t for t in range(rewards.shape[1]) if mask[b, t]]
        r = [rewards[b, t].item() for t in idx]
        v = [values[b, t].item() for t in idx] + [0.0]  # V = 0 after the last valid token
        deltas = [r[i] + gamma * v[i + 1] - v[i] for i in range(len(idx))]
        for i, t in enumerate(idx):
            adv[b, t] = sum((gamma * lam) ** j * deltas[i + j] for j in range(len(idx) - i))
    return adv


def test_three_step_example_matches_hand_computation():
    # gamma 0.9, lam 0.8 (gamma*lam = 0.72); rewards (0, 0, 1), values (0.5, 0.6, 0.7)
    # delta_2 = 1 + 0.9*0 - 0.7 = 0.3;  delta_1 = 0 + 0.9*0.7 - 0.6 = 0.03;  delta_0 = 0.9*0.6 - 0.5 = 0.04
    # A_2 = 0.3;  A_1 = 0.03 + 0.72*0.3 = 0.246;  A_0 = 0.04 + 0.72*0.246 = 0.21712
    # returns = A + V = (0.71712, 0.846, 1.0)
    adv, ret = gae_advantages(torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([[0.5, 0.6, 0.7]]),
                              torch.ones(1, 3, dtype=torch.bool), gamma=0.9, lam=0.8)
    assert adv[0].tolist() == pytest.approx([0.21712, 0.246, 0.3], abs=1e-6)
    assert ret[0].tolist() == pytest.approx([0.71712, 0.846, 1.0], abs=1e-6)


def test_padding_after_the_last_token_bootstraps_zero():
    # same 3 steps plus one padded step whose (garbage) value and reward must be ignored
    adv, ret = gae_advantages(torch.tensor([[0.0, 0.0, 1.0, 5.0]]), torch.tensor([[0.5, 0.6, 0.7, 9.0]]),
                              torch.tensor([[True, True, True, False]]), gamma=0.9, lam=0.8)
    assert adv[0].tolist() == pytest.approx([0.21712, 0.246, 0.3, 0.0], abs=1e-6)
    assert ret[0, 3].item() == 0.0


def test_matches_naive_reference_on_random_variable_length_batch():
    g = torch.Generator().manual_seed(0)
    rewards, values = torch.randn(5, 9, generator=g), torch.randn(5, 9, generator=g)
    lengths = torch.tensor([9, 1, 4, 0, 7])
    mask = torch.arange(9)[None, :] < lengths[:, None]
    adv, ret = gae_advantages(rewards, values, mask, gamma=0.97, lam=0.9)
    assert torch.allclose(adv, naive_gae(rewards, values, mask, 0.97, 0.9), atol=1e-5)
    assert torch.allclose(ret, torch.where(mask, adv + values, 0.0))


def test_masked_hole_inside_a_sequence_is_skipped():
    # tokens (a, hole, b) behave like (a, b): the hole's value and reward are ignored
    with_hole, _ = gae_advantages(torch.tensor([[0.2, 7.0, 1.0]]), torch.tensor([[0.5, 3.0, 0.4]]),
                                  torch.tensor([[True, False, True]]), gamma=0.9, lam=0.8)
    compact, _ = gae_advantages(torch.tensor([[0.2, 1.0]]), torch.tensor([[0.5, 0.4]]),
                                torch.ones(1, 2, dtype=torch.bool), gamma=0.9, lam=0.8)
    assert with_hole[0, [0, 2]].tolist() == pytest.approx(compact[0].tolist())
    assert with_hole[0, 1].item() == 0.0


def test_gamma_and_lambda_one_give_monte_carlo_return_minus_value():
    # A_t = sum_{k>=t} r_k - V_t: rewards (1, 2, 3) -> returns-to-go (6, 5, 3)
    adv, ret = gae_advantages(torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([[1.0, 1.0, 1.0]]),
                              torch.ones(1, 3, dtype=torch.bool), gamma=1.0, lam=1.0)
    assert adv[0].tolist() == pytest.approx([5.0, 4.0, 2.0])
    assert ret[0].tolist() == pytest.approx([6.0, 5.0, 3.0])


def test_unscored_row_with_nan_reward_and_empty_mask_stays_zero():
    adv, ret = gae_advantages(torch.tensor([[0.0, float("nan")], [0.0, 1.0]]), torch.zeros(2, 2),
                              torch.tensor([[False, False], [True, True]]), gamma=1.0, lam=1.0)
    assert adv[0].tolist() == [0.0, 0.0] and ret[0].tolist() == [0.0, 0.0]
    assert not torch.isnan(adv).any()


def test_advantages_carry_no_gradient():
    values = torch.zeros(1, 2, requires_grad=True)
    adv, ret = gae_advantages(torch.ones(1, 2), values, torch.ones(1, 2, dtype=torch.bool), 1.0, 1.0)
    assert not adv.requires_grad and not ret.requires_grad


def test_mismatched_shapes_are_rejected():
    with pytest.raises(ValueError, match="shape"):
        gae_advantages(torch.ones(2, 3), torch.ones(2, 4), torch.ones(2, 3, dtype=torch.bool), 1.0, 1.0)


def test_whitened_advantages_have_zero_mean_over_valid_tokens():
    adv = torch.tensor([[1.0, 2.0, 3.0], [10.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True], [True, False, False]])
    white = whiten_advantages(adv, mask)
    assert masked_mean(white, mask).item() == pytest.approx(0.0, abs=1e-6)
    assert white[1, 1:].tolist() == [0.0, 0.0]
