"""KL estimators k1, k2, k3 (Schulman's approximations) from per-token log-probs."""

import math

import pytest
import torch

from trainer_client.rl.kl import kl_estimate, kl_k1, kl_k2, kl_k3

# The policy gives the sampled token 0.5, the reference 0.25: log r = log(0.25/0.5) = -log 2
LOGP = torch.tensor([math.log(0.5)])
REF = torch.tensor([math.log(0.25)])


def test_k1_hand_value():
    # logp - ref_logp = log 0.5 - log 0.25 = log 2 = 0.693147
    assert kl_k1(LOGP, REF).item() == pytest.approx(math.log(2))


def test_k2_hand_value():
    # 0.5 * (log 2)^2 = 0.5 * 0.480453 = 0.240227
    assert kl_k2(LOGP, REF).item() == pytest.approx(0.5 * math.log(2) ** 2)


def test_k3_hand_value():
    # r - 1 - log r = 0.5 - 1 + log 2 = 0.193147
    assert kl_k3(LOGP, REF).item() == pytest.approx(0.5 - 1 + math.log(2), rel=1e-6)


def test_k3_is_never_negative():
    grid = torch.linspace(-15, 0, 61)
    logp, ref = torch.meshgrid(grid, grid, indexing="ij")
    assert (kl_k3(logp, ref) >= 0).all()


@pytest.mark.parametrize("kind", ["k1", "k2", "k3"])
def test_all_estimators_are_zero_when_policies_agree(kind):
    logp = torch.log(torch.tensor([0.1, 0.5, 0.9, 1e-6]))
    assert kl_estimate(logp, logp.clone(), kind).eq(0.0).all()


def test_k1_and_k3_are_unbiased_for_kl_under_the_policy():
    # exact expectation over a 3-token vocabulary sampled from p: E_p[k] = KL(p || q)
    p, q = torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.2, 0.5, 0.3])
    true_kl = (p * (p / q).log()).sum()
    for kind in ("k1", "k3"):
        assert (p * kl_estimate(p.log(), q.log(), kind)).sum().item() == pytest.approx(true_kl.item(), rel=1e-5)


def test_k3_stays_finite_when_reference_is_far_likelier():
    # log r = 0 - (-200) = 200 would overflow exp in float32; clamped to 20: e^20 - 21
    out = kl_k3(torch.tensor([-200.0]), torch.tensor([0.0]))
    assert torch.isfinite(out).all()
    assert out.item() == pytest.approx(math.exp(20) - 21, rel=1e-5)


def test_unknown_estimator_is_rejected():
    with pytest.raises(ValueError, match="unknown KL estimator"):
        kl_estimate(LOGP, REF, "k4")
