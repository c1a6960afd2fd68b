"""Where a run's numbers go: ``RUN_DIR/metrics.jsonl`` (one JSON line per step), TensorBoard, the log.

A sample of each step's completions with their verdicts goes to ``RUN_DIR/rollouts.jsonl``
(``rollout_log``), opened and closed with the rest.

``metrics.jsonl`` is the record of truth (``trainer-client plot`` reads it). TensorBoard
is a mirror, written only if the ``tensorboard`` package is importable; without it the run
says so once and goes on. Weights & Biases is another, when the run asks for it (``wandb_run``,
from ``wandb_log.open_wandb``). On resume, lines of steps after the checkpoint are dropped,
so the file reads as one uninterrupted run.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainer_client.train.rollout_log import RolloutLog

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.jsonl"
CONFIG_FILE = "config.yaml"


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _json_value(value: Any) -> Any:
    """Floats as JSON numbers; NaN/inf (not JSON) as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class RunLogger:
    """Appends one metrics line per step; mirrors scalars to TensorBoard when available.

    With ``rollouts_max_mb`` set, also keeps ``rollouts.jsonl`` (``log_rollouts``), capped at that size.
    """

    def __init__(self, run_dir: str | Path, tensorboard: bool = True, resume_step: int | None = None,
                 rollouts_max_mb: float | None = None, wandb_run: Any = None) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / METRICS_FILE
        kept = [r for r in read_metrics(self.run_dir) if resume_step is not None and r.get("step", 0) <= resume_step]
        self.path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
        self._file = open(self.path, "a", encoding="utf-8")
        self._tb = self._open_tensorboard() if tensorboard else None
        self._rollouts = RolloutLog(self.run_dir, rollouts_max_mb, resume_step) if rollouts_max_mb else None
        self._wandb = wandb_run

    def _open_tensorboard(self) -> Any:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            logger.info("tensorboard is not installed: logging to %s only", self.path)
            return None
        return SummaryWriter(log_dir=str(self.run_dir / "tensorboard"))

    def log_config(self, config_yaml: str) -> None:
        """Logs the resolved config once (``run_configs.keep_config`` keeps its copies in the run directory)."""
        logger.info("resolved config:\n%s", config_yaml)

    def log(self, step: int, metrics: Mapping[str, Any]) -> None:
        record = {"step": step, **{k: _json_value(v) for k, v in metrics.items()}}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        if self._tb is not None:
            for key, value in metrics.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    self._tb.add_scalar(key, value, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log({k: v for k, v in metrics.items() if isinstance(v, (int, float)) and
                             not isinstance(v, bool) and math.isfinite(v)}, step=step)

    def log_rollouts(self, records: list[dict[str, Any]]) -> None:
        """Appends rollout lines (``rollout_log.step_records``) to rollouts.jsonl, if this run keeps one."""
        if self._rollouts is not None:
            self._rollouts.write(records)

    def close(self) -> None:
        self._file.close()
        if self._rollouts is not None:
            self._rollouts.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()
