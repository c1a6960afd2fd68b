"""PPO training against the reward service: a critic (value head), GAE, clipped policy and value losses.

    from trainer_client.ppo import load_config, train_ppo
    summary = train_ppo(load_config("configs/demo_ppo.yaml", overrides=["run.steps=20"]))

Command line: ``trainer-client ppo --config F [--run-dir DIR] [--set section.key=value ...]``;
``trainer-client plot RUN_DIR`` draws its curves. Sampling, overlapped scoring,
checkpoints and run logs are GRPO's (``trainer_client.grpo``); the math is ``trainer_client.rl``.
"""

from trainer_client.ppo.config import PpoTrainerConfig, describe, load_config, to_yaml
from trainer_client.ppo.trainer import PpoTrainer, train_ppo

__all__ = ["PpoTrainer", "PpoTrainerConfig", "describe", "load_config", "to_yaml", "train_ppo"]
