"""The policy-gradient family by name: each preset sets its values, explicit values win, advantages match."""

from __future__ import annotations

import pytest
import torch

from trainer_client.cli import main
from trainer_client.rl import grpo_advantages
from trainer_client.train.config import trainer_of
from trainer_client.train.grpo_config import GrpoConfig, load_config, to_yaml
from trainer_client.train.ppo_config import load_config as load_ppo_config
from trainer_client.train.presets import PRESETS

BASE = ["model.path=m", "data.train=d.jsonl"]


def grpo_section(algorithm: str, *extra: str) -> GrpoConfig:
    return load_config(None, [*BASE, f"algorithm={algorithm}", *extra]).grpo


def outcome_advantages(grpo: GrpoConfig, rewards: torch.Tensor) -> torch.Tensor:
    """What the trainer computes from a config (``GrpoTrainer.make_batch``)."""
    return grpo_advantages(rewards, scale=grpo.advantage_scale, baseline=grpo.baseline, min_valid=grpo.min_valid)


@pytest.mark.parametrize("algorithm, expected", [
    ("reinforce", dict(baseline="none", advantage_scale="none", loss_agg="seq_sum_norm", beta=0.0, ppo_epochs=1)),
    ("rloo", dict(baseline="leave_one_out", advantage_scale="none", loss_agg="seq_sum_norm", beta=0.0)),
    ("grpo", dict(baseline="mean", advantage_scale="group", loss_agg="sequence", eps_high=0.2, beta=0.04,
                  kl_estimator="k3")),
    ("dr_grpo", dict(baseline="mean", advantage_scale="none", loss_agg="seq_sum_norm", beta=0.0)),
    ("dapo", dict(baseline="mean", advantage_scale="group", loss_agg="token", eps_low=0.2, eps_high=0.28,
                  dynamic_sampling=True, overlong_penalty=1.0, beta=0.0)),
])
def test_each_preset_sets_its_advantage_and_loss_settings(algorithm, expected):
    grpo = grpo_section(algorithm)
    assert {k: getattr(grpo, k) for k in expected} == expected


def test_reinforce_advantages_are_the_rewards_even_in_a_zero_variance_group():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    assert outcome_advantages(grpo_section("reinforce"), rewards).tolist() == rewards.tolist()


def test_rloo_advantages_use_the_mean_of_the_other_members():
    adv = outcome_advantages(grpo_section("rloo"), torch.tensor([[1.0, 1.0, 1.0, 0.0], [2.0, 0.0, 1.0, 1.0]]))
    assert adv[0].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, -1.0])
    assert adv[1].tolist() == pytest.approx([2 - 2 / 3, -4 / 3, 0.0, 0.0])


def test_grpo_and_dr_grpo_advantages():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0]])  # mean 0.5, population std 0.5
    assert outcome_advantages(grpo_section("grpo"), rewards)[0].tolist() == pytest.approx(
        [0.5 / 0.5001, -0.5 / 0.5001, -0.5 / 0.5001, 0.5 / 0.5001])
    assert outcome_advantages(grpo_section("dr_grpo"), rewards)[0].tolist() == [0.5, -0.5, -0.5, 0.5]


def test_explicit_values_in_the_file_or_set_override_the_preset(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("algorithm: dr_grpo\nmodel: {path: m}\ndata: {train: d.jsonl}\ngrpo: {beta: 0.04}\n")
    config = load_config(path, ["grpo.loss_agg=token"])
    assert config.algorithm == "dr_grpo"
    assert (config.grpo.beta, config.grpo.loss_agg, config.grpo.advantage_scale) == (0.04, "token", "none")


def test_no_algorithm_keeps_the_field_defaults():
    config = load_config(None, BASE)
    assert config.algorithm is None and config.grpo == GrpoConfig()


def test_a_resolved_preset_config_loads_back_the_same(tmp_path):
    config = load_config(None, [*BASE, "algorithm=dapo", "grpo.eps_high=0.3"])
    path = tmp_path / "again.yaml"
    path.write_text(to_yaml(config))
    assert load_config(path) == config


def test_ppo_is_a_preset_of_the_ppo_trainer_only():
    assert load_ppo_config(None, [*BASE, "algorithm=ppo"]).ppo.value_clip == 0.2
    with pytest.raises(ValueError, match="trainer-client ppo"):
        load_config(None, [*BASE, "algorithm=ppo"])
    with pytest.raises(ValueError, match="trainer-client grpo"):
        load_ppo_config(None, [*BASE, "algorithm=dapo"])


def test_an_unknown_algorithm_lists_the_known_ones():
    with pytest.raises(ValueError, match="dr_grpo"):
        load_config(None, [*BASE, "algorithm=grpo2"])


def test_train_picks_the_trainer_from_the_algorithm(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("algorithm: ppo\n")
    assert trainer_of(path) == "ppo"
    assert trainer_of(path, ["algorithm=rloo"]) == "grpo"
    assert trainer_of(None) == "grpo"


def test_help_config_prints_every_preset_and_what_it_sets(capsys):
    assert main(["grpo", "--help-config"]) == 0
    out = capsys.readouterr().out
    for name in PRESETS:
        assert f"  {name} [trainer-client" in out
    assert "grpo.eps_high=0.28" in out and "grpo.baseline='leave_one_out'" in out


def test_an_explicit_value_that_differs_from_the_preset_is_logged(caplog):
    load_config(None, [*BASE, "algorithm=dr_grpo", "grpo.advantage_scale=group", "grpo.beta=0.0"])
    assert "grpo.advantage_scale='group' (preset: 'none')" in caplog.text and "grpo.beta" not in caplog.text
