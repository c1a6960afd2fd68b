"""Encoded examples as tensors, and the per-token log-probs and losses taken on them.

A batch is a dict of tensors: ``input_ids`` [B, T], ``trained`` [B, T] (bool: the loss sees
this token), and what the model's forward needs: ``attention_mask`` (2-D for right-padded rows,
a 4-D block-diagonal causal mask for packed rows, so packed examples never see each other) and,
when packed, ``position_ids`` restarting at 0 for each example. The logits at position ``t``
predict token ``t + 1``, so every quantity below lives on the shifted grid [B, T - 1].
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from trainer_client.sft.chat_data import IGNORE_INDEX, EncodedExample, PackedRow

Batch = dict[str, torch.Tensor]
MODEL_INPUTS = ("input_ids", "attention_mask", "position_ids")


def pad_batch(examples: Sequence[EncodedExample], pad_id: int, device: torch.device | str = "cpu") -> Batch:
    """Right-padded ``input_ids``, ``attention_mask`` (2-D) and ``trained`` of some examples."""
    width = max(len(e.input_ids) for e in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    trained = torch.zeros((len(examples), width), dtype=torch.bool)
    attention_mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, ex in enumerate(examples):
        n = len(ex.input_ids)
        input_ids[row, :n] = torch.tensor(ex.input_ids, dtype=torch.long)
        trained[row, :n] = torch.tensor(ex.trained, dtype=torch.bool)
        attention_mask[row, :n] = 1
    return {"input_ids": input_ids.to(device), "attention_mask": attention_mask.to(device),
            "trained": trained.to(device)}


def packed_batch(rows: Sequence[PackedRow], pad_id: int, device: torch.device | str = "cpu") -> Batch:
    """Packed rows, right-padded: a 4-D mask lets each token attend only to earlier tokens of its own example."""
    width = max(len(r.input_ids) for r in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    trained = torch.zeros((len(rows), width), dtype=torch.bool)
    segments = torch.full((len(rows), width), -1, dtype=torch.long)  # padding: a segment of its own
    positions = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        n = len(r.input_ids)
        input_ids[i, :n] = torch.tensor(r.input_ids, dtype=torch.long)
        trained[i, :n] = torch.tensor(r.trained, dtype=torch.bool)
        segments[i, :n] = torch.tensor(r.segments, dtype=torch.long)
        positions[i, :n] = torch.tensor(r.positions, dtype=torch.long)
    causal = torch.tril(torch.ones(width, width, dtype=torch.bool))
    mask = (segments[:, :, None] == segments[:, None, :]) & causal
    return {"input_ids": input_ids.to(device), "attention_mask": mask[:, None].to(device),
            "position_ids": positions.to(device), "trained": trained.to(device)}


def forward_logits(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
    """The model's logits [B, T, V] for a batch (no KV cache)."""
    return model(**{k: batch[k] for k in MODEL_INPUTS if k in batch}, use_cache=False).logits


def shifted_targets(batch: Batch) -> torch.Tensor:
    """Next-token targets [B, T - 1]: the token, or :data:`IGNORE_INDEX` where the loss does not look."""
    return batch["input_ids"][:, 1:].masked_fill(~batch["trained"][:, 1:], IGNORE_INDEX)


def completion_loss(logits: torch.Tensor, batch: Batch, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean next-token cross-entropy over the trained tokens of the whole batch (float32)."""
    return F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), shifted_targets(batch).flatten(),
                           ignore_index=IGNORE_INDEX, label_smoothing=label_smoothing)


def token_logprobs(logits: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-prob of each next token [B, T - 1] in float32, 0 where not trained; the trained mask [B, T - 1])."""
    mask = batch["trained"][:, 1:]
    targets = batch["input_ids"][:, 1:]
    logp = -F.cross_entropy(logits[:, :-1].float().transpose(1, 2), targets, reduction="none")
    return logp * mask, mask


@torch.no_grad()
def token_accuracy(logits: torch.Tensor, batch: Batch) -> tuple[int, int]:
    """(trained tokens the model's argmax gets right, trained tokens)."""
    mask = batch["trained"][:, 1:]
    right = (logits[:, :-1].argmax(-1) == batch["input_ids"][:, 1:]) & mask
    return int(right.sum()), int(mask.sum())
