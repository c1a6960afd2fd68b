"""What every trainer's run shares: resume-or-seed, the step loop, checkpoint cadence, the summary.

GRPO (``train/grpo.py``) and PPO (``train/ppo.py``) differ in what one step does and
what a checkpoint holds; how a run starts (resume from the newest checkpoint exactly, or
seed every RNG), steps (progress bar, metrics line, a checkpoint every ``save_every``
steps, at the end and when ``max_time_s`` runs out) and ends is the same, and lives here.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from tqdm import tqdm

from trainer_client.errors import NothingScoredError
from trainer_client.evaluation.during_training import PeriodicEval
from trainer_client.train import checkpointing
from trainer_client.train.data_checks import check_prompts
from trainer_client.train.reward_overlap import OverlappedScorer, open_scorer
from trainer_client.train.rollouts import PromptSampler
from trainer_client.train.run_logging import RunLogger

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunSummary:
    run_dir: str
    start_step: int
    end_step: int
    wall_time_s: float
    first_rewards: list[float | None]
    last_rewards: list[float | None]


class SteppedTrainer(Protocol):
    """What :func:`run_training` drives: a trainer with a step counter, a logger and a checkpoint."""

    config: Any            # .run (RunConfig), .reward (RewardConfig), .data (DataConfig), .sampling
    model: Any             # the policy (run.eval_every evaluates it)
    tokenizer: Any
    run_dir: str
    sampler: PromptSampler
    step: int
    run_logger: RunLogger

    def train_step(self, scorer: OverlappedScorer) -> dict[str, Any]: ...

    def save(self) -> None: ...


def restore_or_seed(checkpoint: Path | None, optimizer: torch.optim.Optimizer, scheduler: Any,
                    sampler: PromptSampler, seed: int) -> int:
    """The step to start at: the checkpoint's (optimizer, scheduler, sampler and RNGs restored), else 0, seeded."""
    if checkpoint is None:
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        return 0
    state = checkpointing.load_training_state(checkpoint, optimizer, scheduler)
    sampler.load_state_dict(state["sampler"])
    checkpointing.restore_rng(checkpoint)  # last: loading models may draw random numbers
    logger.info("resuming from %s at step %d", checkpoint, int(state["step"]))
    return int(state["step"])


def raise_if_nothing_scored(metrics: Mapping[str, Any], step: int, train_path: str) -> None:
    """Every completion of the step came back unscored: stop with what to check."""
    if metrics["reward_mean"] is None:
        unscored = {k: v for k, v in metrics.items() if k.startswith("unscored/")}
        raise NothingScoredError(f"step {step}: no completion was scored ({metrics['unscored']} unscored: "
                                 f"{unscored}); check the tasks in {train_path} and the reward server log")


def run_training(trainer: SteppedTrainer, desc: str, postfix: Callable[[Mapping[str, Any]], dict[str, str]], *,
                 serve_environments: bool = False, check_tasks: bool = True,
                 evaluator: Callable[[Any], Any] = PeriodicEval.from_config) -> RunSummary:
    """Steps ``trainer`` to ``run.steps`` (or until ``run.max_time_s``), scoring through one reward scorer.

    ``serve_environments``: an embedded reward server also serves environments (episodes);
    ``check_tasks``: check the prompt rows' tasks before step 0 (with ``data.check_tasks``; not for episodes,
    whose rows the environment verifies); ``evaluator``: config -> the ``run.eval_every`` evaluation (``due``,
    ``run``, ``plot``; None when off): single-turn ``PeriodicEval`` unless given (episodes: ``episode_eval``)."""
    run = trainer.config.run
    started = time.perf_counter()
    start_step = trainer.step
    rewards: list[float | None] = []
    periodic = evaluator(trainer.config)  # run.eval_every: None when off
    bar = tqdm(total=run.steps, initial=trainer.step, disable=not run.progress, desc=desc, unit="step")
    try:
        with open_scorer(trainer.config.reward, trainer.run_dir, serve_environments) as scorer:
            if check_tasks and trainer.config.data.check_tasks:  # before step 0: rows the reward service cannot score
                tasks = scorer.list_tasks()
                check_prompts(trainer.sampler.rows, tasks, trainer.config.data.train, scorer.endpoint)
                if periodic is not None:
                    check_prompts(periodic.rows, tasks, periodic.path, scorer.endpoint)
            while trainer.step < run.steps:
                metrics = trainer.train_step(scorer)
                trainer.step += 1
                out_of_time = run.max_time_s and time.perf_counter() - started >= run.max_time_s
                if periodic is not None and periodic.due(trainer.step, trainer.step == run.steps or out_of_time):
                    metrics.update(periodic.run(trainer.model, trainer.tokenizer, scorer, trainer.step))
                trainer.run_logger.log(trainer.step, metrics)
                rewards.append(metrics["reward_mean"])
                bar.update(1)
                bar.set_postfix(postfix(metrics))
                if (run.save_every and trainer.step % run.save_every == 0) or trainer.step == run.steps \
                        or out_of_time:
                    trainer.save()
                if out_of_time:
                    logger.info("stopping at step %d: run.max_time_s=%s reached", trainer.step, run.max_time_s)
                    break
        if periodic is not None:
            periodic.plot(trainer.run_dir)
    finally:
        bar.close()
        trainer.run_logger.close()
    k = max(1, min(5, len(rewards) // 4))
    return RunSummary(trainer.run_dir, start_step, trainer.step, time.perf_counter() - started, rewards[:k],
                      rewards[-k:])
