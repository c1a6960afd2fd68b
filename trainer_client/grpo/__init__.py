"""GRPO training against the reward service: config, rollouts, overlapped scoring, update, logging.

    from trainer_client.grpo import load_config, train_grpo
    summary = train_grpo(load_config("configs/demo_grpo.yaml", overrides=["run.steps=20"]))

Command line: ``trainer-client grpo --config F [--run-dir DIR] [--set section.key=value ...]``
and ``trainer-client plot RUN_DIR``. The math (advantages, losses, KL) is ``trainer_client.rl``.
"""

from trainer_client.grpo.config import TrainerConfig, describe, load_config, to_yaml
from trainer_client.grpo.trainer import GrpoTrainer, RunSummary, train_grpo

__all__ = ["GrpoTrainer", "RunSummary", "TrainerConfig", "describe", "load_config", "to_yaml", "train_grpo"]
