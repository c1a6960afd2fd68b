"""The group stage: rollouts of one request that share a ``group_id`` and a groupwise task
(``Task.groupwise``) are shaped together once all their outcomes are known.

Only a group's scored members take part; an unscored member stays unscored and is left out of the
group's statistics. A group split over several requests is shaped per request (send each group in
one request: ``RewardClient`` never splits one). A group stage that fails answers its members ERROR.
A stage that waits on another service (``Task.group_stage_waits``: a judge ranking the group) runs
off the server's event loop, one job per group (``PendingBatch`` in ``scoring.py``); a pure one
(``kimi_length``) runs as the request is answered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from reward_core.contract import Rollout, RolloutStatus
from reward_service.router.worker_job import ItemOutcome
from reward_service.task_api import Task, TaskInput, TaskOutcome

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Group:
    """One group of a request: its task, its ``group_id`` and its scored members (rollout indices)."""

    task_name: str
    group_id: str
    members: tuple[int, ...]


def find_groups(rollouts: Sequence[Rollout], outcomes: Mapping[int, ItemOutcome],
                task_of: Callable[[str], Task]) -> list[Group]:
    """The groups of the groupwise rollouts (by index) with a scored outcome in ``outcomes``."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i in sorted(outcomes):
        rollout = rollouts[i]
        if rollout.group_id and outcomes[i].outcome.status.scored and task_of(rollout.task).groupwise:
            groups.setdefault((rollout.task, rollout.group_id), []).append(i)
    return [Group(task, gid, tuple(members)) for (task, gid), members in groups.items()]


def shape_group(group: Group, rollouts: Sequence[Rollout], outcomes: Mapping[int, ItemOutcome],
                task_of: Callable[[str], Task]) -> dict[int, ItemOutcome]:
    """The shaped outcome of each member of ``group`` (by index)."""
    new = _score_group(task_of(group.task_name), group.task_name, group.group_id,
                       [rollouts[i] for i in group.members], [outcomes[i].outcome for i in group.members])
    return {i: ItemOutcome(outcome, outcomes[i].elapsed_ms) for i, outcome in zip(group.members, new)}


def shape_groups(rollouts: Sequence[Rollout], outcomes: Mapping[int, ItemOutcome],
                 task_of: Callable[[str], Task]) -> dict[int, ItemOutcome]:
    """The shaped outcome of every groupwise rollout (by index) with a scored outcome in ``outcomes``."""
    shaped: dict[int, ItemOutcome] = {}
    for group in find_groups(rollouts, outcomes, task_of):
        shaped.update(shape_group(group, rollouts, outcomes, task_of))
    return shaped


def _score_group(task: Task, task_name: str, group_id: str, rollouts: list[Rollout],
                 outcomes: list[TaskOutcome]) -> list[TaskOutcome]:
    items = [TaskInput(r.completion, r.reference, r.prompt, r.metadata) for r in rollouts]
    try:
        new = list(task.score_group(items, outcomes))
        if len(new) != len(items):
            raise RuntimeError(f"score_group returned {len(new)} outcomes for {len(items)} members")
    except Exception as exc:  # noqa: BLE001 -- a task's bug fails its group, never the request
        logger.warning("task %r: group stage of group %r (rollouts %s) failed", task_name, group_id,
                       ", ".join(repr(r.id) for r in rollouts), exc_info=exc)
        failed = TaskOutcome(0.0, RolloutStatus.ERROR,
                             detail=f"group stage of task {task_name!r} failed: {type(exc).__name__}: {exc}")
        return [failed] * len(items)
    return new
