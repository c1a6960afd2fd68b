"""The rewards configuration: task options and composite rewards, from YAML; and the endpoints of the
services tasks call (:class:`TaskEndpoints`, from flags).

Composite rewards are configuration, not code::

    tasks:                      # optional: named variants of registered tasks
      strict_math:
        task: math
        options: {strict: true}
      word_count:               # or a Task class by import path, no entry point needed
        task: examples.word_count_task:WordCountTask
    rewards:                    # composite rewards: weighted sums of tasks
      math_with_format:
        description: "accuracy plus a small bonus for <think>/<answer> format"
        components: {math: 1.0, format: 0.2}

A name under ``tasks`` that equals a registered task configures that task's
options; any other name adds a variant. Names under ``rewards`` become
composite tasks that clients select like any other task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class RewardsConfigError(ValueError):
    """The rewards config file is malformed; the message says where and how to fix it."""


@dataclass(frozen=True)
class TaskSpec:
    """A configured task: ``name`` runs registered task ``task`` with ``options``."""

    name: str
    task: str
    options: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class CompositeSpec:
    """A composite reward: the weighted sum of its components' scores."""

    name: str
    components: Mapping[str, float]
    description: str = ""


@dataclass(frozen=True)
class RewardsConfig:
    """Task variants and composite rewards (picklable: sent to every worker)."""

    tasks: tuple[TaskSpec, ...] = ()
    rewards: tuple[CompositeSpec, ...] = ()
    load_entry_points: bool = True

    @classmethod
    def from_yaml(cls, path: str | Path) -> RewardsConfig:
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise RewardsConfigError(f"cannot read rewards config {path}: {exc}") from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<config>") -> RewardsConfig:
        if not isinstance(data, Mapping):
            raise RewardsConfigError(f"{source}: top level must be a mapping with 'tasks' and/or 'rewards'")
        unknown = set(data) - {"tasks", "rewards"}
        if unknown:
            raise RewardsConfigError(f"{source}: unknown top-level keys {sorted(unknown)}; use 'tasks' and 'rewards'")
        tasks = tuple(_task_spec(n, v, source) for n, v in _mapping(data, "tasks", source).items())
        rewards = tuple(_composite_spec(n, v, source) for n, v in _mapping(data, "rewards", source).items())
        return cls(tasks=tasks, rewards=rewards)


@dataclass(frozen=True)
class TaskEndpoints:
    """Where the tasks that call another service find it, when their options name no ``endpoint``.

    A deployment's setting, not a task's: flags of ``reward-service serve`` (``--sandbox-endpoint``,
    ``--rm-endpoint``, ``--prm-endpoint``), each defaulting to ``REWARD_SERVICE_<FIELD>`` for
    containers. The registry passes a task the field its class names in ``Task.endpoint_field``;
    ``options: {endpoint: ...}`` in the rewards config wins (``""``: none). Picklable: sent to
    every worker with the rewards config.
    """

    sandbox_endpoint: str = field(default="", metadata={
        "help": "host:port of a SandboxService for the code task (empty: a sandbox in this server)"})
    rm_endpoint: str = field(default="", metadata={
        "help": "host:port of `reward-service serve-rm` for the rm task"})
    prm_endpoint: str = field(default="", metadata={
        "help": "host:port of `reward-service serve-rm` with a process reward model, for the prm task"})


def _mapping(data: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, Mapping):
        raise RewardsConfigError(f"{source}: '{key}' must be a mapping of name -> settings")
    return value


def _task_spec(name: str, value: Any, source: str) -> TaskSpec:
    value = value or {}
    if not isinstance(value, Mapping) or set(value) - {"task", "options", "description"}:
        raise RewardsConfigError(
            f"{source}: tasks.{name} must be a mapping with optional 'task', 'options', 'description'"
        )
    options = value.get("options") or {}
    if not isinstance(options, Mapping):
        raise RewardsConfigError(f"{source}: tasks.{name}.options must be a mapping")
    return TaskSpec(name=str(name), task=str(value.get("task", name)), options=dict(options),
                    description=str(value.get("description", "")))


def _composite_spec(name: str, value: Any, source: str) -> CompositeSpec:
    if not isinstance(value, Mapping) or not isinstance(value.get("components"), Mapping):
        raise RewardsConfigError(
            f"{source}: rewards.{name} needs 'components': a mapping of task name -> weight, "
            "e.g. {math: 1.0, format: 0.2}"
        )
    components: dict[str, float] = {}
    for task, weight in value["components"].items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise RewardsConfigError(f"{source}: rewards.{name}.components.{task} must be a number, got {weight!r}")
        components[str(task)] = float(weight)
    if not components:
        raise RewardsConfigError(f"{source}: rewards.{name} has no components")
    return CompositeSpec(name=str(name), components=components, description=str(value.get("description", "")))
