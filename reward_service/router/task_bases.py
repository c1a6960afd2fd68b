"""Tasks built on a base task (``Task.default_base``): which base each names, and the order that builds
every base before the tasks over it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reward_service.router.rewards_config import TaskSpec
from reward_service.task_api import InvalidTaskOptions, Task

Entry = tuple[TaskSpec, type[Task]]


def base_name(cls: type[Task], task: str, options: Mapping[str, Any]) -> str:
    """The base ``task`` (of class ``cls``) names: its ``base`` option, else the class's default."""
    name = options.get("base", cls.default_base)
    if not isinstance(name, str) or not name:
        raise InvalidTaskOptions(f"task {task!r}: option 'base' must be the name of a registered task, got {name!r}")
    return name


def with_base(cls: type[Task], name: str, options: Mapping[str, Any],
              lookup: Callable[[str], Task | None]) -> Mapping[str, Any]:
    """``options`` with ``base`` as the instance of the task it names (unchanged for a task without a base)."""
    if not cls.default_base:
        return options
    base = base_name(cls, name, options)
    if base == name:
        raise InvalidTaskOptions(f"task {name!r} cannot be its own base: name another task in option 'base'")
    task = lookup(base)
    if task is None:
        raise InvalidTaskOptions(f"base task {base!r} is not registered (define it under 'tasks', above or "
                                 "below, or install its plugin)")
    return {**options, "base": task}


def order_by_base(entries: Sequence[Entry]) -> list[Entry]:
    """``entries`` ordered so that one whose base is another entry comes after it; raises
    InvalidTaskOptions when bases form a cycle."""
    pending, ordered = list(entries), []
    while pending:
        waiting = {spec.name for spec, _ in pending}
        ready = [(spec, cls) for spec, cls in pending
                 if base_name(cls, spec.name, spec.options) not in waiting - {spec.name}]
        if not ready:
            raise InvalidTaskOptions(f"tasks {sorted(waiting)} name each other as 'base' in a cycle")
        ordered += ready
        pending = [entry for entry in pending if entry not in ready]
    return ordered
