"""``trainer-client eval``: a model's accuracy, pass@k, maj@k, mean reward and unscored rate on held-out prompts.

    trainer-client eval --model runs/grpo_demo/checkpoints/step-000100 --data data/rl_eval.jsonl --out runs/eval
    trainer-client eval --model runs/tiny_start --data held_out.jsonl --n 8 --k 1 4 8 --temperature 0.8 \\
        --endpoint localhost:50051

Reads the trainer's prompt JSONL; scores through a reward server started for the run
(``OUT/reward_server.log``) or ``--endpoint``; writes ``OUT/eval_summary.json`` and
``OUT/eval_samples.jsonl`` (one line per completion) and prints a table per task.
``trainer_client/cli.py`` calls :func:`register_eval_command`.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainer_client.errors import USER_ERRORS
from trainer_client.subcommands import CliError, Runner, subcommand

SUMMARY_FILE = "eval_summary.json"
SAMPLES_FILE = "eval_samples.jsonl"
NOTE = "unscored samples are not counted as wrong: they are excluded from every denominator"


def format_table(summary: Mapping[str, Mapping[str, Any]], ks: list[int]) -> str:
    """One row per task (overall first): prompts, samples, unscored rate, accuracy, reward, pass@k, maj@k."""
    heads = ["task", "prompts", "samples", "unscored", "accuracy", "reward", *[f"pass@{k}" for k in ks],
             *[f"maj@{k}" for k in ks]]
    keys = [None, "prompts", "samples", "unscored_rate", "accuracy", "reward_mean", *[f"pass@{k}" for k in ks],
            *[f"maj@{k}" for k in ks]]

    def cell(value: Any) -> str:
        return "-" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)

    rows = [[task, *[cell(m[k]) for k in keys[1:]]] for task, m in summary.items()]
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(len(heads))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [heads, *rows])


def _setup(parser: argparse.ArgumentParser) -> Runner:
    parser.add_argument("--model", required=True, help="model directory (save_pretrained layout) or cached hub id")
    parser.add_argument("--data", required=True, help="prompt JSONL, the trainer's format "
                                                      "{\"prompt\", \"reference\", \"task\"[, \"id\"]}")
    parser.add_argument("--out", default="runs/eval", help="output directory (default: runs/eval)")
    parser.add_argument("--task", help="reward task for lines without a \"task\" field")
    parser.add_argument("--n", type=int, default=1, help="completions per prompt (default: 1)")
    parser.add_argument("--k", type=int, nargs="+", default=None, metavar="K",
                        help="the k of pass@k and maj@k, each <= n (default: n)")
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="sampling temperature; 0 (default) decodes greedily and needs --n 1")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling threshold (default: 1.0)")
    parser.add_argument("--max-new-tokens", type=int, default=32, help="generation budget (default: 32)")
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per generate() call (default: 8)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
    parser.add_argument("--max-prompts", type=int, default=0, help="evaluate the first N prompts only (0: all)")
    parser.add_argument("--correct-at", type=float, default=1.0,
                        help="a scored sample counts as correct when its reward is at least this (default: 1.0)")
    parser.add_argument("--endpoint", help="host:port of a running reward service (default: start one locally)")
    parser.add_argument("--workers", type=int, default=1, help="workers of the local reward server (default: 1)")
    parser.add_argument("--rewards-config", help="rewards YAML for the local reward server")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--dtype", default="float32", help="float32 or bfloat16 (default: float32)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (default 0: torch's default)")
    parser.add_argument("--prompt-key", default="prompt",
                        help="the column holding the prompt text, e.g. question (default: prompt; a row may have a "
                             "messages list instead)")
    parser.add_argument("--reference-key", default="reference",
                        help="the column holding the reference, e.g. answer (default: reference)")
    parser.add_argument("--chat-template", choices=("auto", "true", "false"), default="auto",
                        help="render prompts with the tokenizer's chat template: auto (when it has one, the "
                             "default), true (insist) or false (raw text)")
    parser.add_argument("--no-check-tasks", dest="check_tasks", action="store_false",
                        help="skip checking the rows' tasks against the reward service before generating")
    return _run


def _run(args: argparse.Namespace) -> int:
    from trainer_client.evaluation.evaluate import EvalOptions
    from trainer_client.preflight import check_model_path
    from trainer_client.train.config import ModelConfig, RewardConfig

    if not os.path.isfile(args.data):
        raise CliError(f"{args.data}: no such file")
    try:
        check_model_path(args.model)  # before torch loads: a wrong path is said in seconds
        options = EvalOptions(n=args.n, ks=tuple(args.k or [args.n]), temperature=args.temperature,
                              top_p=args.top_p, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size,
                              seed=args.seed, correct_at=args.correct_at, chat_template=args.chat_template)
        model_config = ModelConfig(path=args.model, device=args.device, dtype=args.dtype, threads=args.threads)
        reward = RewardConfig(embedded=not args.endpoint, endpoint=args.endpoint, workers=args.workers,
                              rewards_config=args.rewards_config)
        if args.max_prompts < 0:
            raise ValueError("--max-prompts must be >= 0 (0: all)")
    except (ValueError, *USER_ERRORS) as exc:
        raise CliError(str(exc)) from exc
    try:
        result = _evaluate(args, options, model_config, reward)
    except (*USER_ERRORS, OSError) as exc:
        raise CliError(str(exc)) from exc
    out = Path(args.out)
    print(format_table(result["summary"], list(options.ks)))
    print(f"({NOTE})")
    print(f"wrote {out / SUMMARY_FILE} and {out / SAMPLES_FILE}")
    return 0


def _evaluate(args: argparse.Namespace, options: Any, model_config: Any, reward: Any) -> dict[str, Any]:
    from trainer_client.evaluation.evaluate import evaluate, options_dict
    from trainer_client.train.data_checks import check_prompts
    from trainer_client.train.models import load_policy, load_tokenizer
    from trainer_client.train.reward_overlap import open_scorer
    from trainer_client.train.rollouts import read_prompts

    rows = read_prompts(args.data, args.task, prompt_key=args.prompt_key, reference_key=args.reference_key)
    if args.max_prompts:
        rows = rows[: args.max_prompts]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if model_config.threads:
        import torch

        torch.set_num_threads(model_config.threads)
    tokenizer = load_tokenizer(args.model)
    model = load_policy(args.model, model_config, trainable=False)
    with open_scorer(reward, out) as scorer:
        if args.check_tasks:
            check_prompts(rows, scorer.list_tasks(), args.data, scorer.endpoint)
        result = evaluate(model, tokenizer, rows, scorer, options)
    summary = {"model": args.model, "data": args.data, "options": options_dict(options), "note": NOTE,
               "summary": result.summary}
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    with open(out / SAMPLES_FILE, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in result.records)
    return summary


def register_eval_command() -> None:
    """Register ``eval`` in the ``trainer-client`` subcommand registry."""
    subcommand("eval", "evaluate a model on held-out prompts through the reward service: accuracy, pass@k, "
                       "maj@k, mean reward and unscored rate per task")(_setup)
