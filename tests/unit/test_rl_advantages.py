"""Group-relative advantages: GRPO, Dr. GRPO, batch std, RLOO, unscored rollouts, zero variance."""

import math

import pytest
import torch

from trainer_client.rl.advantages import group_index, grpo_advantages, zero_variance_groups
from trainer_client.rl.masking import reward_mask_from


def test_group_of_three_ones_and_a_zero_gets_plus_0_58_and_minus_1_73():
    # mean = 3/4 = 0.75; population var = (3 * 0.25^2 + 0.75^2) / 4 = (0.1875 + 0.5625) / 4
    # = 0.1875, std = 0.4330127; 0.25 / (0.4330127 + 1e-4) = 0.57722, -0.75 / 0.4331127 = -1.73165
    adv = grpo_advantages(torch.tensor([[1.0, 1.0, 1.0, 0.0]]))
    assert adv[0, :3].tolist() == pytest.approx([0.5772] * 3, abs=1e-4)
    assert adv[0, 3].item() == pytest.approx(-1.7317, abs=1e-4)


def test_flat_rewards_with_group_ids_match_the_grouped_layout():
    grouped = torch.tensor([[1.0, 0.0, 0.5], [0.2, 0.9, 0.4]])
    flat = grpo_advantages(grouped.reshape(-1), ["a", "a", "a", "b", "b", "b"])
    assert torch.allclose(flat, grpo_advantages(grouped).reshape(-1))


def test_interleaved_group_ids_are_grouped_by_id_not_position():
    # groups: a = (1, 0), b = (0.5, 0.5)
    adv = grpo_advantages(torch.tensor([1.0, 0.5, 0.0, 0.5]), torch.tensor([7, 3, 7, 3]))
    assert adv[1].item() == 0.0 and adv[3].item() == 0.0
    assert adv[0].item() == pytest.approx(-adv[2].item()) and adv[0].item() > 0


def test_higher_reward_gets_higher_advantage():
    adv = grpo_advantages(torch.tensor([[0.1, 0.7, 0.4]]))
    assert adv[0, 1] > adv[0, 2] > adv[0, 0]


def test_zero_variance_group_gets_exactly_zero_advantage():
    # in float32 the mean of eight 0.1s is not 0.1 (off by 7e-9), nor of eight 0.9s (6e-8):
    # mean subtraction alone would leave noise of ~1e-4 after dividing by std + eps = 1e-4
    adv = grpo_advantages(torch.full((2, 8), 0.1) + torch.tensor([[0.0], [0.8]]))
    assert adv.eq(0.0).all()


def test_scale_none_is_dr_grpo_mean_centering_only():
    # (1,1,1,0) - 0.75 = (0.25, 0.25, 0.25, -0.75)
    adv = grpo_advantages(torch.tensor([[1.0, 1.0, 1.0, 0.0]]), scale="none")
    assert adv[0].tolist() == pytest.approx([0.25, 0.25, 0.25, -0.75])


def test_scale_batch_divides_group_centered_rewards_by_batch_std():
    # batch rewards (1, 0, 1, 1): mean 0.75, population std sqrt(0.1875) = 0.4330127
    # group a = (1, 0): centered (+0.5, -0.5) / 0.4331127 = +-1.15444; group b = (1, 1): 0
    adv = grpo_advantages(torch.tensor([[1.0, 0.0], [1.0, 1.0]]), scale="batch")
    assert adv[0].tolist() == pytest.approx([1.15444, -1.15444], abs=1e-4)
    assert adv[1].tolist() == [0.0, 0.0]


def test_leave_one_out_baseline_is_the_mean_of_the_other_members():
    # a 1 is compared with (1 + 1 + 0) / 3 = 2/3 -> +1/3; the 0 with (1+1+1)/3 = 1 -> -1
    adv = grpo_advantages(torch.tensor([[1.0, 1.0, 1.0, 0.0]]), scale="none", leave_one_out=True)
    assert adv[0].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, -1.0])


def test_leave_one_out_equals_g_over_g_minus_1_times_mean_centering():
    r = torch.tensor([[0.3, 0.9, 0.0, 0.5, 0.2]])
    loo = grpo_advantages(r, scale="none", leave_one_out=True)
    centered = grpo_advantages(r, scale="none")
    assert torch.allclose(loo, centered * 5 / 4)


def test_unscored_rollouts_get_zero_advantage_and_do_not_move_group_mean():
    rewards, valid = reward_mask_from([1.0, None, 0.0, 1.0])
    adv = grpo_advantages(rewards, ["g"] * 4, valid_mask=valid, scale="none")
    # group mean over the scored (1, 0, 1) is 2/3: advantages 1/3, -2/3, 1/3; unscored 0
    assert adv.tolist() == pytest.approx([1 / 3, 0.0, -2 / 3, 1 / 3])
    assert not torch.isnan(adv).any()


def test_valid_mask_excludes_a_scored_reward_from_the_statistics():
    full = torch.tensor([[1.0, 5.0, 0.0, 1.0]])
    masked = grpo_advantages(full, valid_mask=torch.tensor([[True, False, True, True]]))
    dropped = grpo_advantages(torch.tensor([[1.0, 0.0, 1.0]]))
    assert masked[0, 1].item() == 0.0
    assert torch.allclose(masked[0, [0, 2, 3]], dropped[0])


def test_group_with_a_single_scored_rollout_gets_zero_advantage():
    rewards, valid = reward_mask_from([None, 1.0, None])
    assert grpo_advantages(rewards, [0, 0, 0], valid_mask=valid).eq(0.0).all()


def test_fully_unscored_group_gives_zeros_not_nan():
    adv = grpo_advantages(torch.full((1, 4), math.nan))
    assert adv.eq(0.0).all()


def test_advantages_carry_no_gradient_to_rewards():
    r = torch.tensor([[1.0, 0.0]], requires_grad=True)
    assert not grpo_advantages(r).requires_grad


def test_inf_reward_is_rejected():
    with pytest.raises(ValueError, match="inf"):
        grpo_advantages(torch.tensor([[1.0, math.inf]]))


def test_flat_rewards_without_group_ids_are_rejected():
    with pytest.raises(ValueError, match="group_ids"):
        grpo_advantages(torch.tensor([1.0, 0.0]))


def test_unknown_scale_is_rejected():
    with pytest.raises(ValueError, match="scale"):
        grpo_advantages(torch.tensor([[1.0, 0.0]]), scale="global")


def test_zero_variance_groups_flags_all_correct_and_all_wrong_groups():
    r = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    assert zero_variance_groups(r).tolist() == [True, False, True]


def test_zero_variance_groups_ignores_unscored_members():
    # group "x": scored (1, 1) plus an unscored one -> no signal; group "y": (0, 1) -> signal
    rewards, valid = reward_mask_from([1.0, None, 1.0, 0.0, 1.0])
    flags = zero_variance_groups(rewards, ["x", "x", "x", "y", "y"], valid_mask=valid)
    assert flags.tolist() == [True, False]


def test_group_index_numbers_groups_by_first_appearance():
    index, k = group_index(["b", "a", "b", "c"])
    assert index.tolist() == [0, 1, 0, 2] and k == 3
