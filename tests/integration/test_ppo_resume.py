"""PPO runs end to end against a real reward server: an interrupted run resumes exactly (policy,
critic, optimizer, RNGs, prompt position); metrics and checkpoints hold what docs/trainer.md says;
unscored rollouts are counted and kept out of training."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch
from safetensors.torch import load_file

from examples.tiny.make_start import StartConfig, make_start
from tests.grpo_fixtures import write_rows
from trainer_client.cli import main
from trainer_client.train.checkpointing import checkpoint_dirs, latest_checkpoint
from trainer_client.train.ppo import train_ppo
from trainer_client.train.ppo_config import load_config

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
                 "sampling.group_size=2", "sampling.max_new_tokens=24", "optim.lr=1e-3", "ppo.ppo_epochs=2",
                 "ppo.mini_batch_size=4", "ppo.micro_batch_size=4", "ppo.kl_coef=0.05", "ppo.entropy_coef=0.01"]
    overrides += [f"{k.replace('__', '.')}={v}" for k, v in extra.items()]
    return load_config(None, overrides, run_dir=str(run_dir))


def _metrics(run_dir):
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in lines]


def _weights(run_dir, name):
    return load_file(latest_checkpoint(run_dir) / name)


def test_resumed_run_matches_the_uninterrupted_run(start_dir, tmp_path, reward_server):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    train_ppo(_config(start_dir, straight, reward_server.address, steps=3))
    train_ppo(_config(start_dir, resumed, reward_server.address, steps=1))
    summary = train_ppo(_config(start_dir, resumed, reward_server.address, steps=3))
    assert (summary.start_step, summary.end_step) == (1, 3)
    for name in ("model.safetensors", "critic/model.safetensors"):
        a, b = _weights(straight, name), _weights(resumed, name)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a), name
    assert _metrics(straight) == _metrics(resumed)
    rollouts = [(run_dir / "rollouts.jsonl").read_text() for run_dir in (straight, resumed)]
    assert rollouts[0] == rollouts[1] and rollouts[0].count("\n") == 3 * 4 * 2  # steps x groups x group size


def test_metrics_and_checkpoints_hold_the_documented_keys_and_files(start_dir, tmp_path, reward_server):
    run_dir = tmp_path / "run"
    train_ppo(_config(start_dir, run_dir, reward_server.address, steps=2, run__keep_checkpoints=1,
                      ppo__kl_in_reward="false", ppo__kl_estimator="k3"))
    lines = _metrics(run_dir)
    assert [r["step"] for r in lines] == [1, 2]
    for key in ("reward_mean", "reward_std", "unscored", "kl", "clip_frac", "approx_kl", "entropy",
                "response_length", "value_loss", "value_clip_frac", "explained_variance", "value_mean",
                "return_mean", "loss", "grad_norm", "critic_grad_norm", "lr"):
        assert key in lines[0], key
    assert lines[1]["kl"] is not None and lines[1]["value_loss"] is not None
    raw = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[0])
    assert all(k in raw for k in ("time/generate_s", "time/wait_reward_s", "time/logprobs_s", "time/train_s"))
    [checkpoint] = checkpoint_dirs(run_dir)
    assert {"model.safetensors", "optimizer.pt", "rng_state.pt", "trainer_state.json", "tokenizer.json",
            "critic"} <= {p.name for p in checkpoint.iterdir()}
    assert {"model.safetensors", "config.json"} <= {p.name for p in (checkpoint / "critic").iterdir()}
    assert "score.weight" in load_file(checkpoint / "critic" / "model.safetensors")  # the value head is saved
    if importlib.util.find_spec("matplotlib") is not None:
        assert main(["plot", str(run_dir)]) == 0 and (run_dir / "curves.png").is_file()


def test_unscored_rollouts_are_counted_and_left_out(start_dir, tmp_path, reward_server):
    rows = [json.loads(line) for line in (start_dir / "rl_train.jsonl").read_text().splitlines()[:8]]
    for row in rows[::2]:
        row["task"] = "no_such_task"  # the server answers UNKNOWN_TASK: unscored, not 0
    prompts = write_rows(tmp_path / "mixed.jsonl", rows)
    run_dir = tmp_path / "run"
    train_ppo(_config(start_dir, run_dir, reward_server.address, steps=2, data__shuffle="false",
                      data__train=str(prompts), data__check_tasks="false"))  # else refused before step 0
    lines = _metrics(run_dir)
    assert [r["unscored"] for r in lines] == [4, 4]  # 2 of 4 prompts x 2 completions, every step
    assert [r["unscored/UNKNOWN_TASK"] for r in lines] == [4, 4]
    assert all(r["reward_mean"] is not None and r["value_loss"] is not None for r in lines)
