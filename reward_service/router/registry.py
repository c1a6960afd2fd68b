"""The task registry: task name -> Task instance.

Tasks are discovered through the ``reward_service.tasks`` entry-point group,
so an installed package adds a task without editing the server::

    # the plugin's pyproject.toml
    [project.entry-points."reward_service.tasks"]
    word_count = "my_package.tasks:WordCountTask"

Configured variants and composite rewards (``rewards_config.py``) are added on top. A task that
calls another service gets its ``endpoint`` from the server's :class:`TaskEndpoints` when its
options name none.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from reward_core.contract import TaskInfo
from reward_service.router.composite import CompositeTask
from reward_service.router.rewards_config import RewardsConfig, TaskEndpoints
from reward_service.task_api import InvalidTaskOptions, Task

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "reward_service.tasks"


class UnknownTask(KeyError):
    """No task or composite reward is registered under that name."""


class TaskLoadError(RuntimeError):
    """A task plugin could not be loaded or configured; the message names it."""


class TaskRegistry:
    """Maps names to configured Task instances; ``endpoints`` supply the tasks' default endpoints."""

    def __init__(self, endpoints: TaskEndpoints | None = None) -> None:
        self.endpoints = endpoints or TaskEndpoints()
        self._classes: dict[str, type[Task]] = {}
        self._tasks: dict[str, Task] = {}
        self._infos: dict[str, TaskInfo] = {}

    def register_class(self, cls: type[Task], name: str | None = None) -> None:
        """Makes a Task class available under ``name`` (default ``cls.name``), instantiated with no options."""
        key = name or cls.name
        if not key:
            raise TaskLoadError(f"task class {cls.__qualname__} has no name")
        self._classes[key] = cls
        self.add(key, _instantiate(cls, key, {}, self.endpoints))

    def add(self, name: str, task: Task, info: TaskInfo | None = None) -> None:
        """Registers a task instance under ``name`` (replacing any previous one)."""
        self._tasks[name] = task
        self._infos[name] = info or task.info(name)

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> list[str]:
        """Registers every task advertised in the entry-point group; returns their names."""
        names = []
        for ep in entry_points(group=group):
            try:
                cls = ep.load()
            except (ImportError, AttributeError) as exc:
                raise TaskLoadError(f"task plugin {ep.name!r} ({ep.value}) failed to import: {exc}") from exc
            if not (isinstance(cls, type) and issubclass(cls, Task)):
                raise TaskLoadError(f"task plugin {ep.name!r} ({ep.value}) is not a Task subclass")
            self.register_class(cls, ep.name)
            names.append(ep.name)
        return names

    def apply_config(self, config: RewardsConfig) -> None:
        """Adds configured task variants, then composite rewards (which may use the variants)."""
        for spec in config.tasks:
            cls = self._classes.get(spec.task) or _import_task_class(spec.task, spec.name)
            if cls is None:
                raise TaskLoadError(f"tasks.{spec.name}: no registered task {spec.task!r} (and not a "
                                    f"'module:Class' path); known: {self.names()}")
            task = _instantiate(cls, spec.name, spec.options, self.endpoints)
            info = task.info(spec.name)
            if spec.description:
                info = TaskInfo(**{**info.__dict__, "description": spec.description})
            self.add(spec.name, task, info)
        for spec in config.rewards:
            missing = [c for c in spec.components if c not in self._tasks]
            if missing:
                raise TaskLoadError(f"rewards.{spec.name}: unknown component task(s) {missing}; known: {self.names()}")
            composite = CompositeTask(spec.name, {c: (self._tasks[c], w) for c, w in spec.components.items()},
                                      spec.description)
            self.add(spec.name, composite, composite.info(spec.name))

    def get(self, name: str) -> Task:
        try:
            return self._tasks[name]
        except KeyError:
            raise UnknownTask(f"unknown task {name!r}; registered: {self.names()}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tasks

    def names(self) -> list[str]:
        return sorted(self._tasks)

    def infos(self) -> list[TaskInfo]:
        return [self._infos[n] for n in self.names()]

    def self_check(self) -> dict[str, list[str]]:
        """Runs every task's ``self_check()``; returns the failures of the tasks that have some.

        A self-check that raises is itself a failure (reported, not propagated).
        """
        failures: dict[str, list[str]] = {}
        for name in self.names():
            try:
                found = list(self._tasks[name].self_check())
            except (ValueError, TypeError, KeyError, ArithmeticError, AttributeError, RuntimeError) as exc:
                found = [f"self_check raised {type(exc).__name__}: {exc}"]
            if found:
                failures[name] = found
        return failures


def log_self_check(registry: TaskRegistry) -> dict[str, list[str]]:
    """Runs the registry's self-check once (at server start-up) and logs each failing task."""
    failures = registry.self_check()
    for name, lines in failures.items():
        logger.error("task %r failed its self-check (%d problems); its rewards are not trustworthy: %s",
                     name, len(lines), "; ".join(lines[:5]))
    return failures


def _import_task_class(path: str, name: str) -> type[Task] | None:
    """Loads ``package.module:ClassName``, the way entry points name objects; None if not a path."""
    if ":" not in path:
        return None
    try:
        cls = EntryPoint(name=name, value=path, group=ENTRY_POINT_GROUP).load()
    except (ImportError, AttributeError) as exc:
        raise TaskLoadError(f"tasks.{name}: cannot import {path!r}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise TaskLoadError(f"tasks.{name}: {path!r} is not a Task subclass")
    return cls


def _with_endpoint(cls: type[Task], name: str, options: Mapping[str, Any],
                   endpoints: TaskEndpoints) -> Mapping[str, Any]:
    """``options`` plus the task's default ``endpoint`` from ``endpoints`` (see ``Task.endpoint_field``);
    an ``endpoint`` the options give (``""`` included, not null) wins."""
    if not cls.endpoint_field or options.get("endpoint") is not None:
        return options
    if cls.endpoint_field not in {f.name for f in dataclasses.fields(TaskEndpoints)}:
        raise TaskLoadError(f"task {name!r}: endpoint_field {cls.endpoint_field!r} is not a field of TaskEndpoints")
    return {**options, "endpoint": getattr(endpoints, cls.endpoint_field)}


def _instantiate(cls: type[Task], name: str, options: Mapping[str, Any], endpoints: TaskEndpoints) -> Task:
    try:
        return cls(**_with_endpoint(cls, name, options, endpoints))
    except (TypeError, InvalidTaskOptions) as exc:
        raise TaskLoadError(f"task {name!r}: bad options {dict(options)}: {exc}") from exc


def build_registry(config: RewardsConfig, extra: Iterable[type[Task]] = (),
                   endpoints: TaskEndpoints | None = None) -> TaskRegistry:
    """The registry a server (and each of its workers) uses: plugins + extra classes + config."""
    registry = TaskRegistry(endpoints)
    if config.load_entry_points:
        registry.load_entry_points()
    for cls in extra:
        registry.register_class(cls)
    registry.apply_config(config)
    logger.debug("registered tasks: %s", registry.names())
    return registry
