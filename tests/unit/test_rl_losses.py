"""PPO clipped surrogate (clip-higher, dual clip), value loss, entropy and KL terms."""

import math

import pytest
import torch

from trainer_client.rl.kl import kl_k3
from trainer_client.rl.losses import (
    clipped_policy_loss,
    entropy_bonus,
    entropy_from_logits,
    kl_loss,
    kl_penalty_in_reward,
    value_loss,
)

ALL = torch.ones(1, 1, dtype=torch.bool)


def policy(ratios):
    """Current log-probs (with grad) and old log-probs giving these per-token ratios."""
    old = torch.log(torch.full((1, len(ratios)), 0.5))
    logp = (old + torch.log(torch.tensor([ratios]))).requires_grad_(True)
    return logp, old


def one_token_loss(ratio, advantage, **kw):
    logp, old = policy([ratio])
    loss, stats = clipped_policy_loss(logp, old, torch.tensor([advantage]), ALL, **kw)
    loss.backward()
    return loss.item(), logp.grad[0, 0].item(), stats


def test_ratio_above_one_plus_eps_high_is_clipped_for_positive_advantage():
    # max(-1 * 1.5, -1 * clip(1.5, 0.8, 1.2)) = max(-1.5, -1.2) = -1.2
    loss, _, stats = one_token_loss(1.5, 1.0)
    assert loss == pytest.approx(-1.2)
    assert stats["clip_frac"].item() == 1.0


def test_ratio_below_one_minus_eps_low_is_clipped_for_negative_advantage():
    # max(1 * 0.5, 1 * 0.8) = 0.8
    loss, grad, _ = one_token_loss(0.5, -1.0)
    assert loss == pytest.approx(0.8) and grad == 0.0


def test_ratio_above_one_plus_eps_is_not_clipped_for_negative_advantage():
    # max(1 * 1.5, 1 * 1.2) = 1.5, unclipped: d(-A * rho)/dlogp = -A * rho = 1.5
    loss, grad, stats = one_token_loss(1.5, -1.0)
    assert loss == pytest.approx(1.5) and grad == pytest.approx(1.5)
    assert stats["clip_frac"].item() == 0.0


def test_clip_higher_lets_positive_advantage_ratio_grow_past_1_2():
    # ratio 1.25: clipped at 1.2 with eps_high 0.2, free with DAPO's eps_high 0.28
    _, grad_ppo, _ = one_token_loss(1.25, 1.0)
    _, grad_dapo, _ = one_token_loss(1.25, 1.0, eps_high=0.28)
    assert grad_ppo == 0.0 and grad_dapo == pytest.approx(-1.25)


def test_dual_clip_caps_the_loss_of_negative_advantage_at_c_times_abs_advantage():
    # ratio 5, A = -1: standard max(5, 1.2) = 5; dual clip min(5, 3 * 1) = 3, no gradient
    loss, grad, stats = one_token_loss(5.0, -1.0, dual_clip_c=3.0)
    assert loss == pytest.approx(3.0) and grad == 0.0
    assert stats["dual_clip_frac"].item() == 1.0


def test_dual_clip_leaves_positive_advantages_alone():
    loss, _, _ = one_token_loss(5.0, 1.0, dual_clip_c=3.0)
    assert loss == pytest.approx(-1.2)


def test_dual_clip_c_at_most_one_is_rejected():
    with pytest.raises(ValueError, match="dual_clip_c"):
        one_token_loss(1.0, 1.0, dual_clip_c=1.0)


def test_gradient_is_zero_where_clipped():
    # A = +1, ratios (1.5, 1.1, 0.5, 1.0), 4 valid tokens, token mean:
    # token 0 clipped (grad 0); others unclipped: grad = -A * rho / 4 = -1.1/4, -0.5/4, -1/4
    logp, old = policy([1.5, 1.1, 0.5, 1.0])
    loss, stats = clipped_policy_loss(logp, old, torch.tensor([1.0]), torch.ones(1, 4, dtype=torch.bool))
    loss.backward()
    assert logp.grad[0].tolist() == pytest.approx([0.0, -1.1 / 4, -0.5 / 4, -1.0 / 4])
    # loss = (-1.2 - 1.1 - 0.5 - 1.0) / 4 = -0.95; one clipped token in four
    assert loss.item() == pytest.approx(-0.95)
    assert stats["clip_frac"].item() == pytest.approx(0.25)


