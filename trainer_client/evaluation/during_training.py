"""``run.eval_every``: the trainers evaluate on held-out prompts every N steps, with ``evaluate``'s metrics.

    periodic = PeriodicEval.from_config(config)      # None when run.eval_every is 0
    if periodic and periodic.due(step, last=...):
        metrics.update(periodic.run(model, tokenizer, scorer, step))   # eval/accuracy, eval/<task>/pass@4, ...
    periodic.plot(run_dir)                             # RUN_DIR/eval_curves.png, or a logged note

The metrics join the step's line in ``metrics.jsonl`` (and TensorBoard, W&B) under ``eval/``.
Every evaluation samples with ``run.seed`` in a forked RNG: evaluations of different steps
differ by the policy only, and the training's random stream is untouched.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer_client.evaluation.evaluate import EvalOptions, evaluate
from trainer_client.evaluation.metrics import flat_metrics
from trainer_client.train.reward_overlap import OverlappedScorer
from trainer_client.train.rollouts import PromptRow, read_prompts

logger = logging.getLogger(__name__)


@dataclass
class PeriodicEval:
    """The held-out rows and how to evaluate them; ``every`` steps and at the last step."""

    rows: list[PromptRow]
    options: EvalOptions
    every: int
    path: str

    @classmethod
    def from_config(cls, config: Any) -> PeriodicEval | None:
        """From a trainer config's ``run`` (eval_*), ``sampling`` and ``data`` sections; None when off."""
        run, sampling = config.run, config.sampling
        if not run.eval_every:
            return None
        data = config.data
        rows = read_prompts(run.eval_data, data.task, prompt_key=data.prompt_key, reference_key=data.reference_key)
        if run.eval_max_prompts:
            rows = rows[: run.eval_max_prompts]
        options = EvalOptions(n=run.eval_n, ks=tuple(run.eval_k), temperature=run.eval_temperature,
                              top_p=sampling.top_p, max_new_tokens=run.eval_max_new_tokens or sampling.max_new_tokens,
                              batch_size=sampling.generation_batch_prompts, seed=run.seed,
                              correct_at=run.eval_correct_at, stop_strings=tuple(sampling.stop_strings),
                              chat_template=data.chat_template)
        return cls(rows, options, run.eval_every, run.eval_data)

    def due(self, step: int, last: bool) -> bool:
        """Whether ``step`` (just finished) evaluates: every ``every`` steps, and the run's last step."""
        return last or step % self.every == 0

    def run(self, model: Any, tokenizer: Any, scorer: OverlappedScorer, step: int) -> dict[str, Any]:
        """The ``eval/*`` metrics of the policy as it is after ``step``."""
        result = evaluate(model, tokenizer, self.rows, scorer, self.options, tag=f"eval{step}")
        metrics = flat_metrics(result.summary)
        logger.info("step %d eval on %d prompts: accuracy %s, reward %s, unscored %s", step, len(self.rows),
                    metrics["eval/accuracy"], metrics["eval/reward_mean"], metrics["eval/unscored"])
        return metrics

    def plot(self, run_dir: str | Path) -> Path | None:
        """Draws ``RUN_DIR/eval_curves.png``; without matplotlib, logs a note and draws nothing."""
        from trainer_client.train.plot import plot_eval_at_end

        return plot_eval_at_end(run_dir)
