"""Checks a training run makes before it loads anything heavy (no torch here): a wrong model path or an
unreachable reward endpoint is said within seconds, before minutes of imports and model loading.

:func:`check_model_path`: a local directory, or a hub id already in the local Hugging Face cache (no
network is tried), whose config is a causal LM. :func:`preflight`: that, and (for a run scored on a
remote endpoint) a connection to the reward service.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

from trainer_client.errors import ModelPathError


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
        if os.path.isfile(os.path.join(local, "adapter_config.json")):
            raise ModelPathError(f"model path {path!r} holds a LoRA adapter only (a model.lora run's "
                                 "checkpoint): give its merged/ directory (model.lora.save_merged: true) or the "
                                 "base model") from None
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


def preflight(config: Any) -> None:
    """The run's model path and (when not embedded) reward endpoint; raises ModelPathError or
    EndpointUnreachable saying what is wrong. Configs without those sections are not checked."""
    model = getattr(config, "model", None)
    if model is not None and getattr(model, "path", ""):
        check_model_path(str(model.path))
    reward = getattr(config, "reward", None)
    if reward is not None and not getattr(reward, "embedded", True) and getattr(reward, "endpoint", ""):
        from reward_core.clients import RewardClient

        with RewardClient(reward.endpoint) as client:
            client.check_connection()
