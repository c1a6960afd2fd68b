"""The eval settings refuse impossible combinations, saying what to change."""

from __future__ import annotations

import pytest

from trainer_client.evaluation.eval_cli import format_table
from trainer_client.evaluation.evaluate import EvalOptions
from trainer_client.train import grpo_config, ppo_config
from trainer_client.train.config import RunConfig
from trainer_client.train.run_configs import changed_keys


def test_eval_every_needs_eval_data():
    with pytest.raises(ValueError, match="run.eval_every needs run.eval_data"):
        grpo_config.load_config(None, ["model.path=m", "data.train=t.jsonl", "run.eval_every=5"])
    with pytest.raises(ValueError, match="run.eval_every needs run.eval_data"):
        ppo_config.load_config(None, ["model.path=m", "data.train=t.jsonl", "run.eval_every=5"])


def test_eval_k_above_eval_n_is_refused():
    with pytest.raises(ValueError, match=r"run.eval_k must be in 1..run.eval_n=2"):
        RunConfig(eval_every=5, eval_data="x.jsonl", eval_n=2, eval_k=(4,), eval_temperature=1.0)


def test_greedy_eval_with_several_samples_is_refused():
    with pytest.raises(ValueError, match="0 \\(greedy\\) needs run.eval_n=1"):
        RunConfig(eval_n=4, eval_k=(1,))
    with pytest.raises(ValueError, match="temperature 0 decodes greedily"):
        EvalOptions(n=4)


def test_eval_options_refuse_k_above_n():
    with pytest.raises(ValueError, match=r"k=\[8\] impossible with n=4"):
        EvalOptions(n=4, ks=(1, 8), temperature=1.0)


def test_a_sampled_eval_config_is_accepted():
    run = RunConfig(eval_every=5, eval_data="x.jsonl", eval_n=4, eval_k=(1, 4), eval_temperature=0.8)
    assert run.eval_k == (1, 4)


def test_table_shows_missing_values_as_dashes():
    table = format_table({"overall": {"prompts": 1, "samples": 2, "unscored_rate": 1.0, "accuracy": None,
                                      "reward_mean": None, "pass@1": None, "maj@1": None}}, [1])
    header, row = table.splitlines()
    assert header.split() == ["task", "prompts", "samples", "unscored", "accuracy", "reward", "pass@1", "maj@1"]
    assert row.split() == ["overall", "1", "2", "1.0000", "-", "-", "-", "-"]


def test_a_resume_may_turn_evaluation_on():
    before = {"run": {"eval_every": 0, "eval_k": [1]}, "grpo": {"beta": 0.0}}
    after = {"run": {"eval_every": 10, "eval_k": [1, 4]}, "grpo": {"beta": 0.0}}
    assert changed_keys(before, after) == {}
