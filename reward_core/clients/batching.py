"""Pure helpers of the reward clients: normalize rollouts, split batches into chunks, merge results."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reward_core.contract import (
    GroupStats,
    Rollout,
    RolloutResult,
    ScoreBatchResult,
    group_stats,
)

RolloutLike = Rollout | Mapping[str, Any]


@dataclass(frozen=True)
class GroupResult:
    """One group's results (input order) and statistics."""

    group_id: str
    results: list[RolloutResult]
    stats: GroupStats

    @property
    def rewards(self) -> list[float | None]:
        """Per-rollout rewards, None where unscored (mask those)."""
        return [r.reward for r in self.results]


def as_rollouts(items: Sequence[RolloutLike]) -> list[Rollout]:
    """Accepts Rollout objects or JSONL-style dicts; raises ValueError on duplicate ids."""
    rollouts = [r if isinstance(r, Rollout) else Rollout.from_dict(r) for r in items]
    seen: set[str] = set()
    for r in rollouts:
        if r.id in seen:
            raise ValueError(f"duplicate rollout id {r.id!r}: ids must be unique within a call")
        seen.add(r.id)
    return rollouts


def as_groups(groups: Sequence[Sequence[RolloutLike]], prefix: str = "g") -> list[Rollout]:
    """Flattens groups, giving each rollout its group's id (kept if already set)."""
    flat: list[Rollout] = []
    for gi, group in enumerate(groups):
        members = as_rollouts(group)
        gid = next((r.group_id for r in members if r.group_id), f"{prefix}{gi}")
        flat += [r if r.group_id == gid else Rollout(**{**r.__dict__, "group_id": gid}) for r in members]
    return as_rollouts(flat)


def approx_size(rollout: Rollout) -> int:
    """Approximate serialized bytes of a rollout (for chunking under the message limit)."""
    return 64 + len(rollout.id) + len(rollout.task) + len(rollout.completion.encode()) + len(
        rollout.prompt.encode()) + len(json.dumps(rollout.reference, default=str))


def plan_chunks(rollouts: Sequence[Rollout], max_rollouts: int, max_bytes: int) -> list[list[Rollout]]:
    """Consecutive chunks of at most ``max_rollouts`` rollouts and about ``max_bytes`` bytes.

    A group (consecutive rollouts with one non-empty group_id) is never split,
    so the server can compute its statistics; a group larger than the limits
    travels alone in its own chunk.
    """
    if max_rollouts < 1 or max_bytes < 1:
        raise ValueError("max_rollouts and max_bytes must be >= 1")
    units: list[list[Rollout]] = []
    for r in rollouts:
        if units and r.group_id and units[-1][-1].group_id == r.group_id:
            units[-1].append(r)
        else:
            units.append([r])
    chunks: list[list[Rollout]] = []
    count = size = 0
    for unit in units:
        unit_size = sum(approx_size(r) for r in unit)
        if chunks and count + len(unit) <= max_rollouts and size + unit_size <= max_bytes:
            chunks[-1] += unit
            count += len(unit)
            size += unit_size
        else:
            chunks.append(list(unit))
            count, size = len(unit), unit_size
    return chunks


def merge_batches(request_id: str, batches: Sequence[ScoreBatchResult]) -> ScoreBatchResult:
    """Joins chunk results (already in input order) into one batch result."""
    results = [r for b in batches for r in b.results]
    return ScoreBatchResult(request_id, results, group_stats(results), sum(b.elapsed_ms for b in batches))


def split_groups(batch: ScoreBatchResult) -> list[GroupResult]:
    """Per-group view of a batch, in order of first appearance."""
    by_group: dict[str, list[RolloutResult]] = {}
    for r in batch.results:
        by_group.setdefault(r.group_id, []).append(r)
    return [GroupResult(s.group_id, by_group[s.group_id], s) for s in batch.groups]
