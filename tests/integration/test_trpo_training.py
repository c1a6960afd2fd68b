"""TRPO (``algorithm: trpo``) trains the tiny policy against a real reward server within its KL budget."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from examples.tiny.make_start import StartConfig, make_start
from trainer_client.train.checkpointing import latest_checkpoint
from trainer_client.train.grpo import train_grpo
from trainer_client.train.grpo_config import load_config

pytestmark = pytest.mark.slow

MAX_KL = 0.01
STEPS = 4


@pytest.fixture(scope="module")
def start_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny_start")
    make_start(StartConfig(out=str(out), seed=0, steps=100, measure_problems=16, rl_train=256, rl_eval=0))
    return out


def test_every_trpo_update_keeps_the_measured_kl_within_delta(start_dir, tmp_path, reward_server):
    run_dir = tmp_path / "trpo"
    config = load_config(None, [
        f"model.path={start_dir}", f"data.train={start_dir}/rl_train.jsonl", "model.threads=1",
        "reward.embedded=false", f"reward.endpoint={reward_server.address}", "algorithm=trpo",
        f"trpo.max_kl={MAX_KL}", f"run.steps={STEPS}", "run.progress=false", "run.tensorboard=false",
        "sampling.prompts_per_step=4", "sampling.group_size=4", "sampling.max_new_tokens=24",
        "grpo.micro_batch_size=16"], run_dir=str(run_dir))
    summary = train_grpo(config)
    assert (summary.start_step, summary.end_step) == (0, STEPS)
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == list(range(1, STEPS + 1))
    for line in lines:
        assert line["trpo/kl"] <= MAX_KL * (1 + 1e-6), line
        for key in ("trpo/step_fraction", "trpo/surrogate_improvement", "trpo/cg_residual"):
            assert line[key] is not None, key
    accepted = [line for line in lines if line["trpo/accepted"]]
    assert accepted, "no update was accepted: the KL bound held vacuously"
    assert all(line["trpo/kl"] > 0 and line["trpo/surrogate_improvement"] > 0 for line in accepted)
    start = load_file(start_dir / "model.safetensors")
    end = load_file(latest_checkpoint(run_dir) / "model.safetensors")
    assert any(not torch.equal(start[k], end[k]) for k in start)
