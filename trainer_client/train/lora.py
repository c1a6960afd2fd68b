"""Low-rank adapters on the policy (``model.lora``), through ``peft``: attach, resume, switch off, merge.

    policy = add_adapters(policy, config.model.lora)                 # base frozen, adapters trainable
    policy = add_adapters(policy, config.model.lora, checkpoint_dir) # resume: the checkpoint's adapter
    with adapters_disabled(policy): ...                              # the base model: the KL reference
    save_merged(policy, tokenizer, checkpoint_dir / "merged")        # a plain checkpoint, adapters folded in

A LoRA policy's ``save_pretrained`` writes the adapter only (``adapter_config.json``,
``adapter_model.safetensors``); the base stays where ``model.path`` says. ``peft`` is an extra
(``pip install 'reward-suite[lora]'``): it is imported here only, when a config asks for adapters.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from trainer_client.train.config import LoraSettings

MERGED_DIR = "merged"  # inside a checkpoint, with model.lora.save_merged


class PeftMissingError(ImportError):
    """``model.lora`` is set but the ``peft`` package is not installed."""


def _peft() -> Any:
    try:
        import peft
    except ImportError as exc:
        raise PeftMissingError("model.lora needs the peft package: pip install 'reward-suite[lora]' (or set "
                               "model.lora=null for full fine-tuning)") from exc
    return peft


def is_adapted(model: torch.nn.Module) -> bool:
    """Whether ``model`` carries peft adapters."""
    peft = _peft_or_none()
    return peft is not None and isinstance(model, peft.PeftModel)


def _peft_or_none() -> Any:
    try:
        import peft
    except ImportError:
        return None
    return peft


def add_adapters(model: torch.nn.Module, settings: LoraSettings, adapter_dir: str | Path | None = None) -> Any:
    """``model`` wrapped with trainable adapters (base weights frozen): new ones from ``settings``, or those
    saved in ``adapter_dir`` (a checkpoint of a LoRA run)."""
    peft = _peft()
    if adapter_dir is not None:
        return peft.PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=True)
    targets = list(settings.target_modules)
    lora = peft.LoraConfig(r=settings.r, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                           target_modules=(targets[0] if targets == ["all-linear"] else targets or None),
                           task_type="CAUSAL_LM")
    return peft.get_peft_model(model, lora)


@contextlib.contextmanager
def adapters_disabled(model: Any) -> Iterator[Any]:
    """The adapted ``model`` acting as its base (adapters off), in eval mode, for the duration."""
    was_training = model.training
    model.eval()
    try:
        with model.disable_adapter():
            yield model
    finally:
        model.train(was_training)


def save_merged(model: Any, tokenizer: Any, directory: str | Path) -> Path:
    """Writes the base with the adapters folded in (a copy; ``model`` keeps its adapters) and the tokenizer."""
    directory = Path(directory)
    merged = copy.deepcopy(model).merge_and_unload()
    merged.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


def trainable_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters the optimizer updates (all of them, or the adapters' under LoRA)."""
    return [p for p in model.parameters() if p.requires_grad]
