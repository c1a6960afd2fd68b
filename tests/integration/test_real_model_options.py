"""GRPO and PPO end to end with the real-model options against a real reward server: gsm8k-style columns,
the chat template, LoRA (adapter checkpoints, a merged model, resume onto the base), a KL term whose reference
is the base with the adapters off, and micro-batches by token budget."""

from __future__ import annotations

import json

import pytest

from tests.grpo_fixtures import save_tiny_policy
from trainer_client.preflight import check_model_path
from trainer_client.train.checkpointing import latest_checkpoint
from trainer_client.train.grpo import train_grpo
from trainer_client.train.grpo_config import load_config
from trainer_client.train.lora import MERGED_DIR
from trainer_client.train.ppo import train_ppo
from trainer_client.train.ppo_config import load_config as load_ppo_config

pytestmark = pytest.mark.slow
pytest.importorskip("peft")


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    return save_tiny_policy(tmp_path_factory.mktemp("policy"))


@pytest.fixture(scope="module")
def gsm8k_file(tmp_path_factory):
    from examples.tiny import make_problems

    path = tmp_path_factory.mktemp("data") / "gsm8k_style.jsonl"
    path.write_text("".join(json.dumps({"question": p.prompt, "answer": f"so it is\n#### {p.answer}"}) + "\n"
                            for p in make_problems(32, seed=3)))
    return path


def _overrides(policy_dir, data, endpoint, steps):
    return [f"model.path={policy_dir}", f"data.train={data}", "data.task=gsm8k", "data.prompt_key=question",
            "data.reference_key=answer", "data.chat_template=true", "model.threads=1", "reward.embedded=false",
            f"reward.endpoint={endpoint}", f"run.steps={steps}", "run.save_every=1", "run.progress=false",
            "run.tensorboard=false", "sampling.prompts_per_step=2", "sampling.group_size=4",
            "sampling.max_new_tokens=12", "optim.lr=1e-2", "model.lora.r=4",
            "model.lora.target_modules=[q_proj, v_proj]", "model.lora.save_merged=true"]


def test_a_lora_grpo_run_on_gsm8k_columns_saves_adapters_and_resumes(policy_dir, gsm8k_file, tmp_path, reward_server):
    run_dir = tmp_path / "run"
    extra = ["grpo.beta=0.04", "grpo.micro_batch_size=8", "grpo.max_tokens_per_micro_batch=120"]
    train_grpo(load_config(None, _overrides(policy_dir, gsm8k_file, reward_server.address, 1) + extra,
                           run_dir=str(run_dir)))
    checkpoint = latest_checkpoint(run_dir)
    files = {p.name for p in checkpoint.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", MERGED_DIR, "optimizer.pt"} <= files
    assert check_model_path(str(checkpoint / MERGED_DIR))  # a plain causal LM checkpoint
    summary = train_grpo(load_config(None, _overrides(policy_dir, gsm8k_file, reward_server.address, 2) + extra,
                                     run_dir=str(run_dir)))
    assert (summary.start_step, summary.end_step) == (1, 2)
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 2]
    assert all(line["unscored"] == 0 and line["kl"] is not None for line in lines)  # every reference was read
    rollout = json.loads((run_dir / "rollouts.jsonl").read_text().splitlines()[0])
    questions = {json.loads(line)["question"] for line in gsm8k_file.read_text().splitlines()}
    assert rollout["prompt"] in questions and rollout["reference"]["answer"].startswith("so it is\n#### ")


def test_a_lora_ppo_run_trains_with_the_base_as_kl_reference(policy_dir, gsm8k_file, tmp_path, reward_server):
    run_dir = tmp_path / "ppo"
    config = load_ppo_config(None, _overrides(policy_dir, gsm8k_file, reward_server.address, 1)
                             + ["algorithm=ppo", "ppo.kl_coef=0.05", "ppo.max_tokens_per_micro_batch=120"],
                             run_dir=str(run_dir))
    summary = train_ppo(config)
    assert summary.end_step == 1
    [line] = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert line["kl"] is not None and line["value_loss"] is not None
    assert (latest_checkpoint(run_dir) / "critic").is_dir()
    assert (latest_checkpoint(run_dir) / MERGED_DIR / "config.json").is_file()
