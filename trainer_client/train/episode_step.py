"""One GRPO step's data from episodes: rows -> G episodes each -> the same ``StepData`` as single turns.

Each row is an index of the environment's split; its G episodes are opened with the same spec (same
row, same seed), so they form a group. An episode's outcome becomes a ``RolloutResult``: FINISHED
is scored (its final reward, and its per-turn rewards as steps over the policy's tokens, for
``grpo.advantage: process``/``both``); every other ending is unscored, with its episode status in
the error, so it never votes in the group's baseline (``grpo.min_valid`` as for single turns).
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
import time
from collections.abc import Sequence
from typing import Any

from reward_core.clients import GroupResult
from reward_core.clients.environment import BlockingEnvironmentClient
from reward_core.contract import GroupStats, RolloutResult, RolloutStatus
from reward_core.episode_contract import EpisodeSpec, EpisodeStatus
from trainer_client.train.collect import StepData, zero_variance_flags
from trainer_client.train.config import SamplingConfig
from trainer_client.train.episode_tokens import episode_rollouts
from trainer_client.train.episodes import EpisodeRecord, TurnPolicy, run_episodes
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.prompts import PromptRow, PromptSampler

# How an unscored episode shows among rollout statuses (its own status is in the error and in the metrics).
_UNSCORED_AS = {EpisodeStatus.DEADLINE_EXCEEDED: RolloutStatus.TIMEOUT, EpisodeStatus.TOOL_FAILED: RolloutStatus.ERROR,
                EpisodeStatus.SESSION_LOST: RolloutStatus.UNAVAILABLE, EpisodeStatus.REFUSED: RolloutStatus.UNAVAILABLE,
                EpisodeStatus.SANDBOX_FAILED: RolloutStatus.UNAVAILABLE}


def episode_rows(config: EpisodesConfig) -> list[PromptRow]:
    """The rows trained on: indices ``0 .. rows-1`` of ``config.split`` (``check_served`` checks they exist)."""
    return [PromptRow(f"{config.split}/{i}", "", {"index": i}, config.environment) for i in range(config.rows)]


def check_served(config: EpisodesConfig, host: BlockingEnvironmentClient) -> None:
    """Raises ValueError unless ``host`` serves the environment with at least ``config.rows`` rows in the split."""
    info = {e.name: e for e in host.list_environments()}
    if config.environment not in info:
        raise ValueError(f"episodes.environment={config.environment!r} is not served at {host.endpoint} "
                         f"(it serves {sorted(info) or 'no environment'})")
    size = info[config.environment].splits.get(config.split, 0)
    if size < config.rows:
        raise ValueError(f"environment {config.environment!r} has {size} rows in split {config.split!r}, fewer than "
                         f"episodes.rows={config.rows} (splits: {dict(info[config.environment].splits)})")


def specs_for(rows: Sequence[PromptRow], config: EpisodesConfig, group_size: int) -> list[EpisodeSpec]:
    """G specs per row (groups contiguous): the same row and seed, so a group's episodes are comparable."""
    return [EpisodeSpec(config.environment, split=config.split, index=int(row.reference["index"]), seed=config.seed,
                        deadline_s=config.deadline_s) for row in rows for _ in range(group_size)]


def rollout_result(record: EpisodeRecord, rollout_id: str, group_id: str) -> RolloutResult:
    """An episode's outcome as a rollout result: FINISHED scored, anything else unscored (never 0)."""
    outcome = record.outcome
    task = record.spec.environment
    if outcome is not None and outcome.status.scored and outcome.reward is not None:
        return RolloutResult(rollout_id, RolloutStatus.OK, float(outcome.reward), dict(outcome.components),
                             task=task, group_id=group_id, steps=tuple(record.steps), explanation=outcome.detail,
                             elapsed_ms=outcome.elapsed_ms)
    status = record.status
    error = f"episode {status.name}: {outcome.error if outcome is not None else 'never ended'}"
    return RolloutResult(rollout_id, _UNSCORED_AS.get(status, RolloutStatus.ERROR), error=error, task=task,
                         group_id=group_id, explanation=error)


