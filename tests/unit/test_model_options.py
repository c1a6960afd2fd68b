"""The real-model options: data columns, chat template, LoRA and token-budget config keys (checks and
messages), bf16 on CPU, and gradient checkpointing that leaves loss and gradients unchanged."""

from __future__ import annotations

import pytest
import torch
import yaml

from tests.grpo_fixtures import save_tiny_policy
from trainer_client.train.config import LoraSettings, ModelConfig, SamplingConfig, to_yaml
from trainer_client.train.grpo_config import GrpoConfig, load_config
from trainer_client.train.grpo_update import TrainBatch, micro_batch_loss
from trainer_client.train.logprobs import completion_logprobs
from trainer_client.train.models import is_checkpointing, load_policy, load_tokenizer
from trainer_client.train.ppo_config import PpoConfig
from trainer_client.train.ppo_config import load_config as load_ppo_config
from trainer_client.train.rollouts import PromptRow, generate_groups

BASE = ["model.path=m", "data.train=t.jsonl"]


def test_data_columns_and_chat_template_are_read_from_overrides():
    config = load_config(None, BASE + ["data.prompt_key=question", "data.reference_key=answer",
                                       "data.chat_template=false"])
    assert (config.data.prompt_key, config.data.reference_key, config.data.chat_template) == (
        "question", "answer", "false")


def test_yaml_booleans_are_accepted_for_chat_template(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: {path: m}\ndata: {train: t.jsonl, chat_template: true}\n")
    assert load_config(path).data.chat_template == "true"


@pytest.mark.parametrize("override, match", [
    ("data.chat_template=maybe", r"data.chat_template must be one of \('auto', 'true', 'false'\), got 'maybe'"),
    ("data.prompt_key=''", "data.prompt_key and data.reference_key must be column names"),
    ("data.reference_key=prompt", "both 'prompt': the prompt and its reference must be different columns"),
    ("grpo.max_tokens_per_micro_batch=-1", "grpo.max_tokens_per_micro_batch must be >= 0"),
    ("model.lora.r=0", "need model.lora.r >= 1"),
    ("model.lora.dropout=1.0", "0 <= model.lora.dropout < 1"),
    ("model.lora.rank=8", r"unknown key\(s\) \['rank'\] in section 'model.lora'"),
    ("model.lora=8", "model.lora: expected a mapping"),
])
def test_bad_values_are_refused_saying_what_to_change(override, match):
    with pytest.raises(ValueError, match=match):
        load_config(None, BASE + [override])


def test_ppo_refuses_a_negative_token_budget():
    with pytest.raises(ValueError, match="ppo.max_tokens_per_micro_batch must be >= 0"):
        load_ppo_config(None, BASE + ["ppo.max_tokens_per_micro_batch=-5"])
    assert PpoConfig(max_tokens_per_micro_batch=512).max_tokens_per_micro_batch == 512


def test_lora_is_set_by_a_mapping_or_by_dotted_overrides_and_survives_the_yaml_round_trip(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: {path: m, lora: {r: 4, alpha: 8, target_modules: [q_proj, v_proj]}}\n"
                    "data: {train: t.jsonl}\n")
    config = load_config(path, ["model.lora.dropout=0.05"])
    assert config.model.lora == LoraSettings(r=4, alpha=8.0, dropout=0.05, target_modules=("q_proj", "v_proj"))
    assert load_config(None, BASE + ["model.lora.r=16"]).model.lora == LoraSettings(r=16)
    assert load_config(path, ["model.lora=null"]).model.lora is None
    again = tmp_path / "again.yaml"
    again.write_text(to_yaml(config))
    assert yaml.safe_load(again.read_text())["model"]["lora"]["target_modules"] == ["q_proj", "v_proj"]
    assert load_config(again) == config


def test_describe_lists_the_nested_lora_keys():
    from trainer_client.train.grpo_config import describe

    text = describe()
    assert "lora.r = 8" in text and "lora.save_merged = False" in text and "max_tokens_per_micro_batch" in text


ROWS = [PromptRow(str(i), f"What is {i} + {i + 1}?", {"answer": str(2 * i + 1)}, "gsm8k") for i in range(3)]


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    return save_tiny_policy(tmp_path_factory.mktemp("policy"))


def _batch(model, tokenizer):
    torch.manual_seed(0)
    ro = generate_groups(model, tokenizer, ROWS, SamplingConfig(group_size=4, max_new_tokens=10))
    return TrainBatch(ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, ro.completion_mask,
                      torch.linspace(-1.5, 1.5, len(ro.texts)), None, None)


def test_bf16_weights_run_forward_and_backward_on_cpu_with_float32_logprobs(policy_dir):
    tokenizer = load_tokenizer(str(policy_dir))
    full = load_policy(str(policy_dir), ModelConfig(path=str(policy_dir)), trainable=True)
    half = load_policy(str(policy_dir), ModelConfig(path=str(policy_dir), dtype="bf16"), trainable=True)
    assert {p.dtype for p in half.parameters()} == {torch.bfloat16}
    batch = _batch(full, tokenizer)
    args = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    exact = completion_logprobs(full, *args).logp
    approx = completion_logprobs(half, *args).logp
    assert approx.dtype == torch.float32 and torch.isfinite(approx).all()
    torch.testing.assert_close(approx[batch.completion_mask], exact[batch.completion_mask], atol=0.1, rtol=0.05)
    loss, _ = micro_batch_loss(half, batch, GrpoConfig(), temperature=1.0, norm_len=10)
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in half.parameters() if p.requires_grad)


