"""DPO losses, the SFT term and the reward metrics, against hand-computed values.

One pair throughout: log π(c) = -1, log π(r) = -3, log π_ref(c) = log π_ref(r) = -2, so the
chosen log-ratio is +1, the rejected one -1, and Δ = 2. With β = 0.5, βΔ = 1, and
-log σ(1) = log(1 + e^-1) = 0.3132617, -log σ(-1) = 1.3132617.
"""

from __future__ import annotations

import math

import pytest
import torch

from trainer_client.dpo.dpo_loss import PairLogps, check_loss_options, dpo_losses, reward_metrics, sft_term

PAIR = PairLogps(torch.tensor([-1.0]), torch.tensor([-3.0]), torch.tensor([-2.0]), torch.tensor([-2.0]))
NLS_POS = math.log1p(math.exp(-1))  # -log sigmoid(1)
NLS_NEG = math.log1p(math.exp(1))  # -log sigmoid(-1)


def loss(**kw) -> float:
    return float(dpo_losses(PAIR, **kw)[0])


def test_sigmoid_is_minus_log_sigmoid_of_beta_delta() -> None:
    assert loss(beta=0.5) == pytest.approx(NLS_POS)


def test_sigmoid_with_label_smoothing_is_conservative_dpo() -> None:
    assert loss(beta=0.5, label_smoothing=0.2) == pytest.approx(0.8 * NLS_POS + 0.2 * NLS_NEG)  # 0.5132617


def test_hinge_is_zero_past_the_margin_and_linear_before() -> None:
    assert loss(beta=0.5, loss_type="hinge") == 0.0  # 1 - 1
    assert loss(beta=0.25, loss_type="hinge") == pytest.approx(0.5)  # 1 - 0.5


def test_ipo_uses_per_token_log_ratios() -> None:
    # per token: 1/2 - (-1)/4 = 0.75; target 1/(2*0.5) = 1; (0.75 - 1)^2 = 0.0625
    value = loss(beta=0.5, loss_type="ipo", chosen_tokens=torch.tensor([2.0]), rejected_tokens=torch.tensor([4.0]))
    assert value == pytest.approx(0.0625)
    with pytest.raises(ValueError, match="token counts"):
        loss(beta=0.5, loss_type="ipo")


def test_robust_divides_the_flipped_label_correction() -> None:
    # (0.8 * 0.3132617 - 0.2 * 1.3132617) / 0.6 = -0.0200717
    expected = (0.8 * NLS_POS - 0.2 * NLS_NEG) / 0.6
    assert loss(beta=0.5, loss_type="robust", label_smoothing=0.2) == pytest.approx(expected)
    assert loss(beta=0.5, loss_type="robust") == pytest.approx(NLS_POS)  # no smoothing: plain DPO


def test_losses_are_per_pair() -> None:
    two = PairLogps(torch.tensor([-1.0, -3.0]), torch.tensor([-3.0, -1.0]), torch.zeros(2) - 2, torch.zeros(2) - 2)
    assert dpo_losses(two, beta=0.5).tolist() == pytest.approx([NLS_POS, NLS_NEG])


def test_the_sft_term_is_the_mean_nll_of_chosen_tokens() -> None:
    token_logps = torch.tensor([[-1.0, -2.0, -9.0], [-3.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    assert float(sft_term(token_logps, mask)) == pytest.approx(2.0)  # (1 + 2 + 3) / 3


def test_reward_metrics_use_trl_names() -> None:
    metrics = reward_metrics(PAIR, beta=0.5)
    assert metrics == pytest.approx({"rewards/chosen": 0.5, "rewards/rejected": -0.5, "rewards/accuracies": 1.0,
                                     "rewards/margins": 1.0, "logps/chosen": -1.0, "logps/rejected": -3.0})


def test_a_tie_is_not_an_accurate_pair() -> None:
    tie = PairLogps(torch.tensor([-2.0]), torch.tensor([-2.0]), torch.tensor([-2.0]), torch.tensor([-2.0]))
    assert reward_metrics(tie, beta=0.1)["rewards/accuracies"] == 0.0


@pytest.mark.parametrize(("loss_type", "beta", "smoothing", "says"), [
    ("kto", 0.1, 0.0, "loss_type"), ("sigmoid", 0.0, 0.0, "beta"), ("robust", 0.1, 0.5, "label_smoothing")])
def test_bad_options_say_what_to_use(loss_type: str, beta: float, smoothing: float, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        check_loss_options(loss_type, beta, smoothing)
