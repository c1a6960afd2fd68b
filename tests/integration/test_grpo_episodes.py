"""`trainer-client grpo` on episodes: the tiny model talks to ``arithmetic_tools`` on the embedded server
(started with --serve-environments), and a training step runs end to end."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from tests.grpo_fixtures import save_tiny_policy
from trainer_client.train.checkpointing import latest_checkpoint
from trainer_client.train.grpo import train_grpo
from trainer_client.train.grpo_config import load_config

pytestmark = pytest.mark.slow


def test_a_grpo_step_on_episodes_runs_end_to_end_and_updates_the_policy(tmp_path):
    start = save_tiny_policy(tmp_path / "start")
    run_dir = tmp_path / "run"
    config = load_config(None, [
        f"model.path={start}", "model.threads=1", "episodes.environment=arithmetic_tools", "episodes.rows=8",
        "episodes.max_turns=2", "episodes.tool_role=user", "episodes.tool_prompt=names", "run.steps=1",
        "run.progress=false", "run.tensorboard=false", "sampling.prompts_per_step=2", "sampling.group_size=2",
        "sampling.max_new_tokens=8", "optim.lr=1e-3", "grpo.baseline=none", "grpo.advantage_scale=none",
        "grpo.min_valid=1", "grpo.entropy_coef=0.1"], run_dir=str(run_dir))
    summary = train_grpo(config)
    assert summary.end_step == 1
    (line,) = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    # an untrained policy writes no tool call: each episode is finished with its one turn, and scored (0)
    assert line["episodes/status/FINISHED"] == 4 and line["unscored"] == 0
    assert line["episodes/turns_mean"] >= 1 and line["reward_mean"] == 0.0
    records = [json.loads(x) for x in (run_dir / "rollouts.jsonl").read_text().splitlines()]
    assert records and "What is" in json.dumps(records[0])
    # rewards are all 0 (no advantage), but the entropy bonus over the policy's tokens still moves the weights
    assert line["loss"] is not None and line["entropy"] > 0 and line["grad_norm"] > 0
    before = load_file(start / "model.safetensors")
    after = load_file(latest_checkpoint(run_dir) / "model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)
