"""The PPO run's configuration: the shared sections (``config``), with a ``ppo`` section in place of ``grpo``.

    config = load_config("configs/demo_ppo.yaml", overrides=["ppo.kl_coef=0.05"], run_dir="runs/ppo")

Sections ``model``, ``data``, ``sampling``, ``reward``, ``optim`` and ``run`` are the
shared ones (``trainer_client.train.config``: same keys, same checks, same ``--set
section.key=value`` overrides and YAML loading); only the algorithm's own section
differs. ``algorithm: ppo`` is the one preset that fits. ``describe()`` lists every key
with its help text (``trainer-client ppo --help-config``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer_client.rl_options import AGG_MODES
from trainer_client.train import config as shared
from trainer_client.train.config import (
    ADVANTAGE_SOURCES,
    KL_ESTIMATORS,
    DataConfig,
    ModelConfig,
    OptimConfig,
    RewardConfig,
    RunConfig,
    SamplingConfig,
)


def _help(text: str, **kwargs: Any) -> Any:
    return field(metadata={"help": text}, **kwargs)


@dataclass(frozen=True)
class PpoConfig:
    gamma: float = _help("GAE discount per token (1: the final reward reaches every token undiminished)",
                         default=1.0)
    lam: float = _help("GAE lambda: 1 = Monte-Carlo returns minus V, 0 = one-step TD on the critic", default=0.95)
    eps_low: float = _help("lower clip range of the policy ratio (1 - eps_low)", default=0.2)
    eps_high: float = _help("upper clip range of the policy ratio (1 + eps_high)", default=0.2)
    value_clip: float | None = _help("clip range of the new values around the rollout values (null: no "
                                     "value clipping)", default=0.2)
    entropy_coef: float = _help("entropy bonus coefficient (0: off)", default=0.0)
    whiten_advantages: bool = _help("whiten GAE advantages over the batch's valid tokens (mean 0, std 1)",
                                    default=True)
    advantage: str = _help("outcome (the score on each completion's last token), process (each step score on "
                           "its step's last token) or both; GAE spreads them back over the tokens", default="outcome")
    kl_coef: float = _help("KL coefficient to the frozen start policy (0: no KL and no reference model)",
                           default=0.0)
    kl_in_reward: bool = _help("true: -kl_coef * KL per token in the reward, before GAE (RLHF PPO); false: "
                               "kl_coef * KL in the loss (as GRPO)", default=True)
    kl_estimator: str = _help("k1, k2 or k3 estimator of KL(pi || pi_ref); k1 is the usual in-reward one",
                              default="k1")
    loss_agg: str = _help("token, sequence or seq_sum_norm (/ max_new_tokens) aggregation of every loss term",
                          default="token")
    ppo_epochs: int = _help("optimisation passes over each batch", default=2)
    mini_batch_size: int = _help("completions per optimizer step (0: the whole batch, one step per epoch)",
                                 default=0)
    micro_batch_size: int = _help("completions per forward/backward pass (gradient accumulation)", default=16)
    max_tokens_per_micro_batch: int = _help(
        "token budget of one forward/backward pass: completions (sorted by length) are grouped so that rows x "
        "(longest prompt + longest completion) stays within it, and at most micro_batch_size rows; a longer "
        "completion runs alone. The accumulated gradient is the whole mini-batch's (0: off)", default=0)
    critic_path: str | None = _help("from_pretrained directory of a value model (AutoModelForSequenceClassification, "
                                    "num_labels=1); null: the start policy's weights with a new value head",
                                    default=None)
    critic_lr: float | None = _help("learning rate of the critic (null: optim.lr)", default=None)

    def __post_init__(self) -> None:
        if not (0 < self.gamma <= 1 and 0 <= self.lam <= 1):
            raise ValueError(f"need 0 < ppo.gamma <= 1 and 0 <= ppo.lam <= 1; got {self.gamma}, {self.lam}")
        if not (0 <= self.eps_low < 1 and self.eps_high >= 0):
            raise ValueError(f"need 0 <= ppo.eps_low < 1 and ppo.eps_high >= 0; got {self.eps_low}, {self.eps_high}")
        if self.value_clip is not None and self.value_clip <= 0:
            raise ValueError(f"ppo.value_clip must be > 0, or null for no value clipping; got {self.value_clip}")
        if self.entropy_coef < 0 or self.kl_coef < 0:
            raise ValueError("ppo.entropy_coef and ppo.kl_coef must be >= 0")
        if self.advantage not in ADVANTAGE_SOURCES:
            raise ValueError(f"ppo.advantage must be one of {ADVANTAGE_SOURCES}, got {self.advantage!r}")
        if self.kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"ppo.kl_estimator must be one of {KL_ESTIMATORS}, got {self.kl_estimator!r}")
        if self.loss_agg not in AGG_MODES:
            raise ValueError(f"ppo.loss_agg must be one of {AGG_MODES}, got {self.loss_agg!r}")
        if self.ppo_epochs < 1 or self.micro_batch_size < 1 or self.mini_batch_size < 0:
            raise ValueError("need ppo.ppo_epochs >= 1, ppo.micro_batch_size >= 1, ppo.mini_batch_size >= 0")
        if self.max_tokens_per_micro_batch < 0:
            raise ValueError(f"ppo.max_tokens_per_micro_batch must be >= 0 (0: off, micro_batch_size rows per "
                             f"pass), got {self.max_tokens_per_micro_batch}")
        if self.critic_lr is not None and self.critic_lr <= 0:
            raise ValueError(f"ppo.critic_lr must be > 0 (or null: optim.lr), got {self.critic_lr}")


@dataclass(frozen=True)
class PpoRunConfig(RunConfig):
    dir: str = _help("run directory: metrics.jsonl, checkpoints/, config.yaml, tensorboard/", default="runs/ppo")


@dataclass(frozen=True)
class PpoTrainerConfig:
    model: ModelConfig
    data: DataConfig
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    ppo: PpoConfig = field(default_factory=PpoConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: PpoRunConfig = field(default_factory=PpoRunConfig)
    algorithm: str | None = None  # "ppo" or None (``presets``)

    def __post_init__(self) -> None:
        if not self.data.train:
            raise ValueError("data.train is required: a JSONL file of prompts (--set data.train=PATH)")
        if self.run.eval_every and not self.run.eval_data:
            raise ValueError("run.eval_every needs run.eval_data=PATH (held-out prompts)")


def load_config(path: str | Path | None, overrides: Sequence[str] = (), run_dir: str | None = None) -> PpoTrainerConfig:
    """YAML file (optional) + ``section.key=value`` overrides (+ ``run_dir``) -> a validated PPO config."""
    return shared.load_config(path, overrides, run_dir, root=PpoTrainerConfig)


def describe() -> str:
    """The presets and every key with its default and help text, for ``trainer-client ppo --help-config``."""
    return shared.describe(PpoTrainerConfig)


to_yaml = shared.to_yaml
