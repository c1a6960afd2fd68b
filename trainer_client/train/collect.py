"""One step's data: sample groups, score them (overlapped), and, with dynamic sampling, top up.

Generation runs ``generation_batch_prompts`` prompts per ``generate`` call; each call's
groups are submitted to the reward service the moment it returns, so they are verified
while the next call samples. After a round, with DAPO dynamic sampling, groups whose
scored rewards are all equal, or that have fewer than ``min_valid`` scored members (no
learning signal), are dropped and a further round draws more prompts, until
``prompts_per_step`` groups carry signal or ``max_sampling_rounds`` rounds have run; the
batch is then cut to ``prompts_per_step`` groups. Without dynamic sampling every group of
the single round is kept.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from reward_core.clients import GroupResult
from trainer_client.rl import reward_mask_from, zero_variance_groups
from trainer_client.train.config import SamplingConfig
from trainer_client.train.reward_overlap import OverlappedScorer, ScoringJob
from trainer_client.train.rollouts import PromptRow, PromptSampler, Rollouts, concat_rollouts, generate_groups

logger = logging.getLogger(__name__)


class GroupFiltering(Protocol):
    """What ``collect_step`` reads of its trainer's config (``GrpoConfig``; PPO keeps every group)."""

    @property
    def dynamic_sampling(self) -> bool: ...

    @property
    def max_sampling_rounds(self) -> int: ...

    @property
    def min_valid(self) -> int: ...


@dataclass
class StepData:
    """Everything sampled in one step (``sampled_*``) and the groups kept for training."""

    rollouts: Rollouts  # kept groups, G rows each
    rows: list[PromptRow]  # one per kept group
    results: list[GroupResult]  # one per kept group
    sampled: Rollouts  # every group sampled this step (for metrics)
    sampled_results: list[GroupResult]
    sampled_zero_variance: list[bool]
    rounds: int
    generate_s: float = 0.0
    wait_reward_s: float = 0.0
    reward_latency_s: list[float] = field(default_factory=list)  # submit -> result, per scoring call
    sampled_rows: list[PromptRow] = field(default_factory=list)  # one per sampled group (rollouts.jsonl)


def group_payload(rows: list[PromptRow], rollouts: Rollouts, tag: str) -> list[list[dict[str, Any]]]:
    """Reward-service rollouts, one list per prompt; ids unique within the step."""
    g = rollouts.group_size
    groups = []
    for i, row in enumerate(rows):
        gid = f"{tag}-g{i}"
        groups.append([{"id": f"{gid}-{k}", "group_id": gid, "task": row.task, "completion": rollouts.texts[i * g + k],
                        "reference": dict(row.reference), "prompt": row.prompt} for k in range(g)])
    return groups


def zero_variance_flags(results: list[GroupResult], min_valid: int = 2) -> list[bool]:
    """Per group: are its scored rewards all equal (or fewer than two, or than ``min_valid``, scored)?"""
    if not results:
        return []
    rewards, valid = reward_mask_from([r for group in results for r in group.rewards])
    sizes = {len(group.results) for group in results}
    if len(sizes) != 1:
        raise ValueError("groups must all have the same size")
    shape = (len(results), sizes.pop())
    return zero_variance_groups(rewards.view(shape), valid_mask=valid.view(shape), min_valid=min_valid).tolist()


def _round(model: Any, tokenizer: Any, rows: list[PromptRow], sampling: SamplingConfig, scorer: OverlappedScorer,
           tag: str, data: dict[str, Any],
           chat_template: str) -> tuple[list[Rollouts], list[tuple[list[PromptRow], ScoringJob]]]:
    parts, jobs = [], []
    for start in range(0, len(rows), sampling.generation_batch_prompts):
        chunk = rows[start: start + sampling.generation_batch_prompts]
        t0 = time.perf_counter()
        rollouts = generate_groups(model, tokenizer, chunk, sampling, chat_template=chat_template)
        data["generate_s"] += time.perf_counter() - t0
        jobs.append((chunk, scorer.submit(group_payload(chunk, rollouts, f"{tag}-c{start}"))))
        parts.append(rollouts)
    return parts, jobs


def collect_step(model: Any, tokenizer: Any, sampler: PromptSampler, scorer: OverlappedScorer,
                 sampling: SamplingConfig, grpo: GroupFiltering, step: int, chat_template: str = "auto") -> StepData:
    """Samples, scores and (optionally) filters groups until the step's batch is complete.

    ``chat_template``: ``data.chat_template`` (how prompts are rendered; ``prompts.render_prompt``)."""
    need = sampling.prompts_per_step
    timing: dict[str, Any] = {"generate_s": 0.0}
    wait_before = scorer.wait_s
    latencies: list[float] = []
    all_parts: list[Rollouts] = []
    all_rows: list[PromptRow] = []
    all_results: list[GroupResult] = []
    kept: list[int] = []  # indices into the all_* lists
    rounds = 0
    draw = need
    while rounds < (grpo.max_sampling_rounds if grpo.dynamic_sampling else 1):
        rows = sampler.next(draw)
        parts, jobs = _round(model, tokenizer, rows, sampling, scorer, f"s{step}-r{rounds}", timing, chat_template)
        rounds += 1
        first = len(all_rows)
        for chunk, job in jobs:
            all_results += scorer.wait(job)
            latencies.append((job.done_at or time.perf_counter()) - job.submitted_at)
            all_rows += chunk
        all_parts += parts
        flags = zero_variance_flags(all_results[first:], grpo.min_valid)
        kept += [first + i for i, zero in enumerate(flags) if not (grpo.dynamic_sampling and zero)]
        if len(kept) >= need or not grpo.dynamic_sampling:
            break
        keep_rate = max(len(kept) / len(all_rows), 0.25)
        draw = min(math.ceil((need - len(kept)) / keep_rate), 2 * need)
    if grpo.dynamic_sampling and len(kept) < need:
        logger.info("step %d: only %d of %d groups carry signal after %d sampling rounds", step, len(kept), need,
                    rounds)
    kept = kept[:need]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    sampled = concat_rollouts(all_parts, pad_id)
    return StepData(
        rollouts=sampled.select_groups(kept) if kept else sampled.select_groups([]),
        rows=[all_rows[i] for i in kept], results=[all_results[i] for i in kept], sampled=sampled,
        sampled_results=all_results, sampled_zero_variance=zero_variance_flags(all_results, grpo.min_valid),
        rounds=rounds,
        generate_s=timing["generate_s"], wait_reward_s=scorer.wait_s - wait_before, reward_latency_s=latencies,
        sampled_rows=all_rows)


def batch_rewards(results: list[GroupResult]) -> tuple[torch.Tensor, torch.Tensor]:
    """(rewards [N] with NaN where unscored, scored [N] bool), groups flattened in order."""
    return reward_mask_from([r for group in results for r in group.rewards])
