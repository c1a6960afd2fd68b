"""Prompts in, sampled completions out: batched generation (the prompt set and its sampler: ``prompts``).

    rows = read_prompts("data/rl_train.jsonl", default_task="gsm8k")
    sampler = PromptSampler(rows, seed=0)
    batch = generate_groups(model, tokenizer, sampler.next(4), sampling)   # 4 prompts x G completions

A prompt is rendered through the tokenizer's chat template (the row's turns or one user
turn, generation prompt added) when the tokenizer has one and ``chat_template`` allows it,
else used as is (``prompts.render_prompt``). Prompts are left-padded and decoded in one
``generate`` call with the KV cache. ``generate`` samples G
completions per prompt (rows ``i*G .. i*G+G-1`` belong to prompt ``i``); a completion ends
at its first eos token (kept, it was sampled) or at a stop string, and is *truncated*
when it ran into ``max_new_tokens`` instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from trainer_client.errors import PromptDataError
from trainer_client.train.config import SamplingConfig
from trainer_client.train.prompts import (
    PromptRow,
    PromptSampler,
    read_prompts,
    render_prompt,
    uses_chat_template,
)

__all__ = ["PromptDataError", "PromptRow", "PromptSampler", "Rollouts", "completion_lengths", "concat_rollouts",
           "eos_ids_of", "generate_groups", "read_prompts", "render_prompt"]


@dataclass
class Rollouts:
    """Sampled completions with their prompts, one row per completion (groups contiguous)."""

    prompt_ids: torch.Tensor  # [N, Tp] left-padded
    prompt_mask: torch.Tensor  # [N, Tp] bool
    completion_ids: torch.Tensor  # [N, Tc] right-padded
    completion_mask: torch.Tensor  # [N, Tc] bool: the completion's own tokens (eos included)
    lengths: torch.Tensor  # [N] completion tokens
    truncated: torch.Tensor  # [N] bool: ran into max_new_tokens
    texts: list[str]  # decoded completions, special tokens removed
    group_size: int
    policy_mask: torch.Tensor | None = None  # [N, Tc] bool: the policy's own tokens (episodes: tool output and
    # the turns' framing are not); None: every completion token is the policy's

    @property
    def loss_tokens(self) -> torch.Tensor:
        """[N, Tc] bool: the tokens the loss may cover (the policy's; the completion's when not told apart)."""
        return self.completion_mask if self.policy_mask is None else self.policy_mask

    @property
    def num_groups(self) -> int:
        return len(self.texts) // self.group_size

    def select_groups(self, groups: Sequence[int]) -> Rollouts:
        rows = torch.tensor([g * self.group_size + k for g in groups for k in range(self.group_size)],
                            dtype=torch.long)
        return Rollouts(self.prompt_ids[rows], self.prompt_mask[rows], self.completion_ids[rows],
                        self.completion_mask[rows], self.lengths[rows], self.truncated[rows],
                        [self.texts[int(i)] for i in rows], self.group_size,
                        None if self.policy_mask is None else self.policy_mask[rows])


def _pad(tensors: Sequence[torch.Tensor], value: int | bool, left: bool) -> torch.Tensor:
    width = max(t.shape[1] for t in tensors)
    out = []
    for t in tensors:
        pad = torch.full((t.shape[0], width - t.shape[1]), value, dtype=t.dtype, device=t.device)
        out.append(torch.cat([pad, t] if left else [t, pad], dim=1))
    return torch.cat(out, dim=0)


def concat_rollouts(parts: Sequence[Rollouts], pad_id: int) -> Rollouts:
    """Joins rollouts of several generate calls (prompts re-padded left, completions right)."""
    if len({p.group_size for p in parts}) != 1:
        raise ValueError("cannot join rollouts with different group sizes")
    policy = None
    if any(p.policy_mask is not None for p in parts):
        policy = _pad([p.loss_tokens for p in parts], False, left=False)
    return Rollouts(_pad([p.prompt_ids for p in parts], pad_id, left=True),
                    _pad([p.prompt_mask for p in parts], False, left=True),
                    _pad([p.completion_ids for p in parts], pad_id, left=False),
                    _pad([p.completion_mask for p in parts], False, left=False),
                    torch.cat([p.lengths for p in parts]), torch.cat([p.truncated for p in parts]),
                    [t for p in parts for t in p.texts], parts[0].group_size, policy)


def eos_ids_of(model: Any, tokenizer: Any) -> list[int]:
    """Every token id that ends a completion: the tokenizer's eos and the generation config's."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids |= set(configured if isinstance(configured, (list, tuple)) else [configured] if configured is not None else [])
    if not ids:
        raise ValueError("the tokenizer has no eos token and the model's generation config names none")
    return sorted(ids)


