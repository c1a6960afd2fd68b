"""``run.eval_every`` for episode runs: held-out episodes every N steps, logged as ``eval/*`` beside the step.

    periodic = EpisodePeriodicEval.from_config(config, trainer.environment_host)   # None when run.eval_every is 0
    if periodic.due(step, last=...):
        metrics.update(periodic.run(model, tokenizer, scorer, step))   # eval/success, eval/reward_mean, ...

The held-out rows are the environment's ``episodes.eval_split`` (rows ``0 .. episodes.eval_rows-1``),
or the rows of ``run.eval_data`` (read as ``data.train`` is, sent to the environment), the first
``run.eval_max_prompts`` of them when set. One episode per row, greedy with ``run.eval_temperature`` 0
(else sampled at it, in an RNG forked and seeded with ``run.seed``), ``run.eval_max_new_tokens`` per
turn. The metrics are ``episode_step.eval_summary``'s under ``eval/``: ``success``, ``accuracy``,
``reward_mean``, ``unscored``/``unscored_rate``, ``tool_calls_mean``, ``tool_use_frac``, ``turns_mean``,
``samples``, so ``trainer-client plot`` and ``eval_curves.png`` draw them as the single-turn ones.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reward_core.clients.environment import BlockingEnvironmentClient
from trainer_client.train.episode_step import data_rows, evaluate_rows, split_rows
from trainer_client.train.episodes import ModelTurns
from trainer_client.train.prompts import PromptRow, uses_chat_template
from trainer_client.train.reward_overlap import OverlappedScorer

logger = logging.getLogger(__name__)


@dataclass
class EpisodePeriodicEval:
    """The held-out rows of an episode run and how to evaluate them; ``every`` steps and at the last step."""

    rows: list[PromptRow]
    every: int
    path: str  # run.eval_data, or "" for the environment's split
    split: str
    config: Any  # the trainer's config: episodes, sampling, data, run
    host_of: Callable[[OverlappedScorer], BlockingEnvironmentClient]

    @classmethod
    def from_config(cls, config: Any, host_of: Callable[[OverlappedScorer], BlockingEnvironmentClient]
                    ) -> EpisodePeriodicEval | None:
        """From a GRPO config with ``episodes`` on; None when ``run.eval_every`` is 0. A bad row of
        ``run.eval_data`` raises PromptDataError naming its line."""
        run, episodes = config.run, config.episodes
        if not run.eval_every:
            return None
        if run.eval_data:
            rows = data_rows(episodes, config.data, run.eval_data)
            rows = rows[: run.eval_max_prompts] if run.eval_max_prompts else rows
        else:
            rows = split_rows(episodes, episodes.eval_split, episodes.eval_rows)
        return cls(rows, run.eval_every, run.eval_data, episodes.eval_split, config, host_of)

    def due(self, step: int, last: bool) -> bool:
        """Whether ``step`` (just finished) evaluates: every ``every`` steps, and the run's last step."""
        return last or step % self.every == 0

    def run(self, model: Any, tokenizer: Any, scorer: OverlappedScorer, step: int) -> dict[str, Any]:
        """The ``eval/*`` metrics of the policy as it is after ``step``."""
        cfg = self.config
        run = cfg.run
        sampling = dataclasses.replace(cfg.sampling, temperature=run.eval_temperature or cfg.sampling.temperature,
                                       max_new_tokens=run.eval_max_new_tokens or cfg.sampling.max_new_tokens)
        turns = ModelTurns(model, tokenizer, sampling, greedy=run.eval_temperature == 0,
                           tool_call_format=cfg.episodes.tool_call_format)
        templated = uses_chat_template(tokenizer, cfg.data.chat_template)
        with torch.random.fork_rng():
            torch.manual_seed(run.seed)
            summary = evaluate_rows(turns, tokenizer, self.host_of(scorer), cfg.episodes, self.rows, templated,
                                    self.split, batch=max(1, cfg.sampling.prompts_per_step * cfg.sampling.group_size),
                                    correct_at=run.eval_correct_at, path=self.path)
        metrics = {f"eval/{key}": value for key, value in summary.items()}
        logger.info("step %d eval on %d episodes: success %s, reward %s, unscored %s, tool calls/episode %s", step,
                    summary["episodes"], summary["success"], summary["reward_mean"], summary["unscored"],
                    summary["tool_calls_mean"])
        return metrics

    def plot(self, run_dir: str | Path) -> Path | None:
        """Draws ``RUN_DIR/eval_curves.png``; without matplotlib, logs a note and draws nothing."""
        from trainer_client.train.plot import plot_eval_at_end

        return plot_eval_at_end(run_dir)
