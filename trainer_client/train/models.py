"""Loading the networks every trainer uses: tokenizer, policy (trainable or frozen), the LR warm-in.

    tokenizer = load_tokenizer("runs/tiny_start")          # left padding, a pad token
    policy = load_policy("runs/tiny_start", config.model, trainable=True)

A model path is checked before anything loads (:func:`trainer_client.preflight.check_model_path`): it must be a local
directory, or a hub id already in the local Hugging Face cache (no network is tried: an absent
path is said at once, not after minutes of hub retries), and its config must be a causal LM.
"""

from __future__ import annotations

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


def load_policy(path: str, config: ModelConfig, trainable: bool) -> torch.nn.Module:
    model = AutoModelForCausalLM.from_pretrained(check_model_path(path), dtype=DTYPES[config.dtype])
    return prepare_model(model, config, trainable)


def prepare_model(model: torch.nn.Module, config: ModelConfig, trainable: bool) -> torch.nn.Module:
    """Device, no dropout, and train mode (+ gradient checkpointing) or frozen eval mode."""
    model.to(config.device)
    for module in model.modules():  # old, new and reference log-probs must see the same network
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    if trainable:
        if config.gradient_checkpointing:
            model.gradient_checkpointing_enable()
        model.train()
    else:
        model.eval()
        model.requires_grad_(False)
    return model


def linear_warmup(warmup_steps: int):
    return lambda s: min(1.0, (s + 1) / warmup_steps) if warmup_steps else 1.0
