"""``DPOConfig``, the options of ``trainer-client dpo``, and the loss options it checks: apart from the
trainer (``dpo_train``) and the losses (``dpo_loss``) so that building the CLI parser imports no torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainer_client.offline_options import OfflineTrainingOptions

LOSS_TYPES = ("sigmoid", "ipo", "hinge", "robust")


def check_loss_options(loss_type: str, beta: float, label_smoothing: float) -> None:
    """ValueError, saying what to pass instead, for an unknown loss or out-of-range ``beta``/``label_smoothing``."""
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type {loss_type!r} is unknown; use one of {', '.join(LOSS_TYPES)}")
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}; TRL's default is 0.1")
    if not 0.0 <= label_smoothing < 0.5:
        raise ValueError(f"label_smoothing must be in [0, 0.5), got {label_smoothing}; 0 turns it off "
                         "(the robust DPO paper suggests 0.1)")


@dataclass(frozen=True, kw_only=True)
class DPOConfig(OfflineTrainingOptions):
    data: str = field(metadata={"help": "training preferences, JSONL lines {prompt, chosen, rejected} (as train-rm)"})
    out_dir: str = field(metadata={"help": "output directory (model, tokenizer, metrics)",
                                   "flag": "out", "metavar": "OUT_DIR"})
    model: str = field(metadata={"help": "local path of the causal LM to start from (and its tokenizer)"})
    ref_model: str | None = field(default=None, metadata={
        "help": "reference model path; default: a frozen copy of the start model"})
    eval_data: str | None = field(default=None, metadata={
        "help": "held-out preferences: reward accuracy and margins before training and after each epoch"})
    beta: float = field(default=0.1, metadata={"help": "strength of the pull to the reference (TRL: beta=0.1)"})
    loss_type: str = field(default="sigmoid", metadata={"help": f"one of {', '.join(LOSS_TYPES)} (TRL's names)"})
    label_smoothing: float = field(default=0.0, metadata={
        "help": "assumed chance a label is flipped, in [0, 0.5): robust (rDPO) and sigmoid (cDPO) use it"})
    rpo_alpha: float | None = field(default=None, metadata={
        "help": "weight of an SFT term (NLL of the chosen completions) added to the loss (RPO); unset: none"})
    precompute_ref_log_probs: bool = field(default=False, metadata={
        "help": "compute the reference log-probs once before training and free the reference model"})
    batch_size: int = field(default=8, metadata={"help": "preference pairs per optimizer step"})
    lr: float = field(default=1e-6, metadata={"help": "peak AdamW learning rate (TRL's DPOConfig: 1e-6)"})
    max_train_pairs: int | None = field(default=None, metadata={"help": "use only the first N training pairs"})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_loss_options(self.loss_type, self.beta, self.label_smoothing)
        if self.rpo_alpha is not None and not self.rpo_alpha >= 0:
            raise ValueError(f"rpo_alpha must be >= 0 or unset, got {self.rpo_alpha}; TRL's RPO paper uses 1.0")
        if self.max_train_pairs is not None and self.max_train_pairs < 1:
            raise ValueError(f"max_train_pairs must be >= 1 or unset, got {self.max_train_pairs}")
