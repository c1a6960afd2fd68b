"""Process vs outcome supervision: the same GRPO run from the same start, only the advantage source changed.

Why: process supervision (a score per reasoning step) should assign credit better than one
score per completion when a completion has several steps that can go wrong separately. This
measures it on a task where the tiny policy often gets an intermediate step wrong
(``examples.tiny.multistep_task``: ``a + b - c`` worked out line by line), graded by the
real reward server's ``steps`` task (embedded, on loopback):

1. warm up a tiny policy on the format (short, label-smoothed: sampled completions are
   right ~30% of the time, ~1 checked step in 5 is wrong) and write the prompts (task ``steps``);
2. measure it on a held-out set (one completion per problem at T=1, fixed sampling seed);
3. train it with GRPO from that start -- same seed, prompts, steps and batch every time --
   with ``grpo.advantage: outcome`` (the task's score is its ``outcome`` component), then
   ``process`` (the same task's step scores only) and ``both`` (their sum); log per step the
   final-answer accuracy (the ``outcome`` component) and the step accuracy (the share of
   checked steps that hold) of the step's rollouts, as the server returned them;
4. measure every trained policy on the held-out set again; write ``figures.json`` and
   ``process_vs_outcome.png`` (two panels: final-answer accuracy, step accuracy; every run).

    python -m examples.process_vs_outcome --out runs/process_vs_outcome        # ~3 min on 2 CPU cores
    python -m examples.process_vs_outcome --out runs/pvo --process-modes both --steps 30

Under ``process`` the answer line (``#### 9``) makes no checkable claim, so its tokens (and
eos) get advantage 0: only the arithmetic lines are taught. ``both`` adds the outcome
advantage to every token, so the step scores add credit assignment to the outcome signal
rather than replace it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import shutil
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from examples.tiny.arithmetic_task import make_problems
from examples.tiny.multistep_task import MULTISTEP, StepEval, evaluate, warm_start, write_steps_jsonl
from trainer_client.train.collect import StepData
from trainer_client.train.grpo import GrpoTrainer
from trainer_client.train.grpo_config import load_config

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = REPO / "configs" / "process_vs_outcome.yaml"
FIGURES_FILE = "figures.json"
PLOT_FILE = "process_vs_outcome.png"
# Problem seeds: the warm-up pool, the RL prompts and the held-out set never share a draw.
POOL_SEED, TRAIN_SEED, EVAL_SEED = 1, 3, 4
WINDOW = 10  # steps averaged for the "first" and "last" figures


@dataclass(frozen=True)
class ExperimentConfig:
    out: str = field(metadata={"help": "output directory (start/, one run dir per advantage, figures, PNG)"})
    config: str = field(default=str(DEFAULT_CONFIG), metadata={"help": "GRPO config YAML shared by every run"})
    seed: int = field(default=0, metadata={"help": "seeds the warm-up, every run and the held-out sampling"})
    steps: int = field(default=60, metadata={"help": "GRPO steps of each run"})
    process_modes: str = field(default="process,both", metadata={
        "help": "grpo.advantage of the process-supervised runs, comma-separated: process and/or both"})
    warmup_steps: int = field(default=1000, metadata={"help": "supervised warm-up steps of the start policy"})
    label_smoothing: float = field(default=0.05, metadata={"help": "warm-up label smoothing (noisy sampling)"})
    train_problems: int = field(default=2048, metadata={"help": "RL prompts"})
    eval_problems: int = field(default=512, metadata={"help": "held-out problems (one sampled completion each)"})
    threads: int = field(default=1, metadata={"help": "torch CPU threads"})

    def __post_init__(self) -> None:
        if not self.modes or set(self.modes) - {"both", "process"}:
            raise ValueError(f"--process-modes must name process and/or both, got {self.process_modes!r}")
        if min(self.steps, self.warmup_steps, self.train_problems, self.eval_problems, self.threads) < 1:
            raise ValueError("--steps, --warmup-steps, --train-problems, --eval-problems and --threads must be >= 1")

    @property
    def modes(self) -> tuple[str, ...]:
        """The process-supervised runs' ``grpo.advantage`` values, in order, without repeats."""
        return tuple(dict.fromkeys(m.strip() for m in self.process_modes.split(",") if m.strip()))


def rollout_accuracy(data: StepData) -> dict[str, float | None]:
    """Final-answer and step accuracy of every scored rollout sampled in a step (from the server's results)."""
    results = [r for group in data.sampled_results for r in group.results if r.scored]
    checked = [s for r in results for s in r.steps if s.scored]
    return {"final_accuracy": statistics.fmean(float(r.components.get("outcome", 0.0)) for r in results)
            if results else None,
            "step_accuracy": sum(s.score for s in checked) / len(checked) if checked else None,
            "checked_steps_per_completion": len(checked) / len(results) if results else None}


