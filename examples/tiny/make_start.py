"""Make the tiny start checkpoint for GRPO/PPO: build, warm up, measure, save.

Why: RL tests and demos need a policy whose sampled success rate starts low but not at
zero, and that RL can then lift to ~0.8 within minutes on two CPU cores, with no model
hub. This builds the character-level tokenizer and a tiny Llama from a config, warms it up
with teacher-forced SFT on the procedural arithmetic task, measures it, and writes
everything the RL loop loads. Deterministic for a given seed and thread count (CPU).

The default start *knows* the task (greedy decoding is right >= 90% of the time) but
samples noisily: the warm-up uses label smoothing 0.1, so at temperature 1.0 about 1 token
in 10 is drawn from the smoothed mass and only ~20% of completions come out right. RL's
job is then to sharpen the policy, which GRPO does in a few hundred steps. Stopping an
unsmoothed warm-up early gives a similar sampled rate, but there the errors are facts the
model has not learned yet (greedy ~0.4), and RL on a CPU learns those far too slowly:

    python -m examples.tiny.make_start --out runs/tiny_start --seed 0
    python -m examples.tiny.make_start --out runs/tiny_hard --seed 0 --label-smoothing 0 --steps 300

DIR then holds the model and tokenizer (``save_pretrained``; load them with
``AutoModelForCausalLM`` / ``AutoTokenizer``), ``warmup.json`` (the resolved config, the
warm-up loss and time, and the measured success rates) and two RL datasets in the
trainer's format, ``rl_train.jsonl`` and ``rl_eval.jsonl`` (lines ``{"id", "prompt",
"reference": {"answer"}, "task": "gsm8k"}``), drawn with seeds of their own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from examples.tiny.arithmetic_task import TaskConfig, make_problems, write_jsonl
from examples.tiny.model import SIZES, build_tiny_lm
from examples.tiny.tokenizer import build_tokenizer
from examples.tiny.warmup import render_prompt, success_rate, warmup

logger = logging.getLogger(__name__)

WARMUP_FILE = "warmup.json"
RL_TRAIN_FILE = "rl_train.jsonl"
RL_EVAL_FILE = "rl_eval.jsonl"
# Each use of problems gets its own seed, derived from the run seed: warm-up data, the
# success-rate measurement and the RL datasets never share a draw.
_SPLIT_OFFSETS = {"warmup": 1, "measure": 2, "rl_train": 3, "rl_eval": 4}


def split_seed(seed: int, split: str) -> int:
    """The problem seed of one split (``warmup``, ``measure``, ``rl_train``, ``rl_eval``)."""
    return 10_000 * seed + 1_000 + _SPLIT_OFFSETS[split]


@dataclass(frozen=True)
class StartConfig:
    out: str = field(metadata={"help": "output directory (created; existing files are overwritten)"})
    seed: int = field(default=0, metadata={"help": "seeds the weights, the problems and the batch order"})
    size: str = field(default="nano", metadata={"help": f"model size preset: {', '.join(SIZES)}"})
    steps: int = field(default=600, metadata={"help": "warm-up steps (enough to learn the task: greedy >= 0.9)"})
    lr: float = field(default=5e-3, metadata={"help": "peak AdamW learning rate (warm-in, cosine to 10%%)"})
    label_smoothing: float = field(default=0.1, metadata={
        "help": "warm-up label smoothing: keeps ~10%% of each token's mass spread over the vocabulary, so "
                "sampling at T=1 succeeds ~20%% of the time although greedy decoding is right >= 90%%"})
    batch_size: int = field(default=32, metadata={"help": "warm-up sequences per step"})
    warmup_problems: int = field(default=4000, metadata={"help": "size of the warm-up problem pool"})
    measure_problems: int = field(default=512, metadata={"help": "problems sampled to measure the success rate"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of the measurement"})
    max_new_tokens: int = field(default=32, metadata={"help": "generation limit (measurement and saved config)"})
    rl_train: int = field(default=2048, metadata={"help": "problems in rl_train.jsonl (0: none)"})
    rl_eval: int = field(default=256, metadata={"help": "problems in rl_eval.jsonl (0: none)"})
    threads: int = field(default=1, metadata={
        "help": "torch CPU threads (0: torch's default); 1 is fastest "
                "for this model on a shared machine and keeps runs reproducible"})

    def __post_init__(self) -> None:
        if self.size not in SIZES:
            raise ValueError(f"--size must be one of {sorted(SIZES)}, got {self.size!r}")
        if self.steps < 0 or self.batch_size < 1 or self.warmup_problems < 1 or self.measure_problems < 1:
            raise ValueError("--steps must be >= 0; --batch-size, --warmup-problems, --measure-problems >= 1")
        if self.temperature < 0 or self.max_new_tokens < 1 or self.threads < 0:
            raise ValueError("--temperature must be >= 0, --max-new-tokens >= 1, --threads >= 0")


def make_start(config: StartConfig, task: TaskConfig = TaskConfig()) -> dict:
    """Builds, warms up, measures and saves the start checkpoint; returns the warmup.json record."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    model = build_tiny_lm(tokenizer, config.size, seed=config.seed)
    model.generation_config.max_new_tokens = config.max_new_tokens
    started = time.perf_counter()
    stats = warmup(model, tokenizer, make_problems(config.warmup_problems, split_seed(config.seed, "warmup"), task),
                   steps=config.steps, lr=config.lr, seed=config.seed, batch_size=config.batch_size,
                   label_smoothing=config.label_smoothing)
    logger.info("warm-up: %d steps in %.1fs, final loss %.3f", stats.steps, stats.seconds, stats.final_loss)
    measure = make_problems(config.measure_problems, split_seed(config.seed, "measure"), task)
    rate = success_rate(model, tokenizer, measure, temperature=config.temperature,
                        max_new_tokens=config.max_new_tokens, seed=config.seed)
    greedy = success_rate(model, tokenizer, measure, temperature=0.0, max_new_tokens=config.max_new_tokens)
    logger.info("success rate: %.3f at T=%g, %.3f greedy (%d problems)", rate, config.temperature, greedy, len(measure))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    for name, split, n in ((RL_TRAIN_FILE, "rl_train", config.rl_train), (RL_EVAL_FILE, "rl_eval", config.rl_eval)):
        if n:
            write_jsonl(out / name, make_problems(n, split_seed(config.seed, split), task), id_prefix=split)
    record = {
        "config": dataclasses.asdict(config),
        "task": dataclasses.asdict(task),
        "parameters": sum(p.numel() for p in model.parameters()),
        "steps": stats.steps,
        "final_loss": round(stats.final_loss, 5),
        "loss_every_25_steps": [round(x, 4) for x in stats.losses[::25]],
        "warmup_seconds": round(stats.seconds, 2),
        "total_seconds": round(time.perf_counter() - started, 2),
        "temperature": config.temperature,
        "success_rate": rate,
        "greedy_success_rate": greedy,
        "measured_on": len(measure),
        "prompt_example": render_prompt(tokenizer, measure[0].prompt),
    }
    (out / WARMUP_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def parse_args(argv: Sequence[str] | None = None) -> StartConfig:
    parser = argparse.ArgumentParser(prog="python -m examples.tiny.make_start", description=__doc__.split("\n\n")[0])
    for f in dataclasses.fields(StartConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.default is dataclasses.MISSING:
            parser.add_argument(flag, dest=f.name, required=True, help=f.metadata["help"])
        else:
            parser.add_argument(flag, dest=f.name, type=type(f.default), default=f.default,
                                help=f.metadata["help"] + " (default: %(default)s)")
    return StartConfig(**vars(parser.parse_args(argv)))


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(processName)s %(name)s %(levelname)s %(message)s")
    try:
        config = parse_args(argv)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    logger.info("config: %s", config)
    if config.threads:
        torch.set_num_threads(config.threads)
    record = make_start(config)
    print(json.dumps({k: record[k] for k in ("steps", "final_loss", "warmup_seconds", "total_seconds",
                                             "success_rate", "greedy_success_rate")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
