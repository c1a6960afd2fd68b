"""Process-supervised advantages: step scores -> per-token advantages (GRPO) or token rewards (PPO).

DeepSeekMath (Shao et al., 2024, arXiv:2402.03300, sec. 4.1.3): a group's completions
are split into steps and each step k of completion i gets a reward r_i^k. Every step
reward is normalised by the mean and std of *all* step rewards of the group (every
completion, every step),

    r~_i^k = (r_i^k - mean(R)) / std(R),

and a token's advantage is the sum of the normalised rewards of the steps that end at or
after it:

    A_{i,t} = sum_{k : end_token(k) >= t} r~_i^k.

Here, as in the outcome code (``advantages.grpo_advantages``): the std is the population
std plus ``eps`` (1e-4); ``scale="none"`` (Dr. GRPO) skips the division and ``"batch"``
divides by the std of every scored step in the batch; ``baseline="none"`` (REINFORCE)
subtracts nothing. A group whose scored step rewards are all equal (or that has fewer
than two) carries no signal: its advantages are exactly 0 (unless ``baseline="none"``).
Unscored steps (``scored=False``: neutral, or not checkable) take no part in the mean and
std and contribute 0; an unscored completion (``valid_mask`` False) takes no part at all
and gets 0, and so does every member of a group with fewer than ``min_valid`` scored
completions (``advantages.scored_groups``: the same rule as the outcome advantages). A
completion with no steps gets 0 on every token and is reported
(``no_steps``); tokens after a completion's last step end get 0.

Steps are character spans ``[start, end)`` of the completion text; ``step_end_tokens``
maps them onto tokens through each token's character end (``token_char_ends`` in
``trainer_client.train.step_rewards`` gets those from the tokenizer). Pure: no tokenizer,
no model.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Literal, NamedTuple, Protocol

import torch

from trainer_client.rl.advantages import GroupIds, group_index, scored_groups


class StepLike(Protocol):
    """What is read of a step (``reward_core.contract.StepScore`` is one)."""

    @property
    def end(self) -> int: ...

    @property
    def score(self) -> float: ...

    @property
    def scored(self) -> bool: ...


class ProcessAdvantages(NamedTuple):
    advantages: torch.Tensor  # [B, T] float32, 0 after the last step and on completions without steps
    no_steps: torch.Tensor  # [B] bool: a (valid) completion that came with no step at all
    scored_steps: int  # scored steps that took part in the statistics


def step_end_tokens(token_char_ends: Sequence[int], step_ends: Sequence[int]) -> list[int]:
    """The index of each step's last token: the first token whose character end reaches the step's end.

    ``token_char_ends[t]``: the character offset just past token t in the completion text
    (non-decreasing; a token that adds no text, such as eos, repeats its predecessor's).
    A step ending inside a token ends at that token. A step ending beyond the text (or a
    completion with no tokens) maps to the last token (or -1: no token).
    """
    if not token_char_ends:
        return [-1] * len(step_ends)
    last = len(token_char_ends) - 1
    return [min(bisect.bisect_left(token_char_ends, end), last) for end in step_ends]


def _normalisers(scores: torch.Tensor, group_of_step: torch.Tensor, k: int, scale: str, baseline: str,
                 eps: float) -> torch.Tensor:
    """Per-step normalised rewards; ``group_of_step`` [S] indexes ``k`` groups, every step scored."""
    zeros = torch.zeros(k, dtype=scores.dtype)
    count = zeros.index_add(0, group_of_step, torch.ones_like(scores))
    mean = zeros.index_add(0, group_of_step, scores) / count.clamp(min=1)
    dev = scores - mean[group_of_step]
    std = (zeros.index_add(0, group_of_step, dev**2) / count.clamp(min=1)).sqrt()
    gmax = torch.full_like(zeros, -float("inf")).scatter_reduce(0, group_of_step, scores, "amax")
    gmin = torch.full_like(zeros, float("inf")).scatter_reduce(0, group_of_step, scores, "amin")
    zero_var = ~(gmax > gmin)
    out = scores - mean[group_of_step] if baseline == "mean" else scores.clone()
    if scale == "group":
        out = out / (std[group_of_step] + eps)
    elif scale == "batch":
        out = out / (scores.var(unbiased=False).sqrt() + eps)
    if baseline == "mean":
        out = torch.where(zero_var[group_of_step], torch.zeros_like(out), out)
    return out


def process_advantages(steps: Sequence[Sequence[StepLike]], token_char_ends: Sequence[Sequence[int]],
                       group_ids: GroupIds, width: int, *, scale: Literal["group", "batch", "none"] = "group",
                       baseline: Literal["mean", "none"] = "mean", eps: float = 1e-4,
                       valid_mask: torch.Tensor | Sequence[bool] | None = None,
                       min_valid: int = 2) -> ProcessAdvantages:
    """Per-token process advantages [B, width] for B completions (see the module docstring).

    steps[i]: completion i's steps (``StepScore``s: ``end``, ``score``, ``scored``);
    token_char_ends[i]: the character end of each of its tokens, in order (at most
    ``width``; the rest of the row is padding and gets 0); group_ids: [B] ids of the
    groups (any hashables); valid_mask: [B] False for unscored completions; a group with fewer
    than ``min_valid`` scored completions gets 0 on every token.
    """
    b = len(steps)
    if len(token_char_ends) != b:
        raise ValueError(f"steps has {b} completions but token_char_ends has {len(token_char_ends)}")
    if scale not in ("group", "batch", "none") or baseline not in ("mean", "none"):
        raise ValueError(f"scale must be group/batch/none and baseline mean/none; got {scale!r}, {baseline!r}")
    index, k = group_index(group_ids)
    if index.numel() != b:
        raise ValueError(f"group_ids has {index.numel()} entries but there are {b} completions")
    scored = [True] * b if valid_mask is None else [bool(v) for v in valid_mask]
    valid = scored_groups(torch.zeros(b), index, valid_mask=torch.tensor(scored, dtype=torch.bool),
                          min_valid=min_valid).trainable.tolist()
    rows, ends, scores = [], [], []
    for i in range(b):
        if not scored[i]:
            continue
        if len(token_char_ends[i]) > width:
            raise ValueError(f"completion {i} has {len(token_char_ends[i])} tokens, more than width={width}")
        if not valid[i]:
            continue  # its group has too few scored completions
        last_tokens = step_end_tokens(token_char_ends[i], [s.end for s in steps[i]])
        for step, last in zip(steps[i], last_tokens):
            if step.scored and last >= 0:
                rows.append(i)
                ends.append(last)
                scores.append(float(step.score))
    advantages = torch.zeros(b, width, dtype=torch.float32)
    no_steps = torch.tensor([scored[i] and not steps[i] for i in range(b)], dtype=torch.bool)
    if not scores:
        return ProcessAdvantages(advantages, no_steps, 0)
    row_t = torch.tensor(rows, dtype=torch.long)
    normalised = _normalisers(torch.tensor(scores, dtype=torch.float32), index[row_t], k, scale, baseline, eps)
    # Each step's reward sits on its last token; the reversed cumulative sum gives every
    # token the sum over the steps that end at or after it.
    at_end = advantages.index_put((row_t, torch.tensor(ends, dtype=torch.long)), normalised, accumulate=True)
    advantages = at_end.flip(1).cumsum(1).flip(1)
    return ProcessAdvantages(advantages, no_steps, len(scores))


def step_token_rewards(steps: Sequence[Sequence[StepLike]], token_char_ends: Sequence[Sequence[int]],
                       width: int) -> torch.Tensor:
    """PPO's process rewards [B, width]: each scored step's raw score on its step's last token.

    Unscored steps add nothing; several steps ending on one token add up. GAE then carries
    them back over the tokens (``ppo_targets(step_rewards=...)``).
    """
    out = torch.zeros(len(steps), width, dtype=torch.float32)
    for i, (row_steps, ends) in enumerate(zip(steps, token_char_ends, strict=True)):
        for step, last in zip(row_steps, step_end_tokens(ends, [s.end for s in row_steps])):
            if step.scored and last >= 0:
                out[i, last] += float(step.score)
    return out
