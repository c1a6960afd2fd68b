"""What runs inside a verification worker process: build the registry once, score items.

The worker pool calls :func:`init_worker` once per process and
:func:`score_item` per item; both are module-level so they pickle by reference.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping

from reward_service.contract import RolloutStatus
from reward_service.registry import TaskRegistry, build_registry
from reward_service.rewards_config import RewardsConfig
from reward_service.task_api import InvalidReference, TaskOutcome

_registry: TaskRegistry | None = None


@dataclass(frozen=True)
class ScoreItem:
    """One unique (task, completion, reference, prompt) to verify."""

    task: str
    completion: str
    reference: Mapping[str, Any]
    prompt: str = ""


@dataclass(frozen=True)
class ItemOutcome:
    """A task outcome plus how long the worker spent on it."""

    outcome: TaskOutcome
    elapsed_ms: float


def init_worker(config: RewardsConfig) -> None:
    """Builds this process's task registry (tasks are plain objects, never pickled)."""
    global _registry
    _registry = build_registry(config)


def score_item(item: ScoreItem) -> ItemOutcome:
    """Scores one item. An unusable reference is INVALID_REFERENCE; other task bugs propagate
    (the pool reports them as a job error, and the rollout is answered ERROR)."""
    if _registry is None:
        raise RuntimeError("worker not initialized: init_worker() must run first")
    start = time.perf_counter()
    try:
        outcome = _registry.get(item.task).score(item.completion, item.reference, item.prompt)
    except InvalidReference as exc:
        outcome = TaskOutcome(0.0, RolloutStatus.INVALID_REFERENCE, detail=str(exc))
    return ItemOutcome(outcome, (time.perf_counter() - start) * 1000.0)
