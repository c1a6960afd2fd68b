"""GRPO runs end to end against a real reward server; an interrupted run resumes exactly."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from examples.tiny.make_start import StartConfig, make_start
from reward_service.inspector.index import RolloutIndex
from trainer_client.train.checkpointing import checkpoint_dirs, latest_checkpoint
from trainer_client.train.grpo import train_grpo
from trainer_client.train.grpo_config import load_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def start_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny_start")
    make_start(StartConfig(out=str(out), seed=0, steps=100, measure_problems=16, rl_train=256, rl_eval=0))
    return out


def _config(start_dir, run_dir, endpoint, steps, **extra):
    overrides = [f"model.path={start_dir}", f"data.train={start_dir}/rl_train.jsonl", "model.threads=1",
                 "reward.embedded=false", f"reward.endpoint={endpoint}", f"run.steps={steps}", "run.save_every=1",
                 "run.progress=false", "run.tensorboard=false", "sampling.prompts_per_step=4",
                 "sampling.group_size=4", "sampling.max_new_tokens=24", "optim.lr=1e-3", "grpo.micro_batch_size=8",
                 "grpo.ppo_epochs=2", "grpo.mini_batch_size=8", "grpo.beta=0.04"]
    overrides += [f"{k.replace('__', '.')}={v}" for k, v in extra.items()]
    return load_config(None, overrides, run_dir=str(run_dir))


def _rollouts(run_dir):
    return [json.loads(line) for line in (run_dir / "rollouts.jsonl").read_text().splitlines()]


def _metrics(run_dir):
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in lines]


def test_resumed_run_matches_the_uninterrupted_run(start_dir, tmp_path, reward_server):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    train_grpo(_config(start_dir, straight, reward_server.address, steps=3))
    train_grpo(_config(start_dir, resumed, reward_server.address, steps=1))
    summary = train_grpo(_config(start_dir, resumed, reward_server.address, steps=3))
    assert (summary.start_step, summary.end_step) == (1, 3)
    a = load_file(latest_checkpoint(straight) / "model.safetensors")
    b = load_file(latest_checkpoint(resumed) / "model.safetensors")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert _metrics(straight) == _metrics(resumed)
    assert _rollouts(straight) == _rollouts(resumed)  # the lines of the interrupted run's step 2-3 were dropped


def test_metrics_have_a_line_per_step_with_the_documented_keys(start_dir, tmp_path, reward_server):
    run_dir = tmp_path / "run"
    train_grpo(_config(start_dir, run_dir, reward_server.address, steps=2, run__keep_checkpoints=1))
    lines = _metrics(run_dir)
    assert [r["step"] for r in lines] == [1, 2]
    for key in ("reward_mean", "reward_std", "reward/gsm8k/mean", "reward/gsm8k/std", "zero_variance_frac",
                "unscored", "kl", "clip_frac", "approx_kl", "entropy", "response_length", "loss", "lr"):
        assert key in lines[0], key
    raw = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[0])
    assert all(k in raw for k in ("time/generate_s", "time/wait_reward_s", "time/train_s"))
    [checkpoint] = checkpoint_dirs(run_dir)
    assert {"model.safetensors", "optimizer.pt", "rng_state.pt", "trainer_state.json", "tokenizer.json"} <= {
        p.name for p in checkpoint.iterdir()}
    assert (run_dir / "config.yaml").is_file()


def test_rollouts_jsonl_holds_the_sampled_groups_of_every_step_for_the_inspector(start_dir, tmp_path, reward_server):
    run_dir = tmp_path / "run"
    train_grpo(_config(start_dir, run_dir, reward_server.address, steps=2, run__rollouts_sample=2))
    lines = _rollouts(run_dir)
    assert [line["step"] for line in lines] == [1] * 8 + [2] * 8  # 2 groups of 4 per step
    assert all(line["task"] == "gsm8k" and line["prompt"] and "explanation" in line for line in lines)
    assert all((line["reward"] is None) == (line["status"] not in ("OK", "NO_ANSWER")) for line in lines)
    assert any(line["advantage"] is not None for line in lines)
    index = RolloutIndex(run_dir)
    assert (len(index.groups), index.summary()["rollouts"]) == (4, 16)
