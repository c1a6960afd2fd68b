"""Step scores of a step's results onto the sampled tokens: character spans -> token positions.

The reward service returns each step as a character span ``[start, end)`` of the
completion text it was sent, which is ``tokenizer.decode(ids, skip_special_tokens=True)``
of the sampled ids. ``token_char_ends`` gives every sampled token the character offset
just past it in that text; ``rl.process_advantages`` does the rest.

How: a fast tokenizer re-encodes the text with ``return_offsets_mapping``; when that
reproduces the sampled ids (the usual case, and always for the tiny char-level
tokenizer) its offsets are exact. Otherwise (a sampled, non-canonical tokenisation) the
ends come from decoding growing prefixes, exact but quadratic in the length. Special
tokens (eos) add no text: they repeat the previous end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from reward_core.clients import GroupResult


def _prefix_decode_ends(tokenizer: Any, ids: Sequence[int]) -> list[int]:
    ends, best = [], 0
    for j in range(len(ids)):
        best = max(best, len(tokenizer.decode(list(ids[: j + 1]), skip_special_tokens=True)))
        ends.append(best)
    return ends


def token_char_ends(tokenizer: Any, ids: Sequence[int]) -> list[int]:
    """Character end of each token of ``ids`` (one completion, padding removed) in its decoded text."""
    ids = [int(t) for t in ids]
    special = set(tokenizer.all_special_ids)
    kept = [t for t in ids if t not in special]
    kept_ends: list[int] | None = None
    if kept and getattr(tokenizer, "is_fast", False):
        text = tokenizer.decode(kept, skip_special_tokens=True)
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        if list(enc["input_ids"]) == kept:
            kept_ends, best = [], 0
            for _, end in enc["offset_mapping"]:
                best = max(best, int(end))
                kept_ends.append(best)
    if kept_ends is None:
        kept_ends = _prefix_decode_ends(tokenizer, kept)
    out, position, last = [], 0, 0
    for t in ids:
        if t not in special:
            last = kept_ends[position]
            position += 1
        out.append(last)
    return out


def batch_token_char_ends(tokenizer: Any, completion_ids: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
    """``token_char_ends`` of every row's first ``lengths[i]`` tokens."""
    return [token_char_ends(tokenizer, row[: int(n)].tolist()) for row, n in zip(completion_ids, lengths)]


def batch_steps(results: Sequence[GroupResult]) -> list[tuple[Any, ...]]:
    """Each completion's step scores, groups flattened in order (``()`` for an outcome-only task)."""
    return [r.steps for group in results for r in group.results]
