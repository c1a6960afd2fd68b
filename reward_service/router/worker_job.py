"""What runs inside a verification worker process: build the registry once, score items.

The worker pool calls :func:`init_worker` once per process and
:func:`score_items` per job (a few items of one request); both are module-level
so they pickle by reference.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from reward_service.router.registry import TaskRegistry, build_registry
from reward_service.router.rewards_config import RewardsConfig, TaskEndpoints
from reward_service.task_api import TaskInput, TaskOutcome

_registry: TaskRegistry | None = None


@dataclass(frozen=True)
class ScoreItem:
    """One unique (task, completion, reference, prompt, metadata) to verify."""

    task: str
    input: TaskInput


@dataclass(frozen=True)
class ItemOutcome:
    """A task outcome plus the worker time spent on it."""

    outcome: TaskOutcome
    elapsed_ms: float


def init_worker(config: RewardsConfig, endpoints: TaskEndpoints | None = None) -> None:
    """Builds this process's task registry (tasks are plain objects, never pickled)."""
    global _registry
    _registry = build_registry(config, endpoints=endpoints)


def score_items(items: Sequence[ScoreItem]) -> list[ItemOutcome]:
    """Scores a job's items, in order; all items of one job share a task.

    A task bug propagates: the pool reports the job failed, and the server
    retries each item alone so only the item that fails is answered ERROR.
    """
    if _registry is None:
        raise RuntimeError("worker not initialized: init_worker() must run first")
    if len({item.task for item in items}) > 1:
        raise ValueError("a job's items must share one task")
    task = _registry.get(items[0].task)
    start = time.perf_counter()
    outcomes = task.score_batch([item.input for item in items])
    if len(outcomes) != len(items):
        raise RuntimeError(f"task {items[0].task!r} returned {len(outcomes)} outcomes for {len(items)} items")
    per_item_ms = (time.perf_counter() - start) * 1000.0 / len(items)
    return [ItemOutcome(outcome, per_item_ms) for outcome in outcomes]