def completion_lengths(completion_ids: torch.Tensor, eos_ids: Sequence[int],
                       pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(lengths [N], ended_by_eos [N]): up to and including the first eos; else up to the trailing padding.

    ``generate`` fills a finished row (eos or stop string) with ``pad_id``; when ``pad_id``
    is also an eos id the first pad of a stop-string row counts as its eos.
    """
    n, width = completion_ids.shape
    positions = torch.arange(width, device=completion_ids.device).expand(n, width)
    is_eos = torch.isin(completion_ids, torch.tensor(eos_ids, device=completion_ids.device))
    first_eos = torch.where(is_eos, positions, torch.full_like(positions, width)).min(dim=1).values
    not_pad = completion_ids != pad_id
    last_real = torch.where(not_pad, positions, torch.full_like(positions, -1)).max(dim=1).values
    ended = first_eos < width
    lengths = torch.where(ended, first_eos + 1, last_real + 1)
    return lengths, ended


@torch.no_grad()
def generate_groups(model: Any, tokenizer: Any, rows: Sequence[PromptRow], sampling: SamplingConfig,
                    greedy: bool = False, chat_template: str = "auto") -> Rollouts:
    """G = ``sampling.group_size`` sampled completions for each row, in one ``generate`` call.

    ``greedy``: decode greedily instead (evaluation; the sampling knobs are not used).
    ``chat_template``: ``data.chat_template`` (auto, true or false; ``prompts.render_prompt``).
    """
    if tokenizer.padding_side != "left":
        raise ValueError("batched generation needs tokenizer.padding_side == 'left'")
    device = next(model.parameters()).device
    templated = uses_chat_template(tokenizer, chat_template)  # the template writes its own special tokens
    enc = tokenizer([render_prompt(tokenizer, r, chat_template) for r in rows], add_special_tokens=not templated,
                    padding=True, return_tensors="pt").to(device)
    g = sampling.group_size
    eos_ids = eos_ids_of(model, tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_ids[0]
    extra = {"stop_strings": list(sampling.stop_strings), "tokenizer": tokenizer} if sampling.stop_strings else {}
    was_training = model.training
    model.eval()
    decoding = ({"do_sample": False, "temperature": None, "top_p": None, "top_k": None} if greedy else
                {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p,
                 "top_k": sampling.top_k})
    out = model.generate(**enc, **decoding, max_new_tokens=sampling.max_new_tokens, num_return_sequences=g,
                         eos_token_id=eos_ids, pad_token_id=pad_id, use_cache=True, **extra)
    model.train(was_training)
    tp = enc["input_ids"].shape[1]
    completion_ids = out[:, tp:]
    lengths, ended = completion_lengths(completion_ids, eos_ids, pad_id)
    positions = torch.arange(completion_ids.shape[1], device=device)
    completion_mask = positions[None, :] < lengths[:, None]
    texts = [tokenizer.decode(ids[: int(n)], skip_special_tokens=True) for ids, n in zip(completion_ids, lengths)]
    stopped = torch.tensor([any(t.endswith(s) for s in sampling.stop_strings) for t in texts], device=device)
    truncated = ~ended & ~stopped & (lengths >= sampling.max_new_tokens)
    return Rollouts(prompt_ids=enc["input_ids"].repeat_interleave(g, dim=0),
                    prompt_mask=enc["attention_mask"].bool().repeat_interleave(g, dim=0),
                    completion_ids=completion_ids, completion_mask=completion_mask, lengths=lengths,
                    truncated=truncated, texts=texts, group_size=g)
