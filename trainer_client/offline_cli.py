"""The ``sft`` and ``dpo`` subcommands of ``trainer-client``: training on fixed data, no reward service.

``trainer_client/cli.py`` calls :func:`register_offline_commands`. Flags come from the config
dataclasses (``SFTConfig``, ``DPOConfig``), through the registry's helpers, so this module never
imports ``cli`` (no cycle). ``--config FILE.yaml`` gives any of the same options as a mapping of
field names (``out_dir``, ``loss_type``, ...); a flag on the command line wins over the file.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import typing
from typing import Any

from trainer_client.errors import USER_ERRORS
from trainer_client.subcommands import CliError, Runner, add_config_flags, subcommand

_UNSET = object()  # a flag the command line did not give


def add_flags_and_config_file(parser: argparse.ArgumentParser, config_cls: type) -> None:
    """``config_cls``'s flags (help and defaults as usual) plus ``--config FILE.yaml`` holding any of them."""
    parser.add_argument("--config", dest="config_file", metavar="FILE.yaml",
                        help="YAML mapping of these options by field name (out_dir, loss_type, ...); flags win")
    known = {a.dest for a in parser._actions}
    add_config_flags(parser, config_cls)
    for action in parser._actions:
        if action.dest not in known:  # one of the config's flags: unset unless given (required checked later)
            action.default, action.required = _UNSET, False


def config_from_flags_and_file(config_cls: type, args: argparse.Namespace) -> Any:
    """The config from the YAML file (if any) overlaid with the flags given; errors as :class:`CliError`."""
    from reward_core.config_flags import dataclass_values

    values: dict[str, Any] = {}
    if args.config_file:
        import yaml

        try:
            with open(args.config_file, encoding="utf-8") as handle:
                loaded = yaml.safe_load(handle) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise CliError(f"{args.config_file}: {exc}") from exc
        names = {f.name for f in dataclasses.fields(config_cls)}
        if not isinstance(loaded, dict) or set(loaded) - names:
            extra = sorted(set(loaded) - names) if isinstance(loaded, dict) else "not a mapping"
            raise CliError(f"{args.config_file}: unknown option(s) {extra}; the options are {sorted(names)}")
        hints = typing.get_type_hints(config_cls)
        for name, value in loaded.items():  # YAML 1.1 reads 1e-3 as a string
            if float in typing.get_args(hints[name]) + (hints[name],) and isinstance(value, (str, int)) \
                    and not isinstance(value, bool):
                try:
                    value = float(value)
                except ValueError as exc:
                    raise CliError(f"{args.config_file}: {name} must be a number, got {value!r}") from exc
            values[name] = value
    values.update({k: v for k, v in dataclass_values(args, config_cls).items() if v is not _UNSET})
    missing = [f.name for f in dataclasses.fields(config_cls) if f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING and f.name not in values]
    if missing:
        flags = ", ".join("--" + f.metadata.get("flag", f.name).replace("_", "-")
                          for f in dataclasses.fields(config_cls) if f.name in missing)
        raise CliError(f"{flags} required (on the command line or in --config)")
    try:
        return config_cls(**values)
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from exc


def _check_files(*paths: str | None) -> None:
    for path in paths:
        if path is not None and not os.path.isfile(path):
            raise CliError(f"{path}: no such file")


def register_offline_commands() -> None:
    """Register ``sft`` and ``dpo`` in the ``trainer-client`` subcommand registry."""

    @subcommand("sft", "supervised fine-tuning of a causal LM on prompt/completion or chat JSONL "
                       "(loss on completion tokens only)")
    def _sft(parser: argparse.ArgumentParser) -> Runner:
        from trainer_client.sft.sft_config import SFTConfig

        add_flags_and_config_file(parser, SFTConfig)

        def run(args: argparse.Namespace) -> int:
            from trainer_client.sft.chat_data import SFTDataError
            from trainer_client.sft.sft_train import train_sft

            config = config_from_flags_and_file(SFTConfig, args)
            _check_files(config.data, config.eval_data)
            try:
                result = train_sft(config)
            except (SFTDataError, *USER_ERRORS) as exc:
                raise CliError(str(exc)) from exc
            keys = ("steps", "train_loss", "eval_loss", "eval_token_accuracy", "wall_time_s")
            print(json.dumps({k: result.metrics[k] for k in keys if k in result.metrics}))
            print(f"saved to {result.out_dir} ({result.wall_time_s:.1f} s)")
            return 0
        return run

    @subcommand("dpo", "direct preference optimization of a causal LM on preference pairs "
                       "({prompt, chosen, rejected} JSONL) against a frozen reference")
    def _dpo(parser: argparse.ArgumentParser) -> Runner:
        from trainer_client.dpo.dpo_config import DPOConfig

        add_flags_and_config_file(parser, DPOConfig)

        def run(args: argparse.Namespace) -> int:
            from trainer_client.dpo.dpo_train import train_dpo
            from trainer_client.rm.preference_data import PreferenceDataError
            from trainer_client.sft.chat_data import SFTDataError

            config = config_from_flags_and_file(DPOConfig, args)
            _check_files(config.data, config.eval_data)
            try:
                result = train_dpo(config)
            except (PreferenceDataError, SFTDataError, *USER_ERRORS) as exc:
                raise CliError(str(exc)) from exc
            keys = ("steps", "train_loss", "eval_reward_accuracy", "eval_reward_margin", "wall_time_s")
            print(json.dumps({k: result.metrics[k] for k in keys if k in result.metrics}))
            print(f"saved to {result.out_dir} ({result.wall_time_s:.1f} s)")
            return 0
        return run
