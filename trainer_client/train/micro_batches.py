"""Splitting a batch of (left-padded prompt, right-padded completion) rows into forward/backward passes.

    for rows in plan_micro_batches(batch.prompt_mask, batch.completion_mask, max_rows=16, max_tokens=4096):
        start, end = used_columns(batch.prompt_mask[rows], batch.completion_mask[rows])
        ...  # the rows' tensors, prompt columns [start:], completion columns [:end]

A pass costs what its padded tensor holds: rows x (longest prompt + longest completion). With a
token budget, rows are taken longest first and packed greedily so no pass exceeds it (a row
longer than the budget runs alone); without one, consecutive chunks of ``max_rows``. Columns that
no row of a pass attends to (leading prompt padding, trailing completion padding) are cut off:
the forward pass then sees the same tokens, attention mask and positions as over the whole
batch, so log-probs agree, and the gradient accumulated with each pass weighted by its share of
the aggregation (``rl.masking.aggregation_weight``) is the whole batch's, whatever the split.
"""

from __future__ import annotations

import torch


def row_lengths(prompt_mask: torch.Tensor, completion_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(prompt tokens [N], completion tokens [N]) each row attends to."""
    return prompt_mask.long().sum(1), completion_mask.long().sum(1)


def padded_tokens(prompt_mask: torch.Tensor, completion_mask: torch.Tensor) -> int:
    """Tokens of the rows' padded tensor once unused columns are cut: rows x (longest prompt + longest completion)."""
    if prompt_mask.shape[0] == 0:
        return 0
    prompt, completion = row_lengths(prompt_mask, completion_mask)
    return prompt_mask.shape[0] * int(prompt.max() + completion.max())


def plan_micro_batches(prompt_mask: torch.Tensor, completion_mask: torch.Tensor, *, max_rows: int,
                       max_tokens: int = 0) -> list[torch.Tensor]:
    """Row indices of each pass: at most ``max_rows`` rows, and (``max_tokens`` > 0) at most ``max_tokens``
    padded tokens unless a single row is longer. Every row is in exactly one pass."""
    n = prompt_mask.shape[0]
    device = prompt_mask.device
    if max_tokens <= 0:
        return [torch.arange(s, min(s + max_rows, n), device=device) for s in range(0, n, max_rows)]
    prompt, completion = (t.tolist() for t in row_lengths(prompt_mask, completion_mask))
    order = sorted(range(n), key=lambda i: (-(prompt[i] + completion[i]), i))
    passes: list[list[int]] = []
    current: list[int] = []
    longest_p = longest_c = 0
    for i in order:
        p, c = max(longest_p, prompt[i]), max(longest_c, completion[i])
        if current and (len(current) == max_rows or (len(current) + 1) * (p + c) > max_tokens):
            passes.append(current)
            current, p, c = [], prompt[i], completion[i]
        current.append(i)
        longest_p, longest_c = p, c
    if current:
        passes.append(current)
    return [torch.tensor(sorted(rows), dtype=torch.long, device=device) for rows in passes]


def used_columns(prompt_mask: torch.Tensor, completion_mask: torch.Tensor) -> tuple[int, int]:
    """(first prompt column any row attends to, one past the last completion column any row has)."""
    prompt_used = prompt_mask.any(0).nonzero()
    completion_used = completion_mask.any(0).nonzero()
    start = int(prompt_used[0]) if len(prompt_used) else prompt_mask.shape[1]
    end = int(completion_used[-1]) + 1 if len(completion_used) else 0
    return start, end