def test_gradient_checkpointing_gives_the_same_loss_and_gradients(policy_dir):
    tokenizer = load_tokenizer(str(policy_dir))
    plain = load_policy(str(policy_dir), ModelConfig(path=str(policy_dir)), trainable=True)
    checkpointed = load_policy(str(policy_dir), ModelConfig(path=str(policy_dir), gradient_checkpointing=True),
                               trainable=True)
    assert is_checkpointing(checkpointed) and not is_checkpointing(plain)
    batch = _batch(plain, tokenizer)
    results = []
    for model in (plain, checkpointed):
        loss, _ = micro_batch_loss(model, batch, GrpoConfig(beta=0.0), temperature=1.0, norm_len=10)
        loss.backward()
        results.append((loss.detach(), [p.grad.clone() for p in model.parameters()]))
    torch.testing.assert_close(results[0][0], results[1][0])
    for a, b in zip(results[0][1], results[1][1]):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_sft_and_dpo_turn_gradient_checkpointing_on_from_their_flag(policy_dir):
    import argparse

    from trainer_client.offline_cli import add_flags_and_config_file, config_from_flags_and_file
    from trainer_client.sft.sft_train import SFTConfig, load_causal_lm

    parser = argparse.ArgumentParser()
    add_flags_and_config_file(parser, SFTConfig)
    args = parser.parse_args(["--model", str(policy_dir), "--data", "d.jsonl", "--out", "o",
                              "--gradient-checkpointing"])
    config = config_from_flags_and_file(SFTConfig, args)
    assert config.gradient_checkpointing
    model, _ = load_causal_lm(config.model, torch.device("cpu"), config.gradient_checkpointing)
    assert is_checkpointing(model)
    assert not is_checkpointing(load_causal_lm(config.model, torch.device("cpu"))[0])


def test_the_real_model_example_config_loads():
    config = load_config("configs/grpo_gsm8k_lora.yaml")
    assert (config.data.prompt_key, config.data.reference_key) == ("question", "answer")
    assert config.model.lora == LoraSettings(r=16, alpha=32.0, target_modules=(
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"), save_merged=True)
    assert config.model.dtype == "bfloat16" and config.grpo.max_tokens_per_micro_batch == 16384
