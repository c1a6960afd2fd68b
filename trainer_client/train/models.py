"""Loading the networks every trainer uses: tokenizer, policy (trainable or frozen), the LR warm-in.

    tokenizer = load_tokenizer("runs/tiny_start")          # left padding, a pad token
    policy = load_policy("runs/tiny_start", config.model, trainable=True)
    policy = load_trainable_policy(config.model, checkpoint)   # start or resume; LoRA adapters when asked

``model.dtype`` is the weights' and compute's dtype (bfloat16 halves memory; log-probs are
taken in float32); ``model.gradient_checkpointing`` recomputes activations in the backward
pass (non-reentrant, so it also works when only adapters train); ``model.lora`` trains
low-rank adapters on a frozen base (``lora``).

A model path is checked before anything loads (:func:`trainer_client.preflight.check_model_path`): it must be a local
directory, or a hub id already in the local Hugging Face cache (no network is tried: an absent
path is said at once, not after minutes of hub retries), and its config must be a causal LM.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from reward_core.dtype_names import DTYPES as DTYPE_NAMES
from trainer_client.errors import ModelPathError  # noqa: F401 - re-exported (older import path)
from trainer_client.preflight import check_model_path
from trainer_client.train.config import ModelConfig

DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}  # ModelConfig.dtype (torch's names) -> dtype


def load_tokenizer(path: str) -> Any:
    tokenizer = AutoTokenizer.from_pretrained(check_model_path(path))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_policy(path: str, config: ModelConfig, trainable: bool, adapter_dir: str | Path | None = None) -> Any:
    """The causal LM at ``path``; trainable with ``model.lora`` set: wrapped with adapters (new, or those in
    ``adapter_dir``), the base frozen."""
    model = AutoModelForCausalLM.from_pretrained(check_model_path(path), dtype=DTYPES[config.dtype])
    model = prepare_model(model, config, trainable)
    if trainable and config.lora is not None:
        from trainer_client.train.lora import add_adapters

        model = add_adapters(model, config.lora, adapter_dir)
    return model


def start_dir(config: ModelConfig, checkpoint: Path | None) -> str:
    """Where a run's tokenizer (and, without LoRA, its weights) load from: the checkpoint it resumes, else
    ``model.path`` (a LoRA checkpoint holds the adapter only: the base is ``model.path``)."""
    return str(checkpoint) if checkpoint is not None and config.lora is None else config.path


def load_trainable_policy(config: ModelConfig, checkpoint: Path | None) -> Any:
    """The policy a run trains: the start model, or the checkpoint it resumes (with LoRA: the base plus the
    checkpoint's adapter)."""
    adapter_dir = checkpoint if config.lora is not None else None
    return load_policy(start_dir(config, checkpoint), config, trainable=True, adapter_dir=adapter_dir)


def merged_writer(model: Any, tokenizer: Any, config: ModelConfig) -> Callable[[Path], None] | None:
    """With ``model.lora.save_merged``: what writes a checkpoint's ``merged/`` (``save_checkpoint``'s
    ``write_extra``); else None."""
    if config.lora is None or not config.lora.save_merged:
        return None
    from trainer_client.train.lora import MERGED_DIR, save_merged

    def write(directory: Path) -> None:
        save_merged(model, tokenizer, directory / MERGED_DIR)

    return write


def prepare_model(model: torch.nn.Module, config: ModelConfig, trainable: bool) -> torch.nn.Module:
    """Device, no dropout, and train mode (+ gradient checkpointing) or frozen eval mode."""
    model.to(config.device)
    for module in model.modules():  # old, new and reference log-probs must see the same network
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    if trainable:
        if config.gradient_checkpointing:
            enable_checkpointing(model)
        model.train()
    else:
        model.eval()
        model.requires_grad_(False)
    return model


def enable_checkpointing(model: torch.nn.Module) -> None:
    """Activation (gradient) checkpointing, non-reentrant: under transformers' new name when it has it."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def is_checkpointing(model: torch.nn.Module) -> bool:
    """Whether activation checkpointing is on (either transformers name)."""
    flag = getattr(model, "is_activation_checkpointing", None)
    return bool(flag if flag is not None else getattr(model, "is_gradient_checkpointing", False))


def linear_warmup(warmup_steps: int):
    return lambda s: min(1.0, (s + 1) / warmup_steps) if warmup_steps else 1.0
