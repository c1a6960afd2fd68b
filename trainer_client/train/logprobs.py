"""Per-token log-probs of sampled completions under a causal LM, in micro-batches.

A batch is stored as prompt ids (left-padded, as ``generate`` needs) followed by
completion ids (right-padded after each completion's end). The forward pass sees the
concatenation with the same attention mask and position ids ``generate`` used
(positions count only attended tokens), so the log-probs match the sampler's.
Log-probs are taken from ``logits / temperature`` in float32: the distribution the
completions were sampled from (before top-k/top-p truncation).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import NamedTuple

import torch

from trainer_client.rl import entropy_from_logits
from trainer_client.train.micro_batches import plan_micro_batches, used_columns


class TokenLogprobs(NamedTuple):
    logp: torch.Tensor  # [B, Tc] log-prob of each completion token (fp32)
    entropy: torch.Tensor | None  # [B, Tc] policy entropy at each completion position, if asked


@cache
def _forward_accepts(cls: type) -> bool:
    return "logits_to_keep" in inspect.signature(cls.forward).parameters


def _accepts_logits_to_keep(model: torch.nn.Module) -> bool:
    """Whether the model can skip the vocabulary projection of the prompt positions (a peft wrapper passes
    the argument on to its base model)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return _forward_accepts(type(base))


def position_ids_from(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counting attended tokens only (0 on padding), as ``generate`` computes them."""
    positions = attention_mask.long().cumsum(-1) - 1
    return positions.masked_fill(attention_mask == 0, 0)


def completion_logits(model: torch.nn.Module, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
                      completion_ids: torch.Tensor, completion_mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """The fp32 logits [B, Tc, V] / ``temperature`` that predict each completion token (one forward pass over
    prompt + completion, positions counting attended tokens, ``logits_to_keep`` where the model takes it)."""
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    attention_mask = torch.cat([prompt_mask.long(), completion_mask.long()], dim=1)
    tc = completion_ids.shape[1]
    extra = {"logits_to_keep": tc + 1} if _accepts_logits_to_keep(model) else {}
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids_from(attention_mask),
                use_cache=False, **extra)
    # logits at position t predict token t + 1: keep the ones predicting the completion.
    return out.logits[:, -(tc + 1):-1, :].float() / temperature


def completion_logprobs(model: torch.nn.Module, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
                        completion_ids: torch.Tensor, completion_mask: torch.Tensor, *, temperature: float = 1.0,
                        with_entropy: bool = False, entropy_grad: bool = False) -> TokenLogprobs:
    """Log-probs [B, Tc] of ``completion_ids`` given the prompts, with the graph if grad is on.

    prompt_ids/prompt_mask: [B, Tp] left-padded; completion_ids/completion_mask: [B, Tc]
    (mask True on real completion tokens). Values at masked completion positions are
    finite but meaningless: select them away with the mask. ``with_entropy`` also returns
    the per-token entropy, detached unless ``entropy_grad`` (for an entropy bonus).
    """
    logits = completion_logits(model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature)
    logp = torch.log_softmax(logits, dim=-1).gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)
    entropy = None
    if with_entropy:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            entropy = entropy_from_logits(logits if entropy_grad else logits.detach())
    return TokenLogprobs(logp, entropy)


def in_passes(forward: Callable[..., torch.Tensor], prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
              completion_ids: torch.Tensor, completion_mask: torch.Tensor, *, micro_batch_size: int,
              max_tokens: int = 0) -> torch.Tensor:
    """``forward(prompt_ids, prompt_mask, completion_ids, completion_mask) -> [b, tc]`` over the batch in passes
    (``micro_batches``: ``micro_batch_size`` rows, within ``max_tokens`` when > 0, unused columns cut), joined
    into [B, Tc] (0 past each pass's last completion column)."""
    out = torch.zeros(completion_ids.shape, dtype=torch.float32, device=completion_ids.device)
    for rows in plan_micro_batches(prompt_mask, completion_mask, max_rows=micro_batch_size, max_tokens=max_tokens):
        start, end = used_columns(prompt_mask[rows], completion_mask[rows])
        if end:
            out[rows, :end] = forward(prompt_ids[rows, start:], prompt_mask[rows, start:], completion_ids[rows, :end],
                                      completion_mask[rows, :end]).float()
    return out


@torch.no_grad()
def batched_logprobs(model: torch.nn.Module, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
                     completion_ids: torch.Tensor, completion_mask: torch.Tensor, *, temperature: float,
                     micro_batch_size: int, max_tokens: int = 0) -> torch.Tensor:
    """Gradient-free log-probs [B, Tc] (old policy, reference), ``micro_batch_size`` rows at a time
    (and within ``max_tokens`` padded tokens when > 0)."""
    def forward(*tensors: torch.Tensor) -> torch.Tensor:
        return completion_logprobs(model, *tensors, temperature=temperature).logp

    return in_passes(forward, prompt_ids, prompt_mask, completion_ids, completion_mask,
                     micro_batch_size=micro_batch_size, max_tokens=max_tokens)


def completion_log_dists(model: torch.nn.Module, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
                         completion_ids: torch.Tensor, completion_mask: torch.Tensor, *,
                         temperature: float = 1.0) -> torch.Tensor:
    """The whole next-token distribution [B, Tc, V] (fp32 log-probs) at each completion position.

    Same forward pass as ``completion_logprobs`` (positions, ``logits_to_keep``, temperature);
    for exact per-position KLs (TRPO's trust region). Memory grows with the vocabulary:
    micro-batch accordingly.
    """
    return torch.log_softmax(completion_logits(model, prompt_ids, prompt_mask, completion_ids, completion_mask,
                                               temperature), dim=-1)
