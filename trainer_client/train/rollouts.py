"""Prompts in, sampled completions out: the JSONL prompt set, its sampler, and batched generation.

    rows = read_prompts("data/rl_train.jsonl", default_task="gsm8k")
    sampler = PromptSampler(rows, seed=0)
    batch = generate_groups(model, tokenizer, sampler.next(4), sampling)   # 4 prompts x G completions

A prompt is rendered through the tokenizer's chat template (one user turn, generation
prompt added) when the tokenizer has one, else used as is. ``generate`` samples G
completions per prompt (rows ``i*G .. i*G+G-1`` belong to prompt ``i``); a completion ends
at its first eos token (kept, it was sampled) or at a stop string, and is *truncated*
when it ran into ``max_new_tokens`` instead.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trainer_client.errors import PromptDataError
from trainer_client.train.config import SamplingConfig


@dataclass(frozen=True)
class PromptRow:
    id: str
    prompt: str
    reference: Mapping[str, Any]
    task: str
    line: int = 0  # its line in the prompts file (0: not from a file)


def read_prompts(path: str | Path, default_task: str | None = None) -> list[PromptRow]:
    """Reads ``{"prompt", "reference", "task"[, "id"]}`` lines; ``default_task`` fills a missing task."""
    rows: list[PromptRow] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise PromptDataError(f"cannot read prompts from {path}: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PromptDataError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("prompt"), str):
            raise PromptDataError(f"{path}:{number}: need an object with a string \"prompt\"")
        task = data.get("task") or default_task
        if not isinstance(task, str) or not task:
            raise PromptDataError(f"{path}:{number}: no \"task\" (add one, or set data.task)")
        reference = data.get("reference")
        reference = (reference if isinstance(reference, dict)
                     else ({} if reference is None else {"answer": str(reference)}))
        rows.append(PromptRow(str(data.get("id", f"line{number}")), data["prompt"], reference, task, number))
    if not rows:
        raise PromptDataError(f"{path}: no prompts")
    return rows


class PromptSampler:
    """Endless stream of prompts: passes over the rows, each pass shuffled by ``(seed, pass)``.

    Independent of the global RNGs; ``state_dict``/``load_state_dict`` make resume exact.
    """

    def __init__(self, rows: Sequence[PromptRow], seed: int, shuffle: bool = True) -> None:
        self.rows = list(rows)
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0
        self.position = 0
        self._order = self._make_order()

    def _make_order(self) -> list[int]:
        order = list(range(len(self.rows)))
        if self.shuffle:
            random.Random(f"{self.seed}-{self.epoch}").shuffle(order)
        return order

    def next(self, n: int) -> list[PromptRow]:
        out = []
        for _ in range(n):
            if self.position == len(self._order):
                self.epoch, self.position = self.epoch + 1, 0
                self._order = self._make_order()
            out.append(self.rows[self._order[self.position]])
            self.position += 1
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self._order = self._make_order()


def render_prompt(tokenizer: Any, prompt: str) -> str:
    """The text the model is prompted with: the chat template's generation prompt, if any."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                             add_generation_prompt=True, tokenize=False)
    return prompt


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

    @property
    def num_groups(self) -> int:
        return len(self.texts) // self.group_size

    def select_groups(self, groups: Sequence[int]) -> Rollouts:
        rows = torch.tensor([g * self.group_size + k for g in groups for k in range(self.group_size)],
                            dtype=torch.long)
        return Rollouts(self.prompt_ids[rows], self.prompt_mask[rows], self.completion_ids[rows],
                        self.completion_mask[rows], self.lengths[rows], self.truncated[rows],
                        [self.texts[int(i)] for i in rows], self.group_size)


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
    return Rollouts(_pad([p.prompt_ids for p in parts], pad_id, left=True),
                    _pad([p.prompt_mask for p in parts], False, left=True),
                    _pad([p.completion_ids for p in parts], pad_id, left=False),
                    _pad([p.completion_mask for p in parts], False, left=False),
                    torch.cat([p.lengths for p in parts]), torch.cat([p.truncated for p in parts]),
                    [t for p in parts for t in p.texts], parts[0].group_size)


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
                    greedy: bool = False) -> Rollouts:
    """G = ``sampling.group_size`` sampled completions for each row, in one ``generate`` call.

    ``greedy``: decode greedily instead (evaluation; the sampling knobs are not used).
    """
    if tokenizer.padding_side != "left":
        raise ValueError("batched generation needs tokenizer.padding_side == 'left'")
    device = next(model.parameters()).device
    templated = bool(getattr(tokenizer, "chat_template", None))
    enc = tokenizer([render_prompt(tokenizer, r.prompt) for r in rows], add_special_tokens=not templated,
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
