"""The optional parts of ``reward-suite`` and what a command without its part says.

``pip install reward-suite`` is the client: the core, its gRPC clients and the CLIs' light commands.
A command that needs an optional stack (the trainer: torch and transformers; the HTTP front door:
starlette and uvicorn; the reward-model server: torch and transformers) checks for it first, and
without it raises :class:`MissingExtra` naming the extra to install (the extras of
``pyproject.toml``), which the CLIs print without a traceback. The check looks modules up
(``importlib.util.find_spec``) without importing them, so it costs nothing when they are there.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

#: Each extra's modules a command cannot start without (a subset of the extra's dependencies).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers"),
    "rm": ("torch", "transformers", "safetensors"),
    "http": ("starlette", "uvicorn"),
    "wandb": ("wandb",),
}


class MissingExtra(ImportError):
    """``command`` needs the ``extra`` of reward-suite, whose ``missing`` modules are not installed."""

    def __init__(self, command: str, extra: str, missing: Sequence[str]) -> None:
        self.command, self.extra, self.missing = command, extra, tuple(missing)
        super().__init__(f"{command} needs the '{extra}' extra, which is not installed (missing: "
                         f"{', '.join(missing)}): pip install 'reward-suite[{extra}]'")


def missing_modules(names: Sequence[str]) -> list[str]:
    """Those of ``names`` that cannot be imported (not installed, or blocked in ``sys.modules``)."""
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent that fails, or a module without a spec
            found = False
        if not found:
            missing.append(name)
    return missing


def require_extra(extra: str, command: str) -> None:
    """Raises MissingExtra when a module of ``extra`` (see EXTRA_MODULES) is not installed."""
    missing = missing_modules(EXTRA_MODULES[extra])
    if missing:
        raise MissingExtra(command, extra, missing)
