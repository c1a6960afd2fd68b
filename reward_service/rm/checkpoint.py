"""Load a reward-model checkpoint directory: model (eval mode), tokenizer, normalization, config.

A checkpoint is what ``trainer-client train-rm`` writes: a ``save_pretrained`` directory of an
``AutoModelForSequenceClassification`` with ONE output, its tokenizer, and the two metadata files
named in :mod:`reward_core.rm_inputs` (``reward_model_config.json``,
``reward_normalization.json``). Pairs are encoded with the trainer's own
:func:`~reward_core.rm_inputs.encode_pair`, so served scores see the training tokens.

    model = load_checkpoint("runs/rm/final", device="cpu", dtype="float32")   # or "bfloat16" (fp32/bf16 accepted)
    pairs = [model.encode("What is 2+2?", "4")]
    scores = model.forward(pairs)          # raw scores; model.metadata.normalize(s) for normalized
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reward_core.dtype_names import canonical_dtype
from reward_core.rm_inputs import (
    NORMALIZATION_FILE,
    RM_CONFIG_FILE,
    EncodedPair,
    RewardModelMetadata,
    encode_pair,
    pad_encoded,
    read_rm_metadata,
)

logger = logging.getLogger(__name__)

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt")
WARMUP_PAIR = ("warm-up prompt", "warm-up completion")


class CheckpointError(ValueError):
    """A checkpoint directory cannot be served; the message names the file and the fix."""


@dataclass(frozen=True)
class LoadedRewardModel:
    """A loaded checkpoint, ready to score. Immutable: a reload builds a new one."""

    path: str
    model: Any  # a transformers PreTrainedModel in eval mode
    tokenizer: Any
    metadata: RewardModelMetadata
    max_length: int
    device: str
    dtype: str
    load_seconds: float

    def encode(self, prompt: str, completion: str) -> EncodedPair:
        """The pair's model input under the checkpoint's truncation policy (thread-safe)."""
        return encode_pair(self.tokenizer, prompt, completion, self.max_length, self.metadata.truncation)

    def forward(self, pairs: Sequence[EncodedPair]) -> list[float]:
        """Raw scores of encoded pairs: one padded forward pass under ``torch.inference_mode``."""
        import torch

        batch = pad_encoded(pairs, self.tokenizer.pad_token_id, getattr(self.tokenizer, "padding_side", "right"))
        inputs = {k: torch.tensor(v, dtype=torch.long, device=self.device) for k, v in batch.items()}
        with torch.inference_mode():
            logits = self.model(**inputs).logits
        return logits[:, 0].float().cpu().tolist()

    def warm_up(self) -> None:
        """One dummy forward pass (allocator, kernels, lazy init) before serving traffic."""
        self.forward([self.encode(*WARMUP_PAIR)])


def load_checkpoint(path: str | Path, device: str = "cpu", dtype: str = "float32",
                    max_length: int = 0) -> LoadedRewardModel:
    """Loads a checkpoint directory; raises CheckpointError when it cannot be served.

    ``max_length`` (> 0) overrides the checkpoint's ``reward_model_config.json`` value.
    """
    start = time.perf_counter()
    root = Path(path)
    _check_files(root)
    try:
        metadata = read_rm_metadata(root)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from exc
    try:
        dtype = canonical_dtype(dtype)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None
    torch_dtype, torch_device = _torch_settings(device, dtype)
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(root)
        model = AutoModelForSequenceClassification.from_pretrained(root, dtype=torch_dtype)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise CheckpointError(f"{root}: transformers could not load the model or tokenizer: {exc}") from exc
    if model.config.num_labels != 1:
        raise CheckpointError(f"{root}: the model has {model.config.num_labels} outputs; a reward model has 1 "
                              "(save it with num_labels=1)")
    if tokenizer.pad_token_id is None:  # decoders: pad with EOS, as the trainer does
        tokenizer.pad_token = tokenizer.eos_token
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    limit = max_length or metadata.max_length
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions is not None and limit > positions:
        raise CheckpointError(f"{root}: max_length {limit} exceeds the model's {positions} positions; lower it")
    model.to(torch_device).eval()
    loaded = LoadedRewardModel(str(root), model, tokenizer, metadata, limit, str(torch_device), dtype,
                               time.perf_counter() - start)
    logger.info("loaded reward model %s (%s, %s, max_length %d) in %.2fs", root, device, dtype, limit,
                loaded.load_seconds)
    return loaded


def _check_files(root: Path) -> None:
    if not root.is_dir():
        raise CheckpointError(f"checkpoint directory {root} does not exist (or is not a directory)")
    missing = []
    if not (root / "config.json").is_file():
        missing.append("config.json")
    if not any((root / name).is_file() for name in WEIGHT_FILES):
        missing.append(f"weights (one of {', '.join(WEIGHT_FILES)})")
    if not any((root / name).is_file() for name in TOKENIZER_FILES):
        missing.append(f"tokenizer (one of {', '.join(TOKENIZER_FILES)})")
    missing += [name for name in (RM_CONFIG_FILE, NORMALIZATION_FILE) if not (root / name).is_file()]
    if missing:
        raise CheckpointError(f"checkpoint {root} is missing {'; '.join(missing)}: serve a directory written by "
                              "`trainer-client train-rm` (save_pretrained + tokenizer + the two reward JSON files)")


def _torch_settings(device: str, dtype: str) -> tuple[Any, Any]:
    import torch

    try:
        torch_device = torch.device(device)
    except RuntimeError as exc:
        raise CheckpointError(f"bad device {device!r}: {exc}") from exc
    if torch_device.type == "cuda" and not torch.cuda.is_available():
        raise CheckpointError(f"device {device!r} requested but CUDA is not available; use --device cpu")
    if torch_device.type not in ("cpu", "cuda"):
        raise CheckpointError(f"device must be cpu or cuda[:N], got {device!r}")
    return getattr(torch, dtype), torch_device
