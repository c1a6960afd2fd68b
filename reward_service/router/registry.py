"""The task registry: task name -> Task instance.

Tasks are discovered through the ``reward_service.tasks`` entry-point group,
so an installed package adds a task without editing the server::

    # the plugin's pyproject.toml
    [project.entry-points."reward_service.tasks"]
    word_count = "my_package.tasks:WordCountTask"

A :class:`~reward_service.task_api.FamilyTask` in that group is a family: its entry-point name is
a prefix, and ``<prefix>:<member>`` names one member task, created on first use.

Configured variants and composite rewards (``rewards_config.py``) are added on top. A task that
calls another service gets its ``endpoint`` from the server's :class:`TaskEndpoints` when its
options name none. A task over a base task (``Task.default_base``: the shaping tasks) gets the
instance of the task its ``base`` option names, built after that one (``task_bases.py``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from reward_core.contract import TaskInfo
from reward_service.router.composite import CompositeTask
from reward_service.router.rewards_config import RewardsConfig, TaskEndpoints, TaskSpec
from reward_service.router.startup_checks import SelfCheckReport, StartupChecks, self_check_task
from reward_service.router.task_bases import order_by_base, with_base
from reward_service.router.versioning import is_cacheable, remember_config, version_of
from reward_service.task_api import FamilyTask, InvalidTaskOptions, Task

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
        self._families: dict[str, type[FamilyTask]] = {}
        self._tasks: dict[str, Task] = {}
        self._infos: dict[str, TaskInfo] = {}
        #: Entry-point name -> why that plugin could not be loaded (skipped unless strict).
        self.plugin_failures: dict[str, str] = {}

    def register_class(self, cls: type[Task], name: str | None = None) -> None:
        """Makes a Task class available under ``name`` (default ``cls.name``), instantiated with no options."""
        key = name or cls.name
        if not key:
            raise TaskLoadError(f"task class {cls.__qualname__} has no name")
        self._classes[key] = cls
        if cls.default_base and cls.default_base not in self:
            return  # built once its base is registered (``_add_over_base``)
        self.add(key, _instantiate(cls, key, self._with_base(cls, key, {}), self.endpoints))

    def register_family(self, cls: type[FamilyTask], prefix: str) -> None:
        """Serves ``<prefix>:<member>`` for every member of ``cls``, each created on first use."""
        if not prefix or ":" in prefix:
            raise TaskLoadError(f"task family {cls.__qualname__}: prefix {prefix!r} must be non-empty, without ':'")
        self._families[prefix] = cls

    def _family_member(self, name: str) -> tuple[type[FamilyTask], str] | None:
        """The family and member a ``prefix:member`` name stands for (None if it stands for none)."""
        prefix, sep, member = name.partition(":")
        family = self._families.get(prefix) if sep else None
        return (family, member) if family is not None and member in family.members() else None

    def add(self, name: str, task: Task, info: TaskInfo | None = None) -> None:
        """Registers a task instance under ``name`` (replacing any previous one)."""
        self._tasks[name] = task
        self._infos[name] = info or task.info(name)

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP, strict: bool = False) -> list[str]:
        """Registers every task advertised in the entry-point group; returns their names.

        A plugin that fails to import, is not a Task, or cannot be built is skipped: logged with
        its traceback and kept in ``plugin_failures`` (a call naming its task is told why it is
        missing), so one broken package cannot stop a server. ``strict``: raise TaskLoadError instead.
        """
        names = []
        for ep in entry_points(group=group):
            try:
                self._load_entry_point(ep)
            except Exception as exc:  # noqa: BLE001 - any failure of a third-party import is that plugin's
                error = exc if isinstance(exc, TaskLoadError) else \
                    TaskLoadError(f"task plugin {ep.name!r} ({ep.value}) failed to import: "
                                  f"{type(exc).__name__}: {exc}")
                if strict:
                    raise TaskLoadError(f"{error}; fatal because of --strict-plugins (without it the server "
                                        "logs this, leaves the task out and serves the others)") from exc
                logger.error("%s; skipped (the server serves the other tasks; --strict-plugins refuses to start)",
                             error, exc_info=exc)
                self.plugin_failures[ep.name] = str(error)
                continue
            names.append(ep.name)
        return names

    def _load_entry_point(self, ep: EntryPoint) -> None:
        cls = ep.load()
        if not (isinstance(cls, type) and issubclass(cls, Task)):
            raise TaskLoadError(f"task plugin {ep.name!r} ({ep.value}) is not a Task subclass")
        if issubclass(cls, FamilyTask):
            self.register_family(cls, ep.name)
        else:
            self.register_class(cls, ep.name)

    def apply_config(self, config: RewardsConfig) -> None:
        """Adds configured task variants, then composite rewards (which may use the variants)."""
        over_base: list[tuple[TaskSpec, type[Task]]] = []
        for spec in config.tasks:
            found = self._family_member(spec.task)
            if found is not None:
                family, member = found
                task = _instantiate(family, spec.name, spec.options, self.endpoints, member)
                self.add(spec.name, task, _described(task.info(spec.name), spec.description))
                continue
            cls = self._classes.get(spec.task) or _import_task_class(spec.task, spec.name)
            if cls is None:
                raise TaskLoadError(f"tasks.{spec.name}: no registered task {spec.task!r} (and not a "
                                    f"'module:Class' path); known: {self.summary()}")
            if cls.default_base:
                over_base.append((spec, cls))
                continue
            task = _instantiate(cls, spec.name, spec.options, self.endpoints)
            self.add(spec.name, task, _described(task.info(spec.name), spec.description))
        self._add_over_base(over_base, {spec.name for spec in config.tasks})
        for spec in config.rewards:
            missing = [c for c in spec.components if c not in self]
            if missing:
                raise TaskLoadError(f"rewards.{spec.name}: unknown component task(s) {missing}; "
                                    f"known: {self.summary()}")
            composite = CompositeTask(spec.name, {c: (self.get(c), w) for c, w in spec.components.items()},
                                      spec.description)
            self.add(spec.name, composite, composite.info(spec.name))

    def _with_base(self, cls: type[Task], name: str, options: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            return with_base(cls, name, options, lambda base: self.get(base) if base in self else None)
        except InvalidTaskOptions as exc:
            raise TaskLoadError(f"tasks.{name}: {exc}") from None

    def _add_over_base(self, specs: list[tuple[TaskSpec, type[Task]]], configured: set[str]) -> None:
        """Builds the tasks over a base task (``Task.default_base``), each after its base: ``specs`` and the
        default instance of every such class not ``configured`` (rebuilt, so a reconfigured base reaches it)."""
        defaults = [(TaskSpec(n, n), c) for n, c in self._classes.items() if c.default_base and n not in configured]
        try:
            ordered = order_by_base(specs + defaults)
        except InvalidTaskOptions as exc:
            raise TaskLoadError(str(exc)) from None
        for spec, cls in ordered:
            task = _instantiate(cls, spec.name, self._with_base(cls, spec.name, spec.options), self.endpoints)
            self.add(spec.name, task, _described(task.info(spec.name), spec.description))

    def get(self, name: str) -> Task:
        task = self._tasks.get(name)
        if task is not None:
            return task
        found = self._family_member(name)
        if found is None:
            raise UnknownTask(self.unknown_message(name))
        family, member = found
        task = _instantiate(family, name, {}, self.endpoints, member)
        self.add(name, task)
        return task

    def unknown_message(self, name: str) -> str:
        """Why ``name`` is not served: its plugin failed to load (and why), or no task has that name."""
        failed = self.plugin_failures.get(name) or self.plugin_failures.get(name.partition(":")[0])
        if failed:
            return f"task {name!r} is not available on this server: {failed}"
        return f"unknown task {name!r}; registered: {self.summary()}"

    def __contains__(self, name: object) -> bool:
        return name in self._tasks or (isinstance(name, str) and self._family_member(name) is not None)

    def names(self) -> list[str]:
        """Every task name: the registered ones and each member of each family."""
        members = {f"{prefix}:{m}" for prefix, family in self._families.items() for m in family.members()}
        return sorted(set(self._tasks) | members)

    def summary(self) -> str:
        """The names for a message: registered tasks, and each family as ``prefix:<member>`` with its count."""
        own = [n for n in sorted(self._tasks) if self._family_member(n) is None]
        families = [f"{p}:<member> ({len(f.members())} members: "
                    + ", ".join([f"{p}:{m}" for m in f.members()[:3]] + ["..."]) + ")"
                    for p, f in sorted(self._families.items())]
        return ", ".join(own + families)

    def infos(self) -> list[TaskInfo]:
        """Every task's info, with its verifier version hash."""
        return [dataclasses.replace(self._infos[n] if n in self._infos else self.get(n).info(n),
                                    verifier_version=self.version(n)) for n in self.names()]

    def version(self, name: str) -> str:
        """The verifier version hash of task ``name`` (``reward_service.router.versioning``)."""
        return version_of(self.get(name))

    def cacheable(self, name: str) -> bool:
        """Whether the outcomes of task ``name`` may be cached (``Task.cacheable``, of its parts too)."""
        return is_cacheable(self.get(name))

    def self_check(self) -> dict[str, list[str]]:
        """Runs every task's ``self_check()``; returns the failures of the tasks that have some.

        A self-check that raises is itself a failure (reported, not propagated). A family is
        checked through its first member (its members share one class) and the members in use.
        """
        failures = {name: self_check_task(name, self.get(name)) for name in self.checked_names()}
        return {name: lines for name, lines in failures.items() if lines}

    def checked_names(self) -> list[str]:
        """The tasks checked at start-up: every registered one, and each family's first member."""
        firsts = [f"{p}:{f.members()[0]}" for p, f in self._families.items() if f.members()]
        return sorted(set(self._tasks) | set(firsts))