def test_clip_fraction_counts_only_valid_tokens():
    logp, old = policy([1.5, 1.0, 9.0])
    mask = torch.tensor([[True, True, False]])
    _, stats = clipped_policy_loss(logp, old, torch.tensor([1.0]), mask)
    assert stats["clip_frac"].item() == pytest.approx(0.5)  # 1 clipped of 2 valid


def test_per_sequence_advantages_broadcast_like_per_token_ones():
    logp, old = policy([1.1, 0.9, 1.3])
    mask = torch.ones(1, 3, dtype=torch.bool)
    seq, _ = clipped_policy_loss(logp, old, torch.tensor([0.7]), mask)
    tok, _ = clipped_policy_loss(logp, old, torch.full((1, 3), 0.7), mask)
    assert seq.item() == pytest.approx(tok.item())


def test_garbage_in_padding_gives_finite_loss_and_zero_gradient():
    logp = torch.tensor([[math.log(0.5), float("inf")]], requires_grad=True)
    old = torch.tensor([[math.log(0.5), float("nan")]])
    adv = torch.tensor([[1.0, float("nan")]])
    loss, stats = clipped_policy_loss(logp, old, adv, torch.tensor([[True, False]]))
    loss.backward()
    assert math.isfinite(loss.item()) and logp.grad[0].tolist() == [-1.0, 0.0]
    assert all(math.isfinite(v.item()) for v in stats.values())


def test_approx_kl_is_k3_of_old_versus_new_and_zero_at_ratio_one():
    # rho = 2: KL(old || new) k3 = rho - 1 - log rho = 1 - log 2 = 0.306853
    _, _, same = one_token_loss(1.0, 1.0)
    _, _, moved = one_token_loss(2.0, 1.0)
    assert same["approx_kl"].item() == pytest.approx(0.0, abs=1e-7)
    assert moved["approx_kl"].item() == pytest.approx(1 - math.log(2), rel=1e-5)
    assert moved["ratio_mean"].item() == pytest.approx(2.0)


def test_sequence_aggregation_weighs_short_sequences_more():
    logp, old = policy([1.0, 1.0, 1.0])
    mask = torch.tensor([[True, True, True], [True, False, False]])
    logp2 = logp.detach().expand(2, 3).clone().requires_grad_(True)
    loss, _ = clipped_policy_loss(logp2, old.expand(2, 3), torch.tensor([1.0, 1.0]), mask, agg="sequence")
    loss.backward()
    # grad = -A * rho / (B * len_i): -1/6 on the long row, -1/2 on the one-token row
    assert torch.allclose(logp2.grad, torch.tensor([[-1 / 6] * 3, [-1 / 2, 0.0, 0.0]]))


def test_value_loss_takes_the_larger_of_clipped_and_unclipped_error():
    # V=2, V_old=1, R=1, clip 0.5: unclipped (2-1)^2 = 1; V_clip = 1.5: (1.5-1)^2 = 0.25 -> 0.5 * 1
    loss, stats = value_loss(torch.tensor([[2.0]]), torch.tensor([[1.0]]), torch.tensor([[1.0]]), ALL, 0.5)
    assert loss.item() == pytest.approx(0.5) and stats["vf_clip_frac"].item() == 0.0


def test_value_gradient_is_zero_when_clipped_error_dominates():
    # V=1, V_old=0, R=2, clip 0.2: unclipped (1-2)^2 = 1; V_clip = 0.2: (0.2-2)^2 = 3.24 -> 1.62
    v = torch.tensor([[1.0]], requires_grad=True)
    loss, stats = value_loss(v, torch.tensor([[0.0]]), torch.tensor([[2.0]]), ALL, clip_range=0.2)
    loss.backward()
    assert loss.item() == pytest.approx(1.62) and v.grad.item() == 0.0
    assert stats["vf_clip_frac"].item() == 1.0


