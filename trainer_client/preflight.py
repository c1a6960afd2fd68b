"""Checks a training run makes before it loads anything heavy (no torch here; transformers only for the
last question its config.json cannot answer): a wrong model path or an unreachable reward endpoint is
said within seconds, before minutes of imports and model loading.

:func:`read_model_config`: a local directory, or a hub id already in the local Hugging Face cache (no
network is tried), with a config.json that does not say "not a causal LM". :func:`check_model_path`:
that, and its ``model_type`` a causal LM transformers knows. :func:`preflight`: the cheap checks, the
connection to the reward service (for a run scored on a remote endpoint), then ``check_model_path``.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

from trainer_client.errors import ModelPathError

# Architecture names that say "not a causal LM" by themselves (an encoder, or a head other than a LM
# head): no class of transformers' causal-LM mapping ends so, so the JSON alone can refuse them.
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
_NOT_CAUSAL_SUFFIXES = ("Model", "ForMaskedLM", "ForSequenceClassification", "ForTokenClassification",
                        "ForQuestionAnswering", "ForMultipleChoice", "ForPreTraining", "ForNextSentencePrediction")


@lru_cache(maxsize=16)
def check_model_path(path: str) -> str:
    """The local directory of ``path``; raises ModelPathError saying what is wrong, before any loading.

    The cheap checks first (:func:`read_model_config`: the directory, its config.json, what the JSON
    alone tells); transformers is imported only for what the JSON cannot answer (is ``model_type`` a
    causal LM this transformers knows)."""
    local, config = read_model_config(path)
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    model_type = str(config.get("model_type", ""))
    architectures = config.get("architectures")
    causal_classes = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    saved_as_causal = not architectures or any(
        str(a) in causal_classes or str(a).endswith(_CAUSAL_SUFFIXES) for a in architectures)
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or not saved_as_causal:
        raise ModelPathError(_not_causal(path, model_type, architectures))
    return local


@lru_cache(maxsize=16)
def read_model_config(path: str) -> tuple[str, dict[str, Any]]:
    """(local directory, its config.json) of ``path``, without transformers or torch; raises ModelPathError
    for a path that is not there, holds no readable config.json, or whose config says it is not a causal
    LM (no model_type, or only encoder/non-LM-head architectures)."""
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
    if not isinstance(config, dict):
        raise ModelPathError(f"model path {path!r}: {config_file} is not a JSON object")
    model_type = str(config.get("model_type", ""))
    architectures = config.get("architectures")
    if not model_type or (architectures and all(
            str(a).endswith(_NOT_CAUSAL_SUFFIXES) and not str(a).endswith(_CAUSAL_SUFFIXES) for a in architectures)):
        raise ModelPathError(_not_causal(path, model_type, architectures))
    return local, config


def _not_causal(path: str, model_type: str, architectures: Any) -> str:
    return (f"model path {path!r} is a {model_type or 'model of unknown type'} checkpoint "
            f"(architectures {architectures}), not a causal LM: the policy must generate text "
            "(e.g. a GPT-2, Llama or Qwen checkpoint)")


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
    EndpointUnreachable saying what is wrong. Configs without those sections are not checked.

    The cheap checks come first (the path and its config.json, then the endpoint), the one that
    imports transformers last, so either mistake is said before seconds of imports."""
    model = getattr(config, "model", None)
    model_path = str(model.path) if model is not None and getattr(model, "path", "") else ""
    if model_path:
        read_model_config(model_path)
    reward = getattr(config, "reward", None)
    if reward is not None and not getattr(reward, "embedded", True) and getattr(reward, "endpoint", ""):
        from reward_core.clients import RewardClient

        with RewardClient(reward.endpoint) as client:
            client.check_connection()
    if model_path:
        check_model_path(model_path)
