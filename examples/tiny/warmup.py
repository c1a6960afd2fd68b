"""Supervised warm-up of the tiny policy, and its success rate under sampling.

Why: RL needs a start that sometimes succeeds. A randomly initialised model never writes
``#### N`` (success ~0, so every GRPO group has zero variance); a fully trained one leaves
nothing to learn. A short teacher-forced warm-up lands in between.

It is SFT, with ``trainer-client sft``'s own encoding and loss (``trainer_client.sft``): cross-entropy
on the completion tokens only (prompt and padding are -100), optionally label-smoothed (the one
knob the command does not have): smoothing keeps part of every token's probability on the rest
of the vocabulary, which lowers the success rate of sampling at temperature 1 without lowering
that of greedy decoding (see ``make_start``). Its schedule (cosine to 10%, AdamW betas 0.9/0.98)
is its own, so the start checkpoint stays what the RL tests were tuned on.
Examples are rendered exactly as the RL trainer will render them: the prompt through the
tokenizer's chat template with ``add_generation_prompt=True`` (the raw prompt when the
tokenizer has no template), then the completion and ``eos``.

:func:`success_rate` samples one completion per problem and grades it with the project's
own GSM8K grader (``reward_service.verifiers.math.grade_numeric``), the same code the
reward server's ``gsm8k`` task runs.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from examples.tiny.arithmetic_task import Problem, completion_for
from reward_service.verifiers.math import grade_numeric
from trainer_client.sft.chat_data import IGNORE_INDEX, ChatExample
from trainer_client.sft.chat_data import encode_example as sft_encode
from trainer_client.sft.token_batches import completion_loss, forward_logits, pad_batch

__all__ = ["IGNORE_INDEX", "WarmupStats", "encode_example", "render_prompt", "sample_completions", "success_rate",
           "warmup"]


@dataclass(frozen=True)
class WarmupStats:
    """What one warm-up run did."""

    steps: int
    batch_size: int
    lr: float
    final_loss: float = field(metadata={
        "help": "mean completion-token loss (label-smoothed, if smoothing) over the last 10% of steps"})
    losses: tuple[float, ...] = field(metadata={"help": "loss of every step"})
    seconds: float
    completion_tokens: int = field(metadata={"help": "completion tokens trained on, all steps"})


def render_prompt(tokenizer: PreTrainedTokenizerBase, prompt: str) -> str:
    """The prompt as the model sees it: the chat template's generation prompt, if any."""
    if tokenizer.chat_template:
        return tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                             add_generation_prompt=True, tokenize=False)
    return prompt


def encode_example(tokenizer: PreTrainedTokenizerBase, prompt: str, completion: str) -> tuple[list[int], list[int]]:
    """(input_ids, labels) for prompt -> completion + eos; labels are -100 on the prompt (``trainer-client sft``'s)."""
    encoded = sft_encode(tokenizer, ChatExample(prompt=prompt, completion=completion))
    return list(encoded.input_ids), encoded.labels()


def _lr_factor(step: int, steps: int, warmup_steps: int) -> float:
    """Linear warm-in, then cosine decay to 10% of the peak."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, steps - warmup_steps)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


def warmup(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, problems: Sequence[Problem], steps: int,
           lr: float = 5e-3, seed: int = 0, batch_size: int = 32, label_smoothing: float = 0.0) -> WarmupStats:
    """Teacher-forced SFT on ``problems`` (batches drawn with ``random.Random(seed)``), in place.

    Peak ``lr`` after a linear warm-in over 10% of the steps, cosine decay to 10% of it.
    Deterministic for a given model, problems and seed (CPU); leaves the model in eval mode.
    """
    if steps < 0 or batch_size < 1 or not problems or not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"need steps >= 0, batch_size >= 1, some problems and 0 <= label_smoothing < 1; got "
                         f"{steps}, {batch_size}, {len(problems)}, {label_smoothing}")
    rng = random.Random(seed)
    examples = [sft_encode(tokenizer, ChatExample(prompt=p.prompt, completion=completion_for(p))) for p in problems]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, steps, max(1, steps // 10)))
    losses: list[float] = []
    tokens = 0
    start = time.perf_counter()
    model.train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # dropout, should a config enable it
        for _ in range(steps):
            batch = pad_batch(rng.sample(examples, min(batch_size, len(examples))), tokenizer.pad_token_id)
            loss = completion_loss(forward_logits(model, batch), batch, label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            tokens += int(batch["trained"].sum())
    model.eval()
    tail = losses[-max(1, steps // 10):] if losses else [float("nan")]
    return WarmupStats(steps=steps, batch_size=batch_size, lr=lr, final_loss=sum(tail) / len(tail),
                       losses=tuple(losses), seconds=time.perf_counter() - start, completion_tokens=tokens)


@torch.no_grad()
def sample_completions(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, prompts: Sequence[str], *,
                       temperature: float = 1.0, max_new_tokens: int = 48, seed: int = 0,
                       batch_size: int = 256) -> list[str]:
    """One completion per prompt (left-padded batches, stop at eos, special tokens removed).

    ``temperature == 0`` means greedy decoding; otherwise plain sampling (no top-k/top-p).
    """
    if tokenizer.padding_side != "left":
        raise ValueError("batched generation needs tokenizer.padding_side == 'left'")
    sampling = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0) if temperature > 0 else \
        dict(do_sample=False, temperature=None, top_k=None, top_p=None)
    was_training = model.training
    model.eval()
    texts: list[str] = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for i in range(0, len(prompts), batch_size):
            rendered = [render_prompt(tokenizer, p) for p in prompts[i: i + batch_size]]
            enc = tokenizer(rendered, add_special_tokens=False, padding=True, return_tensors="pt")
            out = model.generate(**enc, max_new_tokens=max_new_tokens, eos_token_id=tokenizer.eos_token_id,
                                 pad_token_id=tokenizer.pad_token_id, **sampling)
            texts.extend(tokenizer.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True))
    model.train(was_training)
    return texts


def success_rate(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, problems: Sequence[Problem], *,
                 temperature: float = 1.0, max_new_tokens: int = 48, seed: int = 0) -> float:
    """Fraction of problems whose sampled completion the GSM8K grader marks correct."""
    if not problems:
        raise ValueError("success_rate needs at least one problem")
    completions = sample_completions(model, tokenizer, [p.prompt for p in problems], temperature=temperature,
                                     max_new_tokens=max_new_tokens, seed=seed)
    return sum(grade_numeric(c, p.answer).correct for c, p in zip(completions, problems)) / len(problems)
