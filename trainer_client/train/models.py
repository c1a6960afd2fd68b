"""Loading the networks every trainer uses: tokenizer, policy (trainable or frozen), the LR warm-in.

    tokenizer = load_tokenizer("runs/tiny_start")          # left padding, a pad token
    policy = load_policy("runs/tiny_start", config.model, trainable=True)

A model path is checked before anything loads (:func:`check_model_path`): it must be a local
directory, or a hub id already in the local Hugging Face cache (no network is tried: an absent
path is said at once, not after minutes of hub retries), and its config must be a causal LM.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from reward_core.dtype_names import DTYPES as DTYPE_NAMES
from trainer_client.errors import ModelPathError
from trainer_client.train.config import ModelConfig

DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}  # ModelConfig.dtype (torch's names) -> dtype


@lru_cache(maxsize=16)
def check_model_path(path: str) -> str:
    """The local directory of ``path``; raises ModelPathError saying what is wrong, before any loading."""
    local = path
    if not os.path.isdir(path):
        if os.path.exists(path):
            raise ModelPathError(f"model path {path!r} is a file; give the directory a checkpoint was saved to "
                                 "(save_pretrained)")
        local = _cached_snapshot(path)
        if local is None:
            raise ModelPathError(f"model path {path!r}: no such directory (and not a Hugging Face hub id in the "
                                 "local cache; no download is tried: fetch it first, e.g. `hf download ID`)")
    config_file = os.path.join(local, "config.json")
    try:
        with open(config_file, encoding="utf-8") as f:
            config = json.load(f)
    except FileNotFoundError:
        raise ModelPathError(f"model path {path!r} has no config.json: not a Hugging Face checkpoint") from None
    except (OSError, ValueError) as exc:
        raise ModelPathError(f"model path {path!r}: cannot read {config_file}: {exc}") from None
    model_type = str(config.get("model_type", "")) if isinstance(config, dict) else ""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    architectures = config.get("architectures") if isinstance(config, dict) else None
    causal_classes = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    saved_as_causal = not architectures or any(
        str(a) in causal_classes or str(a).endswith(("ForCausalLM", "LMHeadModel")) for a in architectures)
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or not saved_as_causal:
        raise ModelPathError(f"model path {path!r} is a {model_type or 'model of unknown type'} checkpoint "
                             f"(architectures {architectures}), not a causal LM: the policy must generate text "
                             "(e.g. a GPT-2, Llama or Qwen checkpoint)")
    return local


def _cached_snapshot(repo_id: str) -> str | None:
    """The local snapshot of a hub id when the cache holds it (never touches the network)."""
    if repo_id.count("/") != 1 or repo_id.startswith((".", "/")):
        return None
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(repo_id, local_files_only=True)
    except Exception:  # noqa: BLE001 - any failure means "not in the cache"
        return None


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
