"""One GRPO step's data from episodes: rows -> G episodes each -> the same ``StepData`` as single turns.

Each row is an index of the environment's split, or (``episodes.rows_from: data``) a row of ``data.train``
sent to the environment as ``{"prompt", "reference"}``; its G episodes are opened with the same spec
(same row, same seed), so they form a group. A row the environment refuses stops the run with
:class:`PromptDataError` naming it (checked on the first row before step 0, and on every row as it is
opened), never a silent unscored group. An episode's outcome becomes a ``RolloutResult``: FINISHED
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
from reward_core.episode_contract import EpisodeError, EpisodeSpec, EpisodeSpecError, EpisodeStatus
from trainer_client.errors import PromptDataError
from trainer_client.train.collect import StepData, zero_variance_flags
from trainer_client.train.config import DataConfig, SamplingConfig
from trainer_client.train.episode_tokens import episode_rollouts
from trainer_client.train.episodes import EpisodeRecord, TurnPolicy, run_episodes
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.prompts import PromptRow, PromptSampler, read_prompts

# How an unscored episode shows among rollout statuses (its own status is in the error and in the metrics).
_UNSCORED_AS = {EpisodeStatus.DEADLINE_EXCEEDED: RolloutStatus.TIMEOUT, EpisodeStatus.TOOL_FAILED: RolloutStatus.ERROR,
                EpisodeStatus.SESSION_LOST: RolloutStatus.UNAVAILABLE, EpisodeStatus.REFUSED: RolloutStatus.UNAVAILABLE,
                EpisodeStatus.SANDBOX_FAILED: RolloutStatus.UNAVAILABLE}


def split_rows(config: EpisodesConfig, split: str, count: int) -> list[PromptRow]:
    """Rows ``0 .. count-1`` of the environment's ``split``, by index (the server makes them)."""
    return [PromptRow(f"{split}/{i}", "", {"index": i}, config.environment) for i in range(count)]


def data_rows(config: EpisodesConfig, data: DataConfig, path: str) -> list[PromptRow]:
    """The rows of a JSONL file as episode rows, read as ``data.train`` is (``data.prompt_key``,
    ``data.reference_key``, or a ``messages`` list); PromptDataError naming the file and line of a bad row.
    A row's ``task`` is not used: the environment's task verifies its episodes."""
    rows = read_prompts(path, config.environment, prompt_key=data.prompt_key, reference_key=data.reference_key)
    empty = next((row for row in rows if not row.prompt.strip()), None)
    if empty is not None:
        raise PromptDataError(f"{where(empty, path)}: the prompt ({data.prompt_key!r}) is empty")
    return [dataclasses.replace(row, task=config.environment) for row in rows]


def episode_rows(config: EpisodesConfig, data: DataConfig | None = None) -> list[PromptRow]:
    """The rows trained on: ``data.train``'s (``rows_from: data``), else indices ``0 .. rows-1`` of
    ``config.split`` (``check_served`` checks they exist)."""
    if config.rows_from == "data":
        if data is None or not data.train:
            raise ValueError("episodes.rows_from=data needs data.train=PATH (a JSONL file of rows)")
        return data_rows(config, data, data.train)
    return split_rows(config, config.split, config.rows)


def episode_row(row: PromptRow) -> dict[str, object] | None:
    """What an environment reads of a data row (``{"prompt": text or messages, "reference"}``); None for a
    row named by split and index (no prompt of its own: ``split_rows``)."""
    if not row.prompt and not row.messages:
        return None
    return {"prompt": [dict(m) for m in row.messages] if row.messages else row.prompt,
            "reference": dict(row.reference)}


def where(row: PromptRow, path: str = "") -> str:
    """A row as an error names it: its file and line (or its id)."""
    return f"{path}:{row.line}" if path and row.line else f"row {row.id!r}"


def check_served(config: EpisodesConfig, host: BlockingEnvironmentClient, eval_split: bool = False) -> None:
    """Raises ValueError unless ``host`` serves the environment with the rows asked of its splits
    (``config.rows`` of ``config.split`` unless the rows are data's; with ``eval_split``, ``config.eval_rows``
    of ``config.eval_split``)."""
    info = {e.name: e for e in host.list_environments()}
    if config.environment not in info:
        raise ValueError(f"episodes.environment={config.environment!r} is not served at {host.endpoint} "
                         f"(it serves {sorted(info) or 'no environment'})")
    splits = dict(info[config.environment].splits)
    wanted = [] if config.rows_from == "data" else [(config.split, config.rows, "episodes.rows")]
    if eval_split:
        wanted.append((config.eval_split, config.eval_rows, "episodes.eval_rows"))
    for split, count, key in wanted:
        size = splits.get(split, 0)
        if size < count:
            raise ValueError(f"environment {config.environment!r} has {size} rows in split {split!r}, fewer than "
                             f"{key}={count} (splits: {splits})")


