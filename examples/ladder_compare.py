"""The articles' decision table, measured: SFT, DPO, RM + PPO and GRPO from one poor start, one budget.

Why: post-training is taught as a ladder with a fork — SFT on demonstrations, then either DPO on
fixed preference pairs, a reward model with PPO, or GRPO on a verifiable reward. This runs all
four from the *same* tiny start policy (greedy held-out accuracy < 0.3), with the same budget,
and draws their held-out accuracy curves in one PNG, so the table is measured rather than recited.

    python -m examples.ladder_compare --out runs/ladder                   # ~18 min on 2 shared CPU cores
    python -m examples.ladder_compare --out runs/ladder_small --steps 4 --eval-every 2 --eval-rows 16 \\
        --prompts-per-step 8 --start-steps 120        # the integration test's size

The budget, the same for every method: ``--steps`` policy optimizer steps, each on a batch of
``--prompts-per-step`` distinct training prompts (every method sees the same ``steps x
prompts_per_step`` prompts once). What a method may use per prompt differs, as in practice:

- **SFT** trains on the gold solution of each prompt (one demonstration per prompt; no sampling).
- **DPO** trains on pairs from the start policy's own samples: ``--group-size`` completions per
  training prompt, sampled once before training and scored by the verifier (the reward
  service's ``gsm8k`` task over gRPC); a prompt with a right and a wrong completion gives one
  pair (a random right one chosen, a random wrong one rejected). Fewer pairs than prompts, so
  DPO takes extra epochs over them to reach the same number of optimizer steps.
- **RM + PPO**: our Bradley–Terry trainer fits a reward model (the start's backbone plus a score
  head) on the same pairs; ``reward-service serve-rm`` serves it and the reward service's ``rm``
  task calls it; PPO (``configs/demo_ppo.yaml``) then trains against that learned reward only.
- **GRPO** (``configs/demo_grpo.yaml``) trains against the verifier.
PPO and GRPO sample ``group_size`` completions per prompt online: as many samples as the offline
set DPO and the RM were built from. Every run evaluates the same held-out rows greedily through
the reward service with ``trainer_client.evaluation.evaluate`` (GRPO and PPO through their own
``run.eval_every``) every ``--eval-every`` steps.

OUT holds the start (``OUT/start``, reused when its settings match), the pairs, each method's
run directory, ``results.json`` and ``ladder.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from examples.ladder_report import format_table, plot_curves
from examples.ladder_rm_server import ServedRewardModel
from examples.tiny.arithmetic_task import completion_for, make_problems
from examples.tiny.make_start import RL_EVAL_FILE, RL_TRAIN_FILE, WARMUP_FILE, StartConfig, make_start, split_seed

logger = logging.getLogger("ladder_compare")

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("sft", "dpo", "rm_ppo", "grpo")
RESULTS_FILE = "results.json"
PLOT_FILE = "ladder.png"


@dataclass(frozen=True)
class LadderConfig:
    """What one comparison runs; every method gets the same start, prompts and step budget."""

    out: str = field(default="runs/ladder", metadata={"help": "output directory"})
    seed: int = field(default=0, metadata={"help": "seeds the start, the data, the samples and every trainer"})
    start_steps: int = field(default=250, metadata={
        "help": "warm-up steps of the start, no label smoothing (make_start's default, 600 smoothed steps, is "
                "right >= 0.9 greedily; 250 unsmoothed steps leave ~0.15)"})
    steps: int = field(default=100, metadata={"help": "policy optimizer steps per method"})
    prompts_per_step: int = field(default=32, metadata={"help": "distinct training prompts per step"})
    group_size: int = field(default=8, metadata={
        "help": "completions per prompt: PPO's and GRPO's online samples, and the start's offline ones"})
    eval_every: int = field(default=10, metadata={"help": "held-out evaluation every N steps (and at the end)"})
    eval_rows: int = field(default=256, metadata={"help": "held-out prompts, decoded greedily"})
    lr: float = field(default=5e-4, metadata={
        "help": "policy learning rate, every method (the demos' tuned GRPO/PPO lr)"})
    dpo_beta: float = field(default=0.1, metadata={"help": "DPO beta (TRL's default)"})
    rm_epochs: int = field(default=2, metadata={"help": "reward-model epochs over the pairs"})
    rm_lr: float = field(default=1e-3, metadata={"help": "reward-model learning rate"})
    threads: int = field(default=1, metadata={"help": "torch CPU threads of every trainer"})
    max_start_greedy: float = field(default=0.3, metadata={
        "help": "refuse a start whose greedy held-out accuracy is at least this (the comparison's premise)"})
    methods: tuple[str, ...] = field(default=METHODS, metadata={"help": f"which of {', '.join(METHODS)} to run"})

    def __post_init__(self) -> None:
        if min(self.steps, self.prompts_per_step, self.eval_every, self.eval_rows, self.rm_epochs, self.threads) < 1:
            raise ValueError("--steps, --prompts-per-step, --eval-every, --eval-rows, --rm-epochs and --threads "
                             "must be >= 1")
        if self.group_size < 2:
            raise ValueError(f"--group-size must be >= 2 (a pair needs a right and a wrong sample), got "
                             f"{self.group_size}")
        if not self.methods or set(self.methods) - set(METHODS):
            raise ValueError(f"--methods must be a non-empty subset of {METHODS}, got {self.methods}")

    @property
    def train_prompts(self) -> int:
        return self.steps * self.prompts_per_step


# ----------------------------------------------------------------------------- start and data


def build_start(config: LadderConfig) -> tuple[Path, dict[str, Any]]:
    """``OUT/start``: the tiny policy after ``start_steps`` unsmoothed warm-up steps, and its data (reused)."""
    start = Path(config.out) / "start"
    wanted = StartConfig(out=str(start), seed=config.seed, steps=config.start_steps, label_smoothing=0.0,
                         measure_problems=256, rl_train=config.train_prompts, rl_eval=config.eval_rows,
                         threads=config.threads)
    record_path = start / WARMUP_FILE
    if record_path.is_file():
        record = json.loads(record_path.read_text())
        if record["config"] == dataclasses.asdict(wanted):
            logger.info("reusing the start in %s", start)
            return start, record
    logger.info("building the start in %s (%d warm-up steps)", start, config.start_steps)
    return start, make_start(wanted)


def greedy_options(config: LadderConfig) -> Any:
    """The evaluation every method gets: greedy, one completion per held-out row (``run.eval_every``'s)."""
    from trainer_client.evaluation.evaluate import EvalOptions

    return EvalOptions(n=1, ks=(1,), temperature=0.0, max_new_tokens=32, batch_size=16, seed=config.seed)


def held_out_accuracy(model: Any, tokenizer: Any, rows: Sequence[Any], scorer: Any, config: LadderConfig,
                      tag: str) -> float:
    """Greedy accuracy on the held-out rows, scored by the reward service."""
    from trainer_client.evaluation.evaluate import evaluate
    from trainer_client.evaluation.metrics import flat_metrics

    return float(flat_metrics(evaluate(model, tokenizer, rows, scorer, greedy_options(config), tag=tag).summary)
                 ["eval/accuracy"])


def sample_pairs(model: Any, tokenizer: Any, rows: Sequence[Any], scorer: Any, config: LadderConfig,
                 tag: str) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """``group_size`` samples (T=1) of the start per row, verified; one (right, wrong) pair per mixed row."""
    from trainer_client.evaluation.evaluate import EvalOptions, evaluate

    options = EvalOptions(n=config.group_size, ks=(1,), temperature=1.0, max_new_tokens=32, batch_size=16,
                          seed=config.seed + 1)
    records = evaluate(model, tokenizer, rows, scorer, options, tag=tag).records
    rng = random.Random(config.seed)
    pairs, right_total, all_right, all_wrong = [], 0, 0, 0
    for i, row in enumerate(rows):
        group = records[i * config.group_size: (i + 1) * config.group_size]
        right = [r["completion"] for r in group if r["scored"] and r["score"] >= 1.0]
        wrong = [r["completion"] for r in group if r["scored"] and r["score"] < 1.0]
        right_total += len(right)
        all_right += not wrong
        all_wrong += not right
        if right and wrong:
            pairs.append({"prompt": row.prompt, "chosen": rng.choice(right), "rejected": rng.choice(wrong)})
    stats = {"prompts": len(rows), "samples": len(records), "sampled_accuracy": right_total / len(records),
             "pairs": len(pairs), "prompts_all_right": all_right, "prompts_all_wrong": all_wrong}
    return pairs, stats


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- the methods


class Curve:
    """Held-out accuracy after given steps; ``hook`` evaluates an offline trainer's model in place."""

    def __init__(self, config: LadderConfig, rows: Sequence[Any], scorer: Any, name: str) -> None:
        self.config, self.rows, self.scorer, self.name = config, rows, scorer, name
        self.points: list[tuple[int, float]] = []

    def hook(self, step: int, model: Any, tokenizer: Any) -> None:
        if step % self.config.eval_every == 0 or step == self.config.steps:
            accuracy = held_out_accuracy(model, tokenizer, self.rows, self.scorer, self.config, f"{self.name}{step}")
            logger.info("%s step %d: held-out greedy accuracy %.3f", self.name, step, accuracy)
            self.points.append((step, accuracy))


def offline_common(config: LadderConfig) -> dict[str, Any]:
    """The schedule and logging options SFT and DPO share (constant-free: linear decay to 0, as their CLIs)."""
    return dict(batch_size=config.prompts_per_step, max_steps=config.steps, lr=config.lr, max_length=128,
                seed=config.seed, num_threads=config.threads, progress=False, tensorboard=False)


def run_sft(config: LadderConfig, start: Path, curve: Curve) -> dict[str, Any]:
    """SFT on the gold solution of every training prompt (one epoch of ``steps`` batches)."""
    from trainer_client.sft.sft_train import SFTConfig, train_sft

    out = Path(config.out)
    problems = make_problems(config.train_prompts, split_seed(config.seed, "rl_train"))
    data = write_jsonl(out / "sft_gold.jsonl", [{"prompt": p.prompt, "completion": completion_for(p)}
                                                for p in problems])
    result = train_sft(SFTConfig(data=str(data), out_dir=str(out / "sft"), model=str(start), epochs=1,
                                 **offline_common(config)), on_step=curve.hook)
    return {"policy_steps": result.steps, "gold_completions": len(problems), "generated_samples": 0}


def run_dpo(config: LadderConfig, start: Path, curve: Curve, pairs: Path, n_pairs: int) -> dict[str, Any]:
    """DPO (sigmoid, frozen start as reference) on the start's verifier-ranked pairs, epochs until ``steps``."""
    from trainer_client.dpo.dpo_train import DPOConfig, train_dpo

    epochs = math.ceil(config.train_prompts / n_pairs)
    result = train_dpo(DPOConfig(data=str(pairs), out_dir=str(Path(config.out) / "dpo"), model=str(start),
                                 beta=config.dpo_beta, epochs=epochs, precompute_ref_log_probs=True,
                                 **offline_common(config)), on_step=curve.hook)
    return {"policy_steps": result.steps, "pairs": n_pairs, "epochs": epochs,
            "generated_samples": config.train_prompts * config.group_size}


def train_rm(config: LadderConfig, start: Path, pairs: Path, eval_pairs: Path | None) -> dict[str, Any]:
    """Bradley–Terry reward model on the same pairs: the start's backbone + a score head."""
    from trainer_client.rm.rm_train import RewardTrainConfig, train_reward_model

    result = train_reward_model(RewardTrainConfig(
        data=str(pairs), eval_data=str(eval_pairs) if eval_pairs else None, out_dir=str(Path(config.out) / "rm"),
        model=str(start),
        max_length=96, epochs=config.rm_epochs, batch_size=config.prompts_per_step, lr=config.rm_lr,
        seed=config.seed, num_threads=config.threads, progress=False))
    return {"eval_accuracy": result.eval_accuracy, "train_loss": result.train_loss,
            "wall_time_s": round(result.wall_time_s, 1)}


def rl_overrides(config: LadderConfig, start: Path, train: Path, held_out: Path) -> list[str]:
    """The budget and evaluation overrides GRPO and PPO share (on top of their demo configs)."""
    return [f"model.path={start}", f"model.threads={config.threads}", f"data.train={train}",
            f"sampling.prompts_per_step={config.prompts_per_step}", f"sampling.group_size={config.group_size}",
            "sampling.generation_batch_prompts=16", f"optim.lr={config.lr}", f"run.steps={config.steps}",
            f"run.seed={config.seed}", "run.save_every=0", "run.resume=false", "run.progress=false",
            "run.tensorboard=false", "run.rollouts_sample=0", f"run.eval_every={config.eval_every}",
            f"run.eval_data={held_out}", "run.eval_max_new_tokens=32"]


def rl_curve(run_dir: Path) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(held-out accuracy points, training reward per step) from a GRPO/PPO run's metrics.jsonl."""
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    evals = [(m["step"], float(m["eval/accuracy"])) for m in lines if m.get("eval/accuracy") is not None]
    rewards = [(m["step"], m["reward_mean"]) for m in lines if m.get("reward_mean") is not None]
    return evals, rewards


def run_grpo(config: LadderConfig, start: Path, held_out: Path, endpoint: str) -> tuple[dict[str, Any], Any]:
    """GRPO against the verifier (the reward server already running at ``endpoint``)."""
    from trainer_client.train.grpo import train_grpo
    from trainer_client.train.grpo_config import load_config

    run_dir = Path(config.out) / "grpo"
    overrides = rl_overrides(config, start, start / RL_TRAIN_FILE, held_out) + [
        "reward.embedded=false", f"reward.endpoint={endpoint}"]
    train_grpo(load_config(ROOT / "configs" / "demo_grpo.yaml", overrides, run_dir=str(run_dir)))
    evals, rewards = rl_curve(run_dir)
    return {"policy_steps": config.steps, "generated_samples": config.train_prompts * config.group_size,
            "train_reward": rewards}, evals


def run_rm_ppo(config: LadderConfig, start: Path, held_out: Path, rm_dir: Path) -> tuple[dict[str, Any], Any]:
    """PPO against the served reward model: the training rows' task is ``rm``; held-out rows stay ``gsm8k``."""
    from trainer_client.train.ppo import train_ppo
    from trainer_client.train.ppo_config import load_config

    out = Path(config.out)
    rows = [{**json.loads(line), "task": "rm"} for line in (start / RL_TRAIN_FILE).read_text().splitlines()]
    train = write_jsonl(out / "rm_train_prompts.jsonl", rows)
    run_dir = out / "rm_ppo"
    with ServedRewardModel(rm_dir, out / "rm_server.log", threads=config.threads) as rm:
        rewards_yaml = out / "rewards_rm.yaml"
        rewards_yaml.write_text(f'tasks:\n  rm: {{options: {{endpoint: "{rm.address}", normalize: true}}}}\n')
        overrides = rl_overrides(config, start, train, held_out) + [
            "reward.embedded=true", f"reward.rewards_config={rewards_yaml}", "ppo.mini_batch_size=0",
            "ppo.micro_batch_size=128"]
        train_ppo(load_config(ROOT / "configs" / "demo_ppo.yaml", overrides, run_dir=str(run_dir)))
    evals, rewards = rl_curve(run_dir)
    return {"policy_steps": config.steps, "generated_samples": config.train_prompts * config.group_size,
            "train_reward": rewards, "train_reward_is": "the reward model's normalized score"}, evals


# ----------------------------------------------------------------------------- the comparison


@dataclass(frozen=True)
class Shared:
    """What every method starts from: the start checkpoint, the held-out rows, the verifier's server, the pairs."""

    start: Path
    held_out: Path
    curve_rows: list[Any]
    scorer: Any
    endpoint: str
    pairs: Path | None
    n_pairs: int
    eval_pairs: Path | None


def run_method(method: str, config: LadderConfig, shared: Shared) -> tuple[dict[str, Any], list[tuple[int, float]]]:
    """One method from the start: its budget record and its held-out accuracy points (wall time included)."""
    started = time.perf_counter()
    curve = Curve(config, shared.curve_rows, shared.scorer, method)
    if method == "sft":
        info = run_sft(config, shared.start, curve)
    elif method == "dpo":
        info = run_dpo(config, shared.start, curve, shared.pairs, shared.n_pairs)
    elif method == "grpo":
        info, curve.points = run_grpo(config, shared.start, shared.held_out, shared.endpoint)
    else:
        rm = train_rm(config, shared.start, shared.pairs, shared.eval_pairs)
        info, curve.points = run_rm_ppo(config, shared.start, shared.held_out, Path(config.out) / "rm")
        info["reward_model"] = rm
    return {**info, "wall_time_s": round(time.perf_counter() - started, 1)}, curve.points


def run_ladder(config: LadderConfig) -> dict[str, Any]:
    """Builds the start, measures it, runs the chosen methods, writes ``results.json`` and the PNG."""
    from trainer_client.train.models import load_policy, load_tokenizer
    from trainer_client.train.reward_overlap import EmbeddedRewardServer, OverlappedScorer
    from trainer_client.train.rollouts import read_prompts

    torch.set_num_threads(config.threads)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    start, record = build_start(config)
    held_out = start / RL_EVAL_FILE
    eval_rows = read_prompts(held_out)
    results: dict[str, Any] = {"config": dataclasses.asdict(config), "methods": {}}
    with EmbeddedRewardServer(out / "reward_server.log") as server, OverlappedScorer(server.address) as scorer:
        from trainer_client.train.config import ModelConfig

        tokenizer = load_tokenizer(str(start))
        model = load_policy(str(start), ModelConfig(path=str(start), threads=config.threads), trainable=False)
        start_accuracy = held_out_accuracy(model, tokenizer, eval_rows, scorer, config, "start")
        results["start"] = {"greedy_accuracy": start_accuracy, "warmup_steps": record["steps"],
                            "warmup_greedy_success_rate": record["greedy_success_rate"],
                            "warmup_sampled_success_rate": record["success_rate"], "eval_rows": len(eval_rows)}
        logger.info("start: held-out greedy accuracy %.3f on %d rows", start_accuracy, len(eval_rows))
        if start_accuracy >= config.max_start_greedy:
            raise SystemExit(f"the start's greedy held-out accuracy is {start_accuracy:.3f} >= "
                             f"{config.max_start_greedy}: pass fewer --start-steps for a weaker start")
        pairs_path = eval_pairs_path = None
        n_pairs = 0
        if {"dpo", "rm_ppo"} & set(config.methods):
            tick = time.perf_counter()
            pairs = sample_pairs(model, tokenizer, read_prompts(start / RL_TRAIN_FILE), scorer, config, "pairs")
            seconds = round(time.perf_counter() - tick, 1)
            eval_pairs, _ = sample_pairs(model, tokenizer, eval_rows, scorer, config, "evalpairs")
            results["pairs"] = {**pairs[1], "held_out_pairs": len(eval_pairs), "wall_time_s": seconds}
            logger.info("pairs from the start's samples: %s", results["pairs"])
            if not pairs[0]:
                raise SystemExit("the start's samples gave no (right, wrong) pair: use more --group-size or a "
                                 "stronger start")
            n_pairs = len(pairs[0])
            pairs_path = write_jsonl(out / "pairs.jsonl", pairs[0])
            eval_pairs_path = write_jsonl(out / "pairs_held_out.jsonl", eval_pairs) if eval_pairs else None
        del model
        shared = Shared(start, held_out, eval_rows, scorer, server.address, pairs_path, n_pairs, eval_pairs_path)
        for method in config.methods:
            logger.info("---- %s", method)
            info, points = run_method(method, config, shared)
            points = [(0, start_accuracy), *points]
            results["methods"][method] = {
                **info, "steps": [s for s, _ in points], "accuracy": [a for _, a in points],
                "final_accuracy": points[-1][1], "best_accuracy": max(a for _, a in points),
                "prompts_seen": config.train_prompts}
            logger.info("%s: %.3f -> %.3f in %.0f s", method, start_accuracy, points[-1][1], info["wall_time_s"])
    results["wall_time_s"] = round(time.perf_counter() - started, 1)
    (out / RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    plot_curves(results, out / PLOT_FILE)
    return results


def parse_args(argv: Sequence[str] | None = None) -> LadderConfig:
    parser = argparse.ArgumentParser(prog="python -m examples.ladder_compare", description=__doc__.split("\n\n")[0])
    for f in dataclasses.fields(LadderConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.name == "methods":
            parser.add_argument(flag, nargs="+", choices=METHODS, default=list(METHODS), help=f.metadata["help"])
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default,
                                help=f.metadata["help"] + " (default: %(default)s)")
    args = vars(parser.parse_args(argv))
    return LadderConfig(**{**args, "methods": tuple(args["methods"])})


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        config = parse_args(argv)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    logger.info("config: %s", config)
    results = run_ladder(config)
    print(format_table(results))
    print(f"\nwrote {Path(config.out) / RESULTS_FILE} and {Path(config.out) / PLOT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
