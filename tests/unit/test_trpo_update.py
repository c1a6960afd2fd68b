"""TRPO on the tiny policy: every update keeps the measured KL within delta, moves only when it may."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.grpo_fixtures import tiny_policy
from trainer_client.train.grpo_config import GrpoConfig, SamplingConfig, load_config
from trainer_client.train.grpo_update import TrainBatch
from trainer_client.train.rollouts import PromptRow, generate_groups
from trainer_client.train.trpo_config import TrpoConfig
from trainer_client.train.trpo_update import trpo_update

ROWS = [PromptRow(str(i), f"What is {i} + {i + 1}?", {"answer": str(2 * i + 1)}, "gsm8k") for i in range(3)]
TRPO_GRPO = GrpoConfig(update="trpo", micro_batch_size=16)


def _batch(model, tokenizer, advantages=None):
    torch.manual_seed(0)
    ro = generate_groups(model, tokenizer, ROWS, SamplingConfig(group_size=4, max_new_tokens=10))
    adv = torch.linspace(-1.5, 1.5, len(ro.texts)) if advantages is None else advantages
    return TrainBatch(ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, ro.completion_mask.clone(),
                      adv, None, None)


@torch.no_grad()
def _independent_kl(old_model, new_model, batch) -> float:
    """Token mean of KL(pi_old || pi_new) at the valid completion positions, by torch.distributions."""
    def dists(model):
        ids = torch.cat([batch.prompt_ids, batch.completion_ids], dim=1)
        mask = torch.cat([batch.prompt_mask.long(), batch.completion_mask.long()], dim=1)
        positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits.float()
        tc = batch.completion_ids.shape[1]
        return torch.distributions.Categorical(logits=logits[:, -(tc + 1):-1])
    kl = torch.distributions.kl_divergence(dists(old_model), dists(new_model))
    return float(kl[batch.loss_mask].mean())


def _params(model):
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()


def test_the_measured_kl_after_every_update_is_within_delta():
    model, tokenizer = tiny_policy()
    model.eval()
    batch = _batch(model, tokenizer)
    trpo = TrpoConfig(max_kl=0.01)
    accepted = 0
    for _ in range(4):
        before = copy.deepcopy(model)
        stats = trpo_update(model, batch, TRPO_GRPO, trpo, temperature=1.0, norm_len=10)
        kl = _independent_kl(before, model, batch)
        assert kl <= trpo.max_kl * (1 + 1e-4)
        assert kl == pytest.approx(stats["trpo/kl"], rel=1e-3, abs=1e-7)
        accepted += stats["trpo/accepted"]
        if stats["trpo/accepted"]:
            assert stats["trpo/surrogate_improvement"] > 0 and 0 < stats["trpo/step_fraction"] <= 1
            assert kl > 0
    assert accepted >= 1  # otherwise the bound above held vacuously


def test_a_step_uses_most_of_the_budget_and_the_cg_residual_is_reported():
    model, tokenizer = tiny_policy()
    stats = trpo_update(model, _batch(model, tokenizer), TRPO_GRPO, TrpoConfig(max_kl=0.01), temperature=1.0,
                        norm_len=10)
    assert stats["trpo/accepted"] == 1
    assert 0.001 < stats["trpo/kl"] <= 0.01  # the quadratic model puts the full step near delta
    assert stats["trpo/cg_iterations"] <= 10 and stats["trpo/cg_residual"] >= 0


def test_zero_advantages_give_no_improvement_and_leave_the_policy_unchanged():
    model, tokenizer = tiny_policy()
    batch = _batch(model, tokenizer, advantages=torch.zeros(12))
    before = _params(model)
    stats = trpo_update(model, batch, TRPO_GRPO, TrpoConfig(), temperature=1.0, norm_len=10)
    assert stats["trpo/accepted"] == 0 and stats["trpo/kl"] == 0.0 and stats["trpo/line_search_tries"] == 0
    assert torch.equal(_params(model), before)


def test_micro_batches_give_the_same_step_as_the_whole_batch():
    whole, tokenizer = tiny_policy()
    split = copy.deepcopy(whole)
    batch = _batch(whole, tokenizer)
    a = trpo_update(whole, batch, TRPO_GRPO, TrpoConfig(), temperature=1.0, norm_len=10)
    b = trpo_update(split, batch, GrpoConfig(update="trpo", micro_batch_size=5), TrpoConfig(), temperature=1.0,
                    norm_len=10)
    assert a["trpo/step_fraction"] == b["trpo/step_fraction"]
    torch.testing.assert_close(_params(whole), _params(split), atol=1e-5, rtol=1e-4)


def test_the_trpo_preset_selects_the_trust_region_update():
    config = load_config(None, ["model.path=m", "data.train=d.jsonl", "algorithm=trpo", "trpo.max_kl=0.02"])
    assert (config.grpo.update, config.grpo.beta, config.grpo.ppo_epochs) == ("trpo", 0.0, 1)
    assert config.trpo == TrpoConfig(max_kl=0.02)


@pytest.mark.parametrize("extra", ["grpo.beta=0.04", "grpo.ppo_epochs=2", "grpo.entropy_coef=0.01"])
def test_trpo_refuses_loss_terms_and_passes_it_does_not_take(extra):
    with pytest.raises(ValueError, match="grpo.update=trpo"):
        load_config(None, ["model.path=m", "data.train=d.jsonl", "algorithm=trpo", extra])


@pytest.mark.parametrize("field, value", [("max_kl", 0.0), ("cg_iters", 0), ("cg_damping", -1.0),
                                          ("backtrack_coeff", 1.0), ("backtrack_iters", 0)])
def test_trpo_section_refuses_out_of_range_values(field, value):
    with pytest.raises(ValueError, match=f"trpo.{field}"):
        TrpoConfig(**{field: value})
