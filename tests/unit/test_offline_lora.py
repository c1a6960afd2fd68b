"""LoRA in the offline trainers (``sft``/``dpo --lora-r``): only the adapted modules move, OUT_DIR is a plain
merged checkpoint with the adapter alone beside it, and DPO's reference is the base with the adapters off."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from tests.grpo_fixtures import save_tiny_policy
from tests.offline_fixtures import split_problems, write_pairs, write_sft
from trainer_client.cli import main
from trainer_client.dpo.dpo_train import DPOConfig, load_reference
from trainer_client.offline_options import lora_settings
from trainer_client.sft.sft_train import ADAPTER_DIR, SFTConfig, load_causal_lm, with_adapters

pytest.importorskip("peft")

COMMON = ["--no-progress", "--num-threads", "1", "--batch-size", "8", "--max-steps", "4", "--lora-r", "4",
          "--lora-target-modules", "q_proj,v_proj", "--no-tensorboard"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("offline_lora")
    train, _ = split_problems(32, 4)
    return {"start": save_tiny_policy(root / "start"), "sft": write_sft(root / "sft.jsonl", train),
            "pairs": write_pairs(root / "pairs.jsonl", train), "root": root}


def _weights(path) -> dict[str, torch.Tensor]:
    return AutoModelForCausalLM.from_pretrained(path).state_dict()


def _moved(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> set[str]:
    assert before.keys() == after.keys()
    return {name for name in before if not torch.equal(before[name], after[name])}


@pytest.mark.parametrize("command", ["sft", "dpo"])
def test_only_the_adapted_modules_move_and_out_dir_is_a_plain_checkpoint(files, command) -> None:
    out = files["root"] / command
    data = files["sft"] if command == "sft" else files["pairs"]
    lr = "3e-3" if command == "sft" else "1e-2"
    assert main([command, "--model", str(files["start"]), "--data", str(data), "--out", str(out), "--lr", lr,
                 *COMMON]) == 0
    moved = _moved(_weights(files["start"]), _weights(out))  # loads with no peft involved: merged
    assert moved, "training changed nothing"
    assert all(".q_proj." in name or ".v_proj." in name for name in moved), sorted(moved)
    adapter = out / ADAPTER_DIR
    assert json.loads((adapter / "adapter_config.json").read_text())["r"] == 4
    assert all("lora_" in key for key in load_file(adapter / "adapter_model.safetensors"))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 4


def test_dpo_reference_is_the_base_without_a_copy(files) -> None:
    config = DPOConfig(data=str(files["pairs"]), out_dir=str(files["root"] / "unused"), model=str(files["start"]),
                       lora_r=4, lora_target_modules="q_proj,v_proj")
    model, _ = load_causal_lm(config.model, torch.device("cpu"))
    model = with_adapters(model, config)
    assert load_reference(config, model, torch.device("cpu")) is None
    full = DPOConfig(data=str(files["pairs"]), out_dir=str(files["root"] / "unused"), model=str(files["start"]))
    assert load_reference(full, load_causal_lm(full.model, torch.device("cpu"))[0], torch.device("cpu")) is not None


def test_dpo_first_step_has_zero_margin_under_lora(files) -> None:
    """Adapters start as a no-op, so before the first update the policy *is* its reference: every
    logged reward margin of step 1 is exactly 0 — the reference really is the base."""
    out = files["root"] / "dpo_margin"
    assert main(["dpo", "--model", str(files["start"]), "--data", str(files["pairs"]), "--out", str(out),
                 "--lr", "1e-2", "--logging-steps", "1", *COMMON]) == 0
    first = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert first["rewards/margins"] == 0.0 and first["rewards/chosen"] == 0.0
    later = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()[1:]]
    assert any(line["rewards/margins"] != 0.0 for line in later)


@pytest.mark.parametrize("flags, message", [
    ({"lora_r": 0}, "--lora-r"),
    ({"lora_r": 4, "lora_dropout": 1.0}, "--lora-dropout"),
    ({"lora_r": 4, "lora_target_modules": "q_proj,,v_proj"}, "--lora-target-modules"),
])
def test_bad_lora_options_name_the_flag(flags, message) -> None:
    with pytest.raises(ValueError, match=message):
        SFTConfig(data="d.jsonl", out_dir="o", model="m", **flags)


def test_no_lora_options_mean_full_fine_tuning() -> None:
    assert lora_settings(SFTConfig(data="d.jsonl", out_dir="o", model="m")) is None
    settings = lora_settings(SFTConfig(data="d.jsonl", out_dir="o", model="m", lora_r=8,
                                       lora_target_modules="all-linear"))
    assert settings is not None and settings.r == 8 and settings.target_modules == ("all-linear",)
