"""``create_executor`` / ``create_remote_executor``: the way front ends get an
:class:`~reward_core.sandbox_contract.Executor`.

    from sandbox import create_executor, create_remote_executor
    with create_executor("process", concurrency=2) as ex:      # bubblewrap, the default
        result = ex.execute(request)
    ex = create_remote_executor("sandbox-host:50053", call_timeout_s=300)   # a SandboxService

Backends are imported lazily, so importing this module needs neither
bubblewrap nor the Docker SDK. ``languages`` is a mapping of name ->
:class:`~sandbox.languages.Language`, a path to a YAML file of extra languages
(see sandbox/languages.py), or None for the built-ins. Other keyword options
go to the backend (process: :class:`sandbox.process_backend.ProcessSandboxConfig`
fields). Raises :class:`~reward_core.sandbox_contract.SandboxUnavailable` when the backend
cannot run on this host.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reward_core.sandbox_contract import Executor
from sandbox.languages import Language, load_languages

BACKENDS = ("process", "docker")


def _languages(languages: Mapping[str, Language] | str | Path | None) -> Mapping[str, Language] | None:
    if languages is None or isinstance(languages, Mapping):
        return languages
    return load_languages(languages)


def create_executor(backend: str = "process", concurrency: int = 2,
                    languages: Mapping[str, Language] | str | Path | None = None, **options: Any) -> Executor:
    """A started executor with ``concurrency`` slots. Close it (or use it as a context manager)."""
    langs = _languages(languages)
    if backend == "process":
        from sandbox.process_backend import ProcessExecutor

        return ProcessExecutor(concurrency=concurrency, languages=langs, **options)
    if backend == "docker":
        from sandbox.docker_backend import DockerExecutor

        return DockerExecutor(concurrency=concurrency, languages=langs, **options)
    raise ValueError(f"unknown sandbox backend {backend!r}; choose one of {BACKENDS}")


def create_remote_executor(endpoint: str, **options: Any) -> Executor:
    """An executor on the SandboxService at ``endpoint`` (``python -m sandbox serve``), over the core's
    sandbox client; ``options`` are :class:`sandbox.remote_executor.RemoteExecutor`'s. Opens no
    channel until its first call (so it may be created before a fork)."""
    from sandbox.remote_executor import RemoteExecutor

    return RemoteExecutor(endpoint, **options)
