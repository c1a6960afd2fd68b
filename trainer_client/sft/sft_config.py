"""``SFTConfig``, the options of ``trainer-client sft``: apart from the trainer (``sft_train``) so that
building the CLI parser imports no torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainer_client.offline_options import OfflineTrainingOptions


@dataclass(frozen=True, kw_only=True)
class SFTConfig(OfflineTrainingOptions):
    data: str = field(metadata={"help": "training examples, JSONL lines {prompt, completion} or {messages}"})
    out_dir: str = field(metadata={"help": "output directory (model, tokenizer, metrics)",
                                   "flag": "out", "metavar": "OUT_DIR"})
    model: str = field(metadata={"help": "local path of a transformers causal LM (and its tokenizer)"})
    eval_data: str | None = field(default=None, metadata={
        "help": "held-out examples (same format): completion-token loss and accuracy before training and each epoch"})
    max_length: int = field(default=1024, metadata={"help": "max tokens per example (longer: the end is cut)"})
    packing: bool = field(default=False, metadata={
        "help": "pack several examples into rows of max_length tokens (each attends only to itself)"})
    batch_size: int = field(default=8, metadata={"help": "rows (examples, or packed rows) per optimizer step"})
    lr: float = field(default=2e-5, metadata={"help": "peak AdamW learning rate (TRL's SFTConfig: 2e-5)"})
    max_train_examples: int | None = field(default=None, metadata={"help": "use only the first N training examples"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_train_examples is not None and self.max_train_examples < 1:
            raise ValueError(f"max_train_examples must be >= 1 or unset, got {self.max_train_examples}")
