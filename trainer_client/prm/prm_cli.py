"""The ``make-steps`` and ``train-prm`` subcommands of ``trainer-client`` (``python -m trainer_client.prm``).

``trainer_client/cli.py`` calls :func:`register_prm_commands` after registering its own
subcommands. The registry and the helpers come from ``trainer_client/subcommands.py``, so this
module never imports ``cli`` (no cycle).
"""

from __future__ import annotations

import argparse
import json
import os

from trainer_client.subcommands import CliError, Runner, add_config_flags, config_from_args, subcommand


def register_prm_commands() -> None:
    """Register ``make-steps`` and ``train-prm`` in the ``trainer-client`` subcommand registry."""

    @subcommand("make-steps", "write a synthetic stepwise (process) supervision set: DIR/train.jsonl, DIR/test.jsonl")
    def _make_steps(parser: argparse.ArgumentParser) -> Runner:
        from trainer_client.prm.step_problems import (
            AFTER_ERROR_POLICIES,
            CORRUPTIONS,
            DEFAULT_CORRUPT_PROB,
        )

        parser.add_argument("--out-dir", required=True, help="directory for train.jsonl and test.jsonl")
        parser.add_argument("--n-train", type=int, default=3000, help="training problems (default: 3000)")
        parser.add_argument("--n-test", type=int, default=600,
                            help="test problems: other names, items and number ranges (default: 600)")
        parser.add_argument("--seed", type=int, default=0, help="generator seed (default: 0)")
        parser.add_argument("--after-error", choices=AFTER_ERROR_POLICIES, default="local",
                            help="labels after a wrong step: 'local' (own correctness) or 'first_error' "
                                 "(all false) (default: local)")
        parser.add_argument("--kinds", default=",".join(CORRUPTIONS),
                            help=f"comma-separated corruption kinds (default: {','.join(CORRUPTIONS)})")
        parser.add_argument("--corrupt-prob", type=float, default=DEFAULT_CORRUPT_PROB,
                            help=f"chance that each step is corrupted (default: {DEFAULT_CORRUPT_PROB})")

        def run(args: argparse.Namespace) -> int:
            from trainer_client.prm.step_problems import write_splits

            try:
                paths = write_splits(args.out_dir, args.n_train, args.n_test, args.seed, args.after_error,
                                     tuple(k for k in args.kinds.split(",") if k), args.corrupt_prob)
            except ValueError as exc:
                raise CliError(str(exc)) from exc
            print(f"wrote {args.n_train} problems to {paths['train']} and {args.n_test} to {paths['test']}")
            return 0
        return run

    @subcommand("train-prm", "train a process reward model (token classifier, a label at each step separator)")
    def _train_prm(parser: argparse.ArgumentParser) -> Runner:
        from trainer_client.prm.prm_config import PRMTrainConfig

        add_config_flags(parser, PRMTrainConfig)

        def run(args: argparse.Namespace) -> int:
            from trainer_client.prm.prm_train import train_prm
            from trainer_client.prm.step_data import StepDataError

            config = config_from_args(PRMTrainConfig, args)
            for path in (config.data, config.eval_data):
                if path is not None and not os.path.isfile(path):
                    raise CliError(f"{path}: no such file")
            try:
                result = train_prm(config)
            except (StepDataError, ValueError) as exc:
                raise CliError(str(exc)) from exc
            keys = ("train_loss", "eval_step_accuracy", "eval_majority_baseline", "eval_f1_wrong", "wall_time_s")
            print(json.dumps({k: result.metrics[k] for k in keys if k in result.metrics}))
            print(f"saved to {result.out_dir} ({result.wall_time_s:.1f} s)")
            return 0
        return run
