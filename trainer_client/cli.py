"""``trainer-client`` / ``python -m trainer_client``: RL training, reward-model training and their data.

    trainer-client make-prefs --out-dir data/prefs --n-train 4000 --n-test 1000 --seed 0
    trainer-client train-rm --data data/prefs/train.jsonl --eval-data data/prefs/test.jsonl --out runs/rm
    trainer-client grpo --config configs/demo_grpo.yaml --run-dir runs/grpo_demo [--set grpo.beta=0.04 ...]
    trainer-client ppo --config configs/demo_ppo.yaml --run-dir runs/ppo_demo [--set ppo.kl_coef=0.05 ...]
    trainer-client train --config configs/demo_grpo.yaml --set algorithm=dr_grpo   # the trainer the algorithm needs
    trainer-client plot runs/grpo_demo
    trainer-client make-steps --out-dir data/steps --seed 0                # stepwise PRM data (TRL's format)
    trainer-client train-prm --data data/steps/train.jsonl --eval-data data/steps/test.jsonl --out runs/prm
    trainer-client sft --model runs/tiny_start --data data/sft/train.jsonl --out runs/sft   # completion-only SFT
    trainer-client dpo --model runs/sft --data data/prefs/train.jsonl --out runs/dpo        # DPO on preference pairs
    trainer-client eval --model runs/grpo_demo/checkpoints/step-000100 --data data/rl_eval.jsonl --n 8 --k 1 8 \
        --temperature 0.8 --out runs/eval                    # accuracy, pass@k, maj@k per task

Subcommands live in a registry (``trainer_client/subcommands.py``): a new one is a function decorated
with ``@subcommand(name, help)`` that adds its flags and returns the function that runs it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import os
import signal
import sys
import typing
from collections.abc import Callable, Sequence

from reward_core.extras import MissingExtra, require_extra
from trainer_client.errors import USER_ERRORS
from trainer_client.evaluation.eval_cli import register_eval_command
from trainer_client.offline_cli import register_offline_commands
from trainer_client.prm.prm_cli import register_prm_commands
from trainer_client.subcommands import (
    SUBCOMMANDS,
    CliError,
    Runner,
    add_config_flags,
    config_from_args,
    subcommand,
)

__all__ = ["SUBCOMMANDS", "CliError", "build_parser", "main", "subcommand"]

logger = logging.getLogger(__name__)
LOG_FORMAT = "%(asctime)s %(processName)s %(levelname)s %(name)s: %(message)s"


@subcommand("make-prefs", "write a synthetic math preference set: DIR/train.jsonl and DIR/test.jsonl")
def _make_prefs(parser: argparse.ArgumentParser) -> Runner:
    parser.add_argument("--out-dir", required=True, help="directory for train.jsonl and test.jsonl")
    parser.add_argument("--n-train", type=int, default=4000, help="training pairs (default: 4000)")
    parser.add_argument("--n-test", type=int, default=1000,
                        help="test pairs, from held-out templates and numbers (default: 1000)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default: 0)")

    def run(args: argparse.Namespace) -> int:
        from trainer_client.rm.preference_data import write_splits

        try:
            paths = write_splits(args.out_dir, args.n_train, args.n_test, args.seed)
        except ValueError as exc:
            raise CliError(str(exc)) from exc
        print(f"wrote {args.n_train} pairs to {paths['train']} and {args.n_test} pairs to {paths['test']}")
        return 0
    return run


@subcommand("train-rm", "train a Bradley-Terry reward model on preference pairs")
def _train_rm(parser: argparse.ArgumentParser) -> Runner:
    from trainer_client.rm.rm_config import RewardTrainConfig

    add_config_flags(parser, RewardTrainConfig)

    def run(args: argparse.Namespace) -> int:
        from trainer_client.rm.preference_data import PreferenceDataError
        from trainer_client.rm.rm_train import train_reward_model

        config = config_from_args(RewardTrainConfig, args)
        for path in (config.data, config.eval_data):
            if path is not None and not os.path.isfile(path):
                raise CliError(f"{path}: no such file")
        try:
            result = train_reward_model(config)
        except PreferenceDataError as exc:
            raise CliError(str(exc)) from exc
        summary = {k: result.metrics[k] for k in ("train_loss", "eval_accuracy", "eval_loss", "wall_time_s")
                   if k in result.metrics}
        print(json.dumps(summary))
        if result.eval_accuracy is not None:
            print(f"held-out pairwise accuracy: {result.eval_accuracy:.4f}")
        print(f"saved to {result.out_dir} ({result.wall_time_s:.1f} s)")
        return 0
    return run


TrainerLoader = Callable[[], tuple[Callable[[typing.Any], typing.Any], tuple[type, ...]]]


def _load_grpo():
    from trainer_client.train.grpo import train_grpo
    return train_grpo, ()


def _load_ppo():
    from trainer_client.train.ppo import train_ppo
    from trainer_client.train.value_head import CriticLayoutError
    return train_ppo, (CriticLayoutError,)


# trainer name -> (its config module, its lazy loader)
TRAINERS: dict[str, tuple[str, TrainerLoader]] = {
    "grpo": ("trainer_client.train.grpo_config", _load_grpo),
    "ppo": ("trainer_client.train.ppo_config", _load_ppo),
}


def _training_command(parser: argparse.ArgumentParser, section: str, example: str,
                      choose: Callable[[argparse.Namespace], str]) -> Runner:
    """The flags and runner that ``grpo``, ``ppo`` and ``train`` share; ``choose(args)`` names the trainer.

    The trainer is imported lazily: ``load_trainer() -> (train(config) -> summary, errors
    the CLI reports without a traceback)``.
    """
    parser.add_argument("--config", help=f"YAML config (algorithm, and sections model, data, sampling, reward, "
                                         f"{section}, optim, run)")
    parser.add_argument("--run-dir", help="run directory (overrides run.dir)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help=f"override one config value (YAML syntax), repeatable: --set {example}")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    parser.add_argument("--allow-config-change", action="store_true",
                        help="resume a run (--run-dir) although its config changed (else refused, naming the keys); "
                             "every config it ran with is kept: config.yaml, config.resume-<step>.yaml")
    parser.add_argument("--help-config", action="store_true",
                        help="list the algorithm presets and what each sets, and every config key with its help; exit")

    def run(args: argparse.Namespace) -> int:
        try:
            config_module, load_trainer = TRAINERS[choose(args)]
        except ValueError as exc:
            raise CliError(str(exc)) from exc
        config_api = importlib.import_module(config_module)
        if args.help_config:
            print(config_api.describe())
            return 0
        overrides = [*args.overrides, *(["run.allow_config_change=true"] if args.allow_config_change else [])]
        try:
            config = config_api.load_config(args.config, overrides, args.run_dir)
        except ValueError as exc:
            raise CliError(str(exc)) from exc
        if args.print_config:
            print(config_api.to_yaml(config), end="")
            return 0
        from trainer_client.preflight import preflight

        try:  # before torch loads: a wrong model path or endpoint is said in seconds
            preflight(config)
        except USER_ERRORS as exc:
            raise CliError(str(exc)) from exc
        train, errors = load_trainer()
        # SIGTERM unwinds like Ctrl-C, so the embedded reward server is stopped too.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
        try:
            summary = train(config)
        except (*USER_ERRORS, OSError, *errors) as exc:
            raise CliError(str(exc)) from exc
        print(json.dumps(dataclasses.asdict(summary)))
        return 0
    return run


@subcommand("grpo", "GRPO-family training (REINFORCE, RLOO, GRPO, Dr. GRPO, DAPO) of a causal LM against the "
                    "reward service (YAML config + overrides)")
def _grpo(parser: argparse.ArgumentParser) -> Runner:
    return _training_command(parser, "grpo", "grpo.beta=0.04", lambda args: "grpo")


@subcommand("ppo", "PPO training (critic, GAE) of a causal LM against the reward service (YAML config + overrides)")
def _ppo(parser: argparse.ArgumentParser) -> Runner:
    return _training_command(parser, "ppo", "ppo.kl_coef=0.05", lambda args: "ppo")


@subcommand("train", "train with the trainer the config's `algorithm` preset needs (grpo family or ppo)")
def _train(parser: argparse.ArgumentParser) -> Runner:
    def choose(args: argparse.Namespace) -> str:
        from trainer_client.train.config import trainer_of

        return "grpo" if args.help_config and not args.config else trainer_of(args.config, args.overrides)
    return _training_command(parser, "grpo or ppo", "algorithm=dapo", choose)


@subcommand("plot", "draw reward and KL curves of a run (RUN_DIR/metrics.jsonl -> RUN_DIR/curves.png)")
def _plot(parser: argparse.ArgumentParser) -> Runner:
    parser.add_argument("run_dir", help="a run directory holding metrics.jsonl")
    parser.add_argument("--out", help="image path (default: RUN_DIR/curves.png)")
    parser.add_argument("--window", type=int, default=5, help="moving-average window in steps (default: 5)")

    def run(args: argparse.Namespace) -> int:
        from trainer_client.train.plot import PlotUnavailable, plot_run

        try:
            path = plot_run(args.run_dir, args.out, args.window)
        except (PlotUnavailable, FileNotFoundError) as exc:
            raise CliError(str(exc)) from exc
        print(f"wrote {path}")
        return 0
    return run


register_prm_commands()  # make-steps, train-prm: after this module's own, as `--help` lists them
register_offline_commands()  # sft, dpo
register_eval_command()  # eval


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trainer-client", description=__doc__.split("\n\n")[0])
    parser.add_argument("--log-level", default=os.environ.get("TRAINER_CLIENT_LOG_LEVEL", "INFO"),
                        help="logging level (default: INFO, env TRAINER_CLIENT_LOG_LEVEL)")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, setup) in SUBCOMMANDS.items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(run=setup(sub))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:  # a client-only install (no torch): name the extra, not a traceback from a subcommand's import
        require_extra("train", "trainer-client")
    except MissingExtra as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT)
    try:
        return args.run(args)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
