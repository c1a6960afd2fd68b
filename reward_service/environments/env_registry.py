"""The environment registry: name -> Environment instance, from the built-ins and entry points.

Environments are discovered through the ``reward_service.environments`` entry-point group, so an
installed package adds one without editing the server::

    # the plugin's pyproject.toml
    [project.entry-points."reward_service.environments"]
    capitals = "my_package.envs:Capitals"

The built-ins (``builtin_envs.py``) are always registered. A plugin that fails to load is skipped
and kept in ``plugin_failures`` (``strict``: raise instead), as task plugins are.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from importlib.metadata import entry_points

from reward_service.environments.builtin_envs import ArithmeticTools, ArithmeticToolsShort, MathTools
from reward_service.environments.env_api import Environment, EnvironmentLoadError

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "reward_service.environments"
BUILTIN_ENVIRONMENTS: tuple[type[Environment], ...] = (ArithmeticTools, ArithmeticToolsShort, MathTools)


class UnknownEnvironment(KeyError):
    """No environment is registered under that name."""


class EnvironmentRegistry:
    """Maps names to Environment instances."""

    def __init__(self) -> None:
        self._envs: dict[str, Environment] = {}
        #: Entry-point name -> why that plugin could not be loaded.
        self.plugin_failures: dict[str, str] = {}

    def add(self, env: Environment, name: str | None = None) -> None:
        """Registers ``env`` under ``name`` (default ``env.name``), after checking it is well formed."""
        env.check()
        self._envs[name or env.name] = env

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP, strict: bool = False) -> list[str]:
        """Registers every environment advertised in the entry-point group; returns their names."""
        names = []
        for ep in entry_points(group=group):
            current = self._envs.get(ep.name)
            try:
                cls = ep.load()
                if current is not None and type(current) is cls:
                    continue  # a built-in, listed in our own pyproject too
                if not (isinstance(cls, type) and issubclass(cls, Environment)):
                    raise EnvironmentLoadError(f"environment plugin {ep.name!r} ({ep.value}) is not an Environment")
                self.add(cls(), ep.name)
            except Exception as exc:  # noqa: BLE001 - any failure of a third-party import is that plugin's
                error = exc if isinstance(exc, EnvironmentLoadError) else EnvironmentLoadError(
                    f"environment plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}")
                if strict:
                    raise EnvironmentLoadError(f"{error}; fatal because of --strict-plugins (without it the "
                                               "server logs this, leaves it out and serves the others)") from exc
                logger.error("%s; skipped (the other environments are served)", error, exc_info=exc)
                self.plugin_failures[ep.name] = str(error)
                continue
            names.append(ep.name)
        return names

    def get(self, name: str) -> Environment:
        env = self._envs.get(name)
        if env is None:
            failed = self.plugin_failures.get(name)
            raise UnknownEnvironment(f"environment {name!r} is not available here: {failed}" if failed else
                                     f"unknown environment {name!r}; registered: {self.names()}")
        return env

    def __contains__(self, name: object) -> bool:
        return name in self._envs

    def names(self) -> list[str]:
        return sorted(self._envs)


def build_environment_registry(extra: Iterable[Environment] = (), load_entry_points: bool = True,
                               strict_plugins: bool = False) -> EnvironmentRegistry:
    """The built-ins, then the entry points' environments, then ``extra`` instances (tests, embedders)."""
    registry = EnvironmentRegistry()
    for cls in BUILTIN_ENVIRONMENTS:
        registry.add(cls())
    if load_entry_points:
        registry.load_entry_points(strict=strict_plugins)
    for env in extra:
        registry.add(env)
    return registry
