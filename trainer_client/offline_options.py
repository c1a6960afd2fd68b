"""The options the offline trainers (``sft``, ``dpo``) share, and their checks: one definition, so
their flags, defaults and error messages cannot drift apart. Torch-free (the CLI parses them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from reward_core.dtype_names import canonical_dtype
from trainer_client.train.config import LoraSettings


@dataclass(frozen=True, kw_only=True)
class OfflineTrainingOptions:
    """Schedule, optimizer, logging and device options of an offline trainer (its config subclasses
    this and adds its data, model and method fields; it may re-declare ``lr`` with its own default)."""

    max_length: int = field(default=1024, metadata={"help": "max tokens of prompt + completion (the end is cut)"})
    epochs: int = field(default=1, metadata={"help": "passes over the training data"})
    max_steps: int | None = field(default=None, metadata={"help": "stop after this many optimizer steps"})
    batch_size: int = field(default=8, metadata={"help": "examples (or pairs, or packed rows) per optimizer step"})
    eval_batch_size: int = field(default=32, metadata={"help": "examples (or pairs) per forward pass when evaluating"})
    lr: float = field(default=2e-5, metadata={"help": "peak AdamW learning rate"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay (not on biases/norms)"})
    warmup_ratio: float = field(default=0.0, metadata={
        "help": "fraction of steps with linear warmup, then linear decay to 0"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping norm (0 disables)"})
    disable_dropout: bool = field(default=True, metadata={"help": "turn dropout off (and in a reference model)"})
    logging_steps: int = field(default=10, metadata={"help": "write a metrics.jsonl line every N steps"})
    tensorboard: bool = field(default=True, metadata={"help": "mirror metrics to OUT_DIR/tensorboard (if installed)"})
    seed: int = field(default=0, metadata={"help": "seed for shuffling"})
    device: str = field(default="cpu", metadata={"help": "'cpu', 'cuda', 'cuda:N' or 'auto' (cuda when available)"})
    dtype: str = field(default="float32", metadata={
        "help": "'float32' or 'bfloat16' (bfloat16 autocast; weights stay float32)"})
    gradient_checkpointing: bool = field(default=False, metadata={
        "help": "recompute activations in the backward pass (less memory, same loss)"})
    num_threads: int | None = field(default=None, metadata={"help": "torch CPU threads (default: torch's choice)"})
    lora_r: int | None = field(default=None, metadata={
        "help": "train low-rank adapters of this rank instead of every weight (pip install 'reward-suite[lora]'); "
                "OUT_DIR then holds the merged model and OUT_DIR/adapter the adapter alone. Unset: full fine-tuning"})
    lora_alpha: float = field(default=16.0, metadata={"help": "adapter scale numerator (update scaled by alpha / r)"})
    lora_dropout: float = field(default=0.0, metadata={"help": "dropout on the adapters' input while training"})
    lora_target_modules: str | None = field(default=None, metadata={
        "help": "comma-separated module names to adapt (e.g. q_proj,v_proj, or all-linear); unset: peft's default"})
    progress: bool = field(default=True, metadata={"help": "show a tqdm progress bar"})

    def __post_init__(self) -> None:
        check_common_options(self)


def check_common_options(config: OfflineTrainingOptions) -> None:
    """Positive sizes, lr, ratios, device and dtype (the dtype is made canonical in place)."""
    for name in ("max_length", "epochs", "batch_size", "eval_batch_size", "logging_steps"):
        if getattr(config, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(config, name)}; pass --{name.replace('_', '-')} 1 "
                             "or more")
    if not (config.lr > 0 and math.isfinite(config.lr)):
        raise ValueError(f"lr must be a positive number, got {config.lr}")
    if not 0.0 <= config.warmup_ratio < 1.0:
        raise ValueError(f"warmup_ratio must be in [0, 1), got {config.warmup_ratio}; try 0.1")
    for name in ("weight_decay", "max_grad_norm"):
        if getattr(config, name) < 0:
            raise ValueError(f"{name} must be >= 0, got {getattr(config, name)}; use 0 to disable it")
    if config.max_steps is not None and config.max_steps < 1:
        raise ValueError(f"max_steps must be >= 1 or unset, got {config.max_steps}")
    object.__setattr__(config, "dtype", canonical_dtype(config.dtype))
    if not (config.device in ("cpu", "cuda", "auto") or config.device.startswith("cuda:")):
        raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {config.device!r}")
    if config.num_threads is not None and config.num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {config.num_threads}")
    lora_settings(config)  # its checks


def lora_settings(config: OfflineTrainingOptions) -> LoraSettings | None:
    """The adapters the ``lora_*`` options ask for (the RL trainers' ``model.lora`` settings), or None."""
    if config.lora_r is None:
        return None
    targets = tuple(name.strip() for name in (config.lora_target_modules or "").split(",")) \
        if config.lora_target_modules else ()
    try:
        return LoraSettings(r=config.lora_r, alpha=config.lora_alpha, dropout=config.lora_dropout,
                            target_modules=targets)
    except ValueError as exc:  # its message names model.lora.*; here they are flags
        raise ValueError(f"need --lora-r >= 1, --lora-alpha > 0, 0 <= --lora-dropout < 1 and module names in "
                         f"--lora-target-modules; got r={config.lora_r}, alpha={config.lora_alpha}, "
                         f"dropout={config.lora_dropout}, target_modules={config.lora_target_modules!r}") from exc
