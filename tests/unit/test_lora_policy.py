"""LoRA (model.lora, through peft): a training step moves only the adapters, the KL reference is the base
with the adapters off (no second copy), and a checkpoint holds the adapter plus, when asked, a merged model."""

from __future__ import annotations

import pytest
import torch

from tests.grpo_fixtures import save_tiny_policy
from trainer_client.errors import ModelPathError
from trainer_client.preflight import check_model_path
from trainer_client.train import checkpointing
from trainer_client.train.config import LoraSettings, ModelConfig, SamplingConfig
from trainer_client.train.grpo_config import GrpoConfig
from trainer_client.train.grpo_update import TrainBatch, grpo_update
from trainer_client.train.logprobs import batched_logprobs
from trainer_client.train.lora import MERGED_DIR, is_adapted, trainable_parameters
from trainer_client.train.models import (
    linear_warmup,
    load_policy,
    load_tokenizer,
    load_trainable_policy,
    merged_writer,
    start_dir,
)
from trainer_client.train.reference import load_reference
from trainer_client.train.rollouts import PromptRow, generate_groups

pytest.importorskip("peft")

ROWS = [PromptRow(str(i), f"What is {i} + {i + 1}?", {"answer": str(2 * i + 1)}, "gsm8k") for i in range(3)]


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    return save_tiny_policy(tmp_path_factory.mktemp("policy"))


def _config(policy_dir, **lora) -> ModelConfig:
    return ModelConfig(path=str(policy_dir), lora=LoraSettings(r=4, alpha=8.0, target_modules=("q_proj", "v_proj"),
                                                               **lora))


def _batch(model, tokenizer) -> TrainBatch:
    torch.manual_seed(0)
    ro = generate_groups(model, tokenizer, ROWS, SamplingConfig(group_size=4, max_new_tokens=10))
    advantages = torch.where(torch.arange(len(ro.texts)) % 2 == 0, 1.0, -1.0)
    return TrainBatch(ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, ro.completion_mask,
                      advantages, None, None)


def _logp(model, batch) -> torch.Tensor:
    was_training = model.training
    model.eval()
    out = batched_logprobs(model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask,
                           temperature=1.0, micro_batch_size=64)
    model.train(was_training)
    return out


def _train_steps(model, batch, steps=2) -> None:
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=5e-2)
    for step in range(steps):
        grpo_update(model, optimizer, batch, GrpoConfig(), temperature=1.0, norm_len=10, max_grad_norm=1.0, seed=0,
                    step=step)


@pytest.fixture(scope="module")
def trained(policy_dir):
    """(config, tokenizer, adapted policy after two steps, its batch)."""
    config = _config(policy_dir)
    tokenizer = load_tokenizer(str(policy_dir))
    policy = load_policy(str(policy_dir), config, trainable=True)
    batch = _batch(policy, tokenizer)
    _train_steps(policy, batch)
    return config, tokenizer, policy, batch


def test_only_the_adapters_are_trainable(policy_dir):
    policy = load_policy(str(policy_dir), _config(policy_dir), trainable=True)
    assert is_adapted(policy)
    names = [name for name, p in policy.named_parameters() if p.requires_grad]
    assert names and all("lora_" in name for name in names)
    assert len(trainable_parameters(policy)) == len(names)


def test_a_training_step_changes_the_adapters_and_no_base_weight(policy_dir, trained):
    _, _, policy, _ = trained
    start = load_policy(str(policy_dir), _config(policy_dir), trainable=True).state_dict()
    after = policy.state_dict()
    assert after.keys() == start.keys()
    changed = {name for name in after if not torch.equal(after[name], start[name])}
    assert changed and all("lora_" in name for name in changed)
    assert any("lora_B" in name for name in changed)


def test_the_kl_reference_is_the_base_with_adapters_off_and_leaves_them_on(policy_dir, trained):
    config, _, policy, batch = trained
    base = load_policy(str(policy_dir), ModelConfig(path=str(policy_dir)), trainable=False)
    policy_before = _logp(policy, batch)
    reference = load_reference(config, policy)
    assert reference.model is policy  # no second copy
    ref_logp = reference.logprobs(batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask,
                                  temperature=1.0, micro_batch_size=5)
    mask = batch.completion_mask
    torch.testing.assert_close(ref_logp[mask], _logp(base, batch)[mask], atol=1e-5, rtol=1e-5)
    assert (policy_before[mask] - ref_logp[mask]).abs().max() > 1e-3  # the policy has moved away from the base
    assert policy.training  # the reference pass restores train mode ...
    torch.testing.assert_close(_logp(policy, batch), policy_before)  # ... and the adapters


def test_full_fine_tuning_keeps_a_frozen_copy_as_reference(policy_dir):
    config = ModelConfig(path=str(policy_dir))
    policy = load_policy(str(policy_dir), config, trainable=True)
    reference = load_reference(config, policy)
    assert reference.model is not policy and not any(p.requires_grad for p in reference.model.parameters())


def test_a_checkpoint_holds_the_adapter_and_a_merged_model_and_resumes(policy_dir, trained, tmp_path):
    _, tokenizer, policy, batch = trained
    config = _config(policy_dir, save_merged=True)
    optimizer = torch.optim.AdamW(trainable_parameters(policy), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear_warmup(0))
    checkpoint = checkpointing.save_checkpoint(tmp_path, 2, policy, tokenizer, optimizer, scheduler,
                                               {"sampler": {}}, write_extra=merged_writer(policy, tokenizer, config))
    files = {p.name for p in checkpoint.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", MERGED_DIR} <= files
    assert "model.safetensors" not in files  # the base is model.path, not copied into every checkpoint
    with pytest.raises(ModelPathError, match="holds a LoRA adapter only .* merged/"):
        check_model_path(str(checkpoint))
    expected = _logp(policy, batch)
    mask = batch.completion_mask
    merged = load_policy(str(checkpoint / MERGED_DIR), ModelConfig(path=str(checkpoint / MERGED_DIR)),
                         trainable=False)
    assert not is_adapted(merged)
    torch.testing.assert_close(_logp(merged, batch)[mask], expected[mask], atol=1e-5, rtol=1e-5)
    assert start_dir(config, checkpoint) == str(policy_dir)  # the tokenizer and base load from model.path
    resumed = load_trainable_policy(config, checkpoint)
    assert is_adapted(resumed) and any(p.requires_grad for p in resumed.parameters())
    torch.testing.assert_close(_logp(resumed, batch), expected)


def test_gradient_checkpointing_trains_the_adapters_of_a_frozen_base(policy_dir):
    config = ModelConfig(path=str(policy_dir), gradient_checkpointing=True,
                         lora=LoraSettings(r=4, target_modules=("q_proj", "v_proj")))
    policy = load_policy(str(policy_dir), config, trainable=True)
    tokenizer = load_tokenizer(str(policy_dir))
    batch = _batch(policy, tokenizer)
    before = {n: p.detach().clone() for n, p in policy.named_parameters() if "lora_B" in n}
    _train_steps(policy, batch, steps=1)
    assert any(not torch.equal(p, before[n]) for n, p in policy.named_parameters() if n in before)