class AccuracyLoggingTrainer(GrpoTrainer):
    """The GRPO trainer, unchanged, with the step's rollout accuracies added to its metrics line."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self._accuracy: dict[str, float | None] = {}

    def make_batch(self, data: StepData) -> Any:
        self._accuracy = rollout_accuracy(data)
        return super().make_batch(data)

    def train_step(self, scorer: Any) -> dict[str, Any]:
        self._accuracy = {}
        metrics = super().train_step(scorer)
        metrics.update({f"acc/{k}": v for k, v in self._accuracy.items()})
        return metrics


def prepare_start(cfg: ExperimentConfig) -> tuple[Path, Path, dict]:
    """Warms up and saves the start policy, writes the RL prompts; returns (start dir, prompts, record)."""
    torch.set_num_threads(cfg.threads)  # as the trainer will (model.threads): the same floats every time
    out = Path(cfg.out)
    start = out / "start"
    start.mkdir(parents=True, exist_ok=True)
    model, tokenizer, stats = warm_start(seed=cfg.seed, steps=cfg.warmup_steps, label_smoothing=cfg.label_smoothing,
                                         pool_seed=POOL_SEED + 10 * cfg.seed)
    model.save_pretrained(start)
    tokenizer.save_pretrained(start)
    train = out / "train.jsonl"
    write_steps_jsonl(train, make_problems(cfg.train_problems, TRAIN_SEED + 10 * cfg.seed, MULTISTEP), "train")
    record = {"warmup_steps": stats.steps, "label_smoothing": cfg.label_smoothing,
              "warmup_final_loss": round(stats.final_loss, 4), "warmup_s": round(stats.seconds, 1),
              "heldout": held_out_eval(model, tokenizer, cfg).as_dict()}
    return start, train, record


def held_out_eval(model: Any, tokenizer: Any, cfg: ExperimentConfig) -> StepEval:
    """One completion per held-out problem at the training temperature (1.0), with a fixed seed."""
    problems = make_problems(cfg.eval_problems, EVAL_SEED + 10 * cfg.seed, MULTISTEP)
    return evaluate(model, tokenizer, problems, temperature=1.0, seed=cfg.seed + 12345)


def run_arm(cfg: ExperimentConfig, advantage: str, start: Path, train: Path) -> dict:
    """One GRPO run from ``start`` with ``grpo.advantage=advantage``; its curves and held-out figures."""
    run_dir = Path(cfg.out) / advantage
    shutil.rmtree(run_dir, ignore_errors=True)  # a fresh run each time (the run dir is this script's)
    config = load_config(cfg.config, [f"model.path={start}", f"data.train={train}", f"grpo.advantage={advantage}",
                                      f"run.steps={cfg.steps}", f"run.seed={cfg.seed}", f"model.threads={cfg.threads}",
                                      "run.save_every=0", "run.resume=false", "run.progress=false",
                                      "run.tensorboard=false"], run_dir=str(run_dir))
    trainer = AccuracyLoggingTrainer(config)
    summary = trainer.train()
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    final = [m["acc/final_accuracy"] for m in lines]
    step_acc = [m["acc/step_accuracy"] for m in lines]
    k = min(WINDOW, len(lines))
    return {"advantage": advantage, "steps": summary.end_step, "wall_s": round(summary.wall_time_s, 1),
            "final_accuracy": final, "step_accuracy": step_acc,
            "final_accuracy_first": statistics.fmean(final[:k]), "final_accuracy_last": statistics.fmean(final[-k:]),
            "step_accuracy_first": statistics.fmean(step_acc[:k]),
            "step_accuracy_last": statistics.fmean(step_acc[-k:]),
            "heldout": held_out_eval(trainer.model, trainer.tokenizer, cfg).as_dict()}


def plot(figures: dict, path: Path) -> None:
    """Two panels (final-answer accuracy, step accuracy), one line per run, per step and smoothed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, title in ((axes[0], "final_accuracy", "final-answer accuracy"),
                           (axes[1], "step_accuracy", "step accuracy (checked steps that hold)")):
        for run, color in zip(figures["runs"], ("tab:blue", "tab:orange", "tab:red")):
            ys = run[key]
            xs = list(range(1, len(ys) + 1))
            smooth = [statistics.fmean(ys[max(0, i - 4): i + 1]) for i in range(len(ys))]
            ax.plot(xs, ys, color=color, alpha=0.25, linewidth=1)
            ax.plot(xs, smooth, color=color, linewidth=2,
                    label=f"{run['advantage']} (held-out {run['heldout'][key]:.2f})")
        ax.axhline(figures["start"]["heldout"][key], color="gray", linestyle=":",
                   label=f"start (held-out {figures['start']['heldout'][key]:.2f})")
        ax.set_title(title)
        ax.set_xlabel("GRPO step")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle("Outcome vs process supervision (GRPO, tiny policy, `steps` task; rollouts per step, 5-step mean)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_experiment(cfg: ExperimentConfig) -> dict:
    started = time.perf_counter()
    start, train, start_record = prepare_start(cfg)
    logger.info("start: %s", start_record)
    runs = [run_arm(cfg, advantage, start, train) for advantage in ("outcome", *cfg.modes)]
    figures = {"config": dataclasses.asdict(cfg), "start": start_record, "runs": runs,
               "total_s": round(time.perf_counter() - started, 1)}
    out = Path(cfg.out)
    (out / FIGURES_FILE).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    plot(figures, out / PLOT_FILE)
    return figures


def parse_args(argv: Sequence[str] | None = None) -> ExperimentConfig:
    parser = argparse.ArgumentParser(prog="python -m examples.process_vs_outcome", description=__doc__.split("\n\n")[0])
    for f in dataclasses.fields(ExperimentConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.default is dataclasses.MISSING:
            parser.add_argument(flag, dest=f.name, required=True, help=f.metadata["help"])
        else:
            parser.add_argument(flag, dest=f.name, type=type(f.default), default=f.default,
                                help=f.metadata["help"] + " (default: %(default)s)")
    return ExperimentConfig(**vars(parser.parse_args(argv)))


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(processName)s %(name)s %(levelname)s %(message)s")
    try:
        cfg = parse_args(argv)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    logger.info("config: %s", cfg)
    figures = run_experiment(cfg)
    summary = {"start": figures["start"]["heldout"], "total_s": figures["total_s"]}
    for run in figures["runs"]:
        summary[run["advantage"]] = {k: run[k] for k in ("wall_s", "final_accuracy_first", "final_accuracy_last",
                                                         "step_accuracy_first", "step_accuracy_last", "heldout")}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