def test_value_loss_without_clipping_is_half_mean_squared_error():
    # 0.5 * mean((1-0)^2, (3-1)^2) = 0.5 * 2.5 = 1.25; the padded token is ignored
    mask = torch.tensor([[True, True, False]])
    loss, _ = value_loss(torch.tensor([[1.0, 3.0, 100.0]]), torch.zeros(1, 3), torch.tensor([[0.0, 1.0, 0.0]]), mask)
    assert loss.item() == pytest.approx(1.25)


def test_entropy_of_uniform_logits_is_log_vocab_size():
    assert entropy_from_logits(torch.zeros(2, 3, 50)).flatten().tolist() == pytest.approx([math.log(50)] * 6)


def test_entropy_matches_naive_formula_and_stays_accurate_for_huge_logits():
    logits = torch.randn(2, 4, 7, generator=torch.Generator().manual_seed(1))
    p = logits.softmax(-1)
    assert torch.allclose(entropy_from_logits(logits), -(p * p.log()).sum(-1), atol=1e-6)
    big = logits + 1e4  # the float32 inputs themselves; reference computed in float64
    q = big.double().softmax(-1)
    assert torch.allclose(entropy_from_logits(big).double(), -(q * q.log()).sum(-1), atol=1e-5)


def test_entropy_with_banned_tokens_is_finite():
    # two allowed tokens at equal logits and one at -inf: H = log 2
    logits = torch.tensor([[[0.0, 0.0, float("-inf")]]], requires_grad=True)
    h = entropy_from_logits(logits)
    h.sum().backward()
    assert h.item() == pytest.approx(math.log(2)) and torch.isfinite(logits.grad).all()


def test_entropy_bonus_is_negative_so_minimising_the_loss_raises_entropy():
    # -0.01 * mean(2, 4) = -0.03
    bonus = entropy_bonus(torch.tensor([[2.0, 4.0]]), torch.ones(1, 2, dtype=torch.bool), coef=0.01)
    assert bonus.item() == pytest.approx(-0.03)


def test_kl_penalty_in_reward_puts_sequence_reward_on_last_valid_token():
    # beta 0.1; row 0: 3 tokens kl (1, 2, 3) reward 1 -> (-0.1, -0.2, -0.3 + 1)
    # row 1: 2 valid tokens kl (4, 5) reward 2 -> (-0.4, -0.5 + 2, 0 on padding)
    kl = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    out = kl_penalty_in_reward(torch.tensor([1.0, 2.0]), kl, mask, beta=0.1)
    assert torch.allclose(out, torch.tensor([[-0.1, -0.2, 0.7], [-0.4, 1.5, 0.0]]))


def test_kl_penalty_in_reward_leaves_a_fully_masked_row_at_zero():
    out = kl_penalty_in_reward(torch.tensor([float("nan")]), torch.ones(1, 2),
                               torch.zeros(1, 2, dtype=torch.bool), beta=0.1)
    assert out.tolist() == [[0.0, 0.0]]


def test_kl_loss_is_beta_times_mean_kl_and_pulls_towards_reference():
    # k3 at rho_ref = 0.5 (logp = log 0.5, ref = log 0.25): 0.5 - 1 + log 2 = 0.193147; beta 0.04
    logp = torch.tensor([[math.log(0.5)]], requires_grad=True)
    ref = torch.tensor([[math.log(0.25)]])
    loss = kl_loss(kl_k3(logp, ref), ALL, beta=0.04)
    loss.backward()
    assert loss.item() == pytest.approx(0.04 * (0.5 - 1 + math.log(2)), rel=1e-5)
    # d k3 / d logp = 1 - pi_ref/pi = 1 - 0.5 > 0: descent lowers logp towards the reference
    assert logp.grad.item() == pytest.approx(0.04 * 0.5, rel=1e-5)