def check_row(config: EpisodesConfig, host: BlockingEnvironmentClient, row: PromptRow, path: str) -> None:
    """Opens (and closes) one episode of ``row``: PromptDataError naming the row when the environment refuses
    it (a shape it cannot read), before any step runs."""
    try:
        start = host.open(EpisodeSpec(config.environment, row=episode_row(row), seed=config.seed))
    except EpisodeSpecError as exc:
        raise PromptDataError(f"{where(row, path)}: environment {config.environment!r} refuses this row: "
                              f"{exc}") from None
    try:
        host.close(start.session_id)
    except EpisodeError:
        pass  # closing is idempotent; a lost session holds nothing


def raise_refused_rows(records: Sequence[EpisodeRecord], rows: Sequence[PromptRow], group_size: int,
                       path: str = "") -> None:
    """PromptDataError naming the first row whose episodes the environment refused (``EpisodeSpecError``)."""
    for i, row in enumerate(rows):
        refused = next((r.spec_error for r in records[i * group_size:(i + 1) * group_size] if r.spec_error), "")
        if refused:
            raise PromptDataError(f"{where(row, path)}: environment {records[i * group_size].spec.environment!r} "
                                  f"refuses this row: {refused}")


def specs_for(rows: Sequence[PromptRow], config: EpisodesConfig, group_size: int, split: str = "") -> list[EpisodeSpec]:
    """G specs per row (groups contiguous): the same row and seed, so a group's episodes are comparable. A data
    row travels as the spec's ``row``; a split's row by its index (of ``split``, default ``config.split``)."""
    specs = []
    for row in rows:
        sent = episode_row(row)
        spec = EpisodeSpec(config.environment, row=sent, seed=config.seed, deadline_s=config.deadline_s) \
            if sent is not None else EpisodeSpec(config.environment, split=split or config.split,
                                                 index=int(row.reference["index"]), seed=config.seed,
                                                 deadline_s=config.deadline_s)
        specs += [spec] * group_size
    return specs


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
                     min_valid: int = 2, path: str = "") -> tuple[StepData, list[EpisodeRecord]]:
    """``prompts_per_step`` rows, ``group_size`` episodes each, as one step's data (every group kept);
    PromptDataError naming a row the environment refuses (``path``: the rows' file)."""
    rows = sampler.next(sampling.prompts_per_step)
    g = sampling.group_size
    t0 = time.perf_counter()
    records = run_episodes(policy, tokenizer, host, specs_for(rows, config, g), config, templated,
                           concurrency=max(1, len(rows) * g))
    raise_refused_rows(records, rows, g, path)
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


def eval_summary(records: Sequence[EpisodeRecord], correct_at: float = 1.0) -> dict[str, Any]:
    """Held-out episodes' metrics: ``success`` (final reward >= ``correct_at``, over every episode),
    ``accuracy`` (the same over the scored, as single-turn eval counts it), ``reward_mean`` (over the
    scored), ``unscored`` and ``unscored_rate``, ``tool_calls_mean`` (answered calls per episode),
    ``tool_use_frac`` (episodes that called a tool other than ``submit_answer``), ``turns_mean``,
    ``malformed_calls``; ``samples`` = ``episodes``."""
    n = len(records)
    scored = [r.reward for r in records if r.reward is not None]
    correct = sum(1 for r in scored if r >= correct_at)
    return {"episodes": n, "samples": n, "scored": len(scored), "unscored": n - len(scored),
            "unscored_rate": (n - len(scored)) / n if n else None,
            "success": correct / max(1, n), "accuracy": correct / len(scored) if scored else None,
            "reward_mean": statistics.fmean(scored) if scored else None,
            "tool_calls_mean": statistics.fmean(r.tool_calls for r in records) if records else None,
            "tool_use_frac": sum(1 for r in records if set(r.tools_called) - {"submit_answer"}) / max(1, n),
            "turns_mean": statistics.fmean(r.turns for r in records) if records else None,
            "malformed_calls": sum(r.malformed_calls for r in records)}


def evaluate_rows(policy: TurnPolicy, tokenizer: Any, host: BlockingEnvironmentClient, config: EpisodesConfig,
                  rows: Sequence[PromptRow], templated: bool, split: str = "", batch: int = 32,
                  correct_at: float = 1.0, path: str = "") -> dict[str, Any]:
    """One episode for each row (a split's, by index, of ``split``; or data rows), ``batch`` at a time:
    :func:`eval_summary`. PromptDataError naming a row the environment refuses."""
    records: list[EpisodeRecord] = []
    for start in range(0, len(rows), batch):
        chunk = rows[start:start + batch]
        specs = specs_for(chunk, config, 1, split)
        done = run_episodes(policy, tokenizer, host, specs, config, templated, concurrency=len(specs))
        raise_refused_rows(done, chunk, 1, path)
        records += done
    return eval_summary(records, correct_at)


def evaluate_episodes(policy: TurnPolicy, tokenizer: Any, host: BlockingEnvironmentClient, config: EpisodesConfig,
                      split: str, rows: int, templated: bool, batch: int = 32) -> dict[str, Any]:
    """One episode for each of rows ``0 .. rows-1`` of ``split`` (held-out rows: ``test``), ``batch`` at a time:
    :func:`eval_summary` (``success``, ``reward_mean``, ``tool_use_frac``, ``unscored``, ...)."""
    return evaluate_rows(policy, tokenizer, host, config, split_rows(config, split, rows), templated, split, batch)