def log_self_check(registry: TaskRegistry, canaries: bool = True) -> SelfCheckReport:
    """Runs the registry's self-checks, then (``canaries``) its canaries, in the calling thread, and logs
    each failing task and each canary a task rewarded (a server runs them in the background:
    ``start_checks``)."""
    report = SelfCheckReport({})
    StartupChecks(registry.checked_names(), registry.get, report, canaries).run()
    return report


def start_checks(registry: TaskRegistry, report: SelfCheckReport) -> StartupChecks:
    """Starts the registry's self-checks and canaries in the background; they fill ``report``. Every
    task's version hash is computed first, so the first ListTasks does not hash every task itself."""
    return StartupChecks(registry.checked_names(), registry.get, report, warm=registry.infos).start()


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


def _described(info: TaskInfo, description: str) -> TaskInfo:
    """``info`` with the config's own description, when it gives one."""
    return TaskInfo(**{**info.__dict__, "description": description}) if description else info


def _instantiate(cls: type[Task], name: str, options: Mapping[str, Any], endpoints: TaskEndpoints,
                 member: str | None = None) -> Task:
    """``cls(**options)``, or ``cls(member, **options)`` for a family's member."""
    try:
        options = _with_endpoint(cls, name, options, endpoints)
        task = cls(**options) if member is None else cls(member, **options)  # type: ignore[call-arg]
        remember_config(task, options, member)  # for its verifier version
        return task
    except (TypeError, InvalidTaskOptions) as exc:
        raise TaskLoadError(f"task {name!r}: bad options {dict(options)}: {exc}") from exc


def build_registry(config: RewardsConfig, extra: Iterable[type[Task]] = (),
                   endpoints: TaskEndpoints | None = None, strict_plugins: bool = False) -> TaskRegistry:
    """The registry a server (and each of its workers) uses: plugins + extra classes + config."""
    registry = TaskRegistry(endpoints)
    if config.load_entry_points:
        registry.load_entry_points(strict=strict_plugins)
    for cls in extra:
        registry.register_class(cls)
    registry.apply_config(config)
    logger.debug("registered tasks: %s", registry.names())
    return registry
