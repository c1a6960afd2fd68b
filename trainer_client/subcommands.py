"""The ``trainer-client`` subcommand registry, and what every subcommand's setup shares.

A subcommand is a function decorated with ``@subcommand(name, help)`` that adds its flags and
returns the function that runs it. ``trainer_client/cli.py`` registers its own and those of
``trainer_client/prm/prm_cli.py``, then builds the parser; both import this module, never each
other. A config dataclass becomes flags through the suite's one builder
(``reward_core/config_flags.py``): ``--field-name`` (or the field's ``metadata["flag"]``), every
bool as ``--x/--no-x``, no environment defaults.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from reward_core.config_flags import add_dataclass_flags, dataclass_values

Runner = Callable[[argparse.Namespace], int]
Setup = Callable[[argparse.ArgumentParser], Runner]
SUBCOMMANDS: dict[str, tuple[str, Setup]] = {}


class CliError(Exception):
    """A problem the user can fix; printed as ``error: ...`` with exit status 2."""


def subcommand(name: str, help: str) -> Callable[[Setup], Setup]:
    """Register ``setup(parser) -> run(args) -> int`` as subcommand ``name``."""
    def register(setup: Setup) -> Setup:
        if name in SUBCOMMANDS:
            raise ValueError(f"subcommand {name!r} is registered twice")
        SUBCOMMANDS[name] = (help, setup)
        return setup
    return register


def add_config_flags(parser: argparse.ArgumentParser, config_cls: type) -> None:
    """One flag per field of a config dataclass, with its help text and default (no environment defaults)."""
    add_dataclass_flags(parser, config_cls, None, negatable=True)


def config_from_args(config_cls: type, args: argparse.Namespace) -> Any:
    """The config the flags of :func:`add_config_flags` describe; its ValueError becomes a CliError."""
    try:
        return config_cls(**dataclass_values(args, config_cls))
    except ValueError as exc:
        raise CliError(str(exc)) from exc
