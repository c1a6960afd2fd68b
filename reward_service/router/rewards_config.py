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
    judges:                     # LLM judge endpoints (reward_service.judges.JudgeEndpoint's fields)
      small:
        base_url: http://localhost:8000/v1
        model: qwen2.5-7b-instruct
        max_concurrency: 16
        requests_per_minute: 600
        cache: sqlite:/var/cache/reward/verdicts.db

A judge task's ``judge: small`` option names one of the ``judges`` (replaced by its settings when
the file is read, so the task's version covers them); ``judge: {base_url: ..., model: ...}``
gives one inline.

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

from reward_service.judges.calls import JudgeEndpoint


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
    #: LLM judge endpoints by name (``judges:``); tasks' ``judge: <name>`` options already resolved.
    judges: tuple[JudgeEndpoint, ...] = ()

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
        unknown = set(data) - {"tasks", "rewards", "judges"}
        if unknown:
            raise RewardsConfigError(f"{source}: unknown top-level keys {sorted(unknown)}; use 'tasks', 'rewards' "
                                     "and 'judges'")
        judges = {str(n): _judge(n, v, source) for n, v in _mapping(data, "judges", source).items()}
        tasks = tuple(_with_judge(_task_spec(n, v, source), judges, source)
                      for n, v in _mapping(data, "tasks", source).items())
        rewards = tuple(_composite_spec(n, v, source) for n, v in _mapping(data, "rewards", source).items())
        return cls(tasks=tasks, rewards=rewards, judges=tuple(judges.values()))


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


def _judge(name: str, value: Any, source: str) -> JudgeEndpoint:
    try:
        return JudgeEndpoint.from_options(value or {}, name=str(name))
    except (ValueError, TypeError) as exc:
        raise RewardsConfigError(f"{source}: judges.{name}: {exc}") from None


def _with_judge(spec: TaskSpec, judges: Mapping[str, JudgeEndpoint], source: str) -> TaskSpec:
    """``spec`` with a ``judge: <name>`` option replaced by that judge's settings."""
    judge = spec.options.get("judge")
    if not isinstance(judge, str):
        return spec
    if judge not in judges:
        raise RewardsConfigError(f"{source}: tasks.{spec.name}.options.judge names {judge!r}, which is not under "
                                 f"'judges:' (known: {sorted(judges) or 'none'})")
    return TaskSpec(spec.name, spec.task, {**spec.options, "judge": judges[judge].to_options()}, spec.description)


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