def group_results(records: Sequence[EpisodeRecord], group_size: int, tag: str) -> list[GroupResult]:
    """Records (groups contiguous) -> one GroupResult per group."""
    out = []
    for g in range(len(records) // group_size):
        gid = f"{tag}-g{g}"
        results = [rollout_result(r, f"{gid}-{k}", gid) for k, r in enumerate(records[g * group_size:
                                                                                     (g + 1) * group_size])]
        scores = [r.score for r in results if r.scored]
        mean = statistics.fmean(scores) if scores else 0.0
        std = statistics.pstdev(scores) if scores else 0.0
        out.append(GroupResult(gid, results, GroupStats(gid, len(results), len(scores), mean, std,
                                                        len(set(scores)) <= 1)))
    return out


def episode_metrics(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """Turns, tool calls, malformed calls and how episodes ended (``episodes/status/<STATUS>``)."""
    if not records:
        return {}
    metrics: dict[str, Any] = {
        "episodes/turns_mean": statistics.fmean(r.turns for r in records),
        "episodes/tool_calls_mean": statistics.fmean(r.tool_calls for r in records),
        "episodes/malformed_calls": sum(r.malformed_calls for r in records),
        "episodes/success_frac": sum(1 for r in records if (r.reward or 0) >= 1.0) / len(records),
    }
    for status, count in collections.Counter(r.status.name for r in records).items():
        metrics[f"episodes/status/{status}"] = count
    return metrics


def collect_episodes(policy: TurnPolicy, tokenizer: Any, sampler: PromptSampler, host: BlockingEnvironmentClient,
                     sampling: SamplingConfig, config: EpisodesConfig, step: int, templated: bool,
                     min_valid: int = 2) -> tuple[StepData, list[EpisodeRecord]]:
    """``prompts_per_step`` rows, ``group_size`` episodes each, as one step's data (every group kept)."""
    rows = sampler.next(sampling.prompts_per_step)
    g = sampling.group_size
    t0 = time.perf_counter()
    records = run_episodes(policy, tokenizer, host, specs_for(rows, config, g), config, templated,
                           concurrency=max(1, len(rows) * g))
    elapsed = time.perf_counter() - t0
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    texts = [tokenizer.decode(r.tokens.completion_ids, skip_special_tokens=True) for r in records]
    rollouts = episode_rollouts([r.tokens for r in records], texts, [r.truncated for r in records], g, pad_id)
    results = group_results(records, g, f"s{step}")
    shown = [dataclasses.replace(row, prompt=tokenizer.decode(records[i * g].tokens.prompt_ids,
                                                              skip_special_tokens=True))
             for i, row in enumerate(rows)]
    data = StepData(rollouts=rollouts, rows=shown, results=results, sampled=rollouts, sampled_results=results,
                    sampled_zero_variance=zero_variance_flags(results, min_valid), rounds=1, generate_s=elapsed,
                    sampled_rows=shown)
    return data, records


def evaluate_episodes(policy: TurnPolicy, tokenizer: Any, host: BlockingEnvironmentClient, config: EpisodesConfig,
                      split: str, rows: int, templated: bool, batch: int = 32) -> dict[str, Any]:
    """One episode for each of rows ``0 .. rows-1`` of ``split`` (held-out rows: ``test``), ``batch`` at a time:
    ``success`` (final reward >= 1, over every episode), ``reward_mean`` (over the scored), ``tool_use_frac``
    (episodes that called a tool other than ``submit_answer``) and ``unscored``."""
    records: list[EpisodeRecord] = []
    for start in range(0, rows, batch):
        specs = [EpisodeSpec(config.environment, split=split, index=i, seed=config.seed, deadline_s=config.deadline_s)
                 for i in range(start, min(start + batch, rows))]
        records += run_episodes(policy, tokenizer, host, specs, config, templated, concurrency=len(specs))
    scored = [r.reward for r in records if r.reward is not None]
    return {"episodes": len(records), "success": sum(1 for r in scored if r >= 1.0) / max(1, len(records)),
            "reward_mean": statistics.fmean(scored) if scored else None,
            "tool_use_frac": sum(1 for r in records if set(r.tools_called) - {"submit_answer"}) / max(1, len(records)),
            "turns_mean": statistics.fmean(r.turns for r in records) if records else None,
            "unscored": len(records) - len(scored)}
