"""The GRPO run's configuration: the shared sections (``config``) plus a ``grpo`` section.

    config = load_config("configs/demo_grpo.yaml", overrides=["grpo.beta=0.04", "run.steps=20"],
                         run_dir="runs/grpo")

The ``grpo`` section holds what the group-relative family varies: the baseline and
scaling of the advantages, what they are computed from (``advantage``: the outcome
score, the step scores, or both), the loss aggregation, the clip, the KL term and DAPO's
sampling and length treatments, and the update rule (``update``: the clipped surrogate, or
TRPO's trust-region step, whose settings are the ``trpo`` section, ``trpo_config``).
``algorithm: NAME`` picks a preset of these values (``presets``: reinforce, rloo, grpo,
dr_grpo, dapo, trpo); explicit values win over it.
"""

from __future__ import annotations

import dataclasses
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
    _help,
)
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.trpo_config import TrpoConfig

ADVANTAGE_SCALES = ("group", "batch", "none")
BASELINES = ("mean", "leave_one_out", "none")
UPDATES = ("clipped", "trpo")


@dataclass(frozen=True)
class GrpoConfig:
    advantage_scale: str = _help("divide group-centred rewards by the group std, the batch std, or nothing "
                                 "(Dr. GRPO)", default="group")
    baseline: str = _help("mean (GRPO: the group mean), leave_one_out (RLOO: the mean of the other members) or "
                          "none (REINFORCE: A = r, and zero-variance groups keep their reward)", default="mean")
    min_valid: int = _help("scored members a group needs to give an advantage: a group with fewer gives none "
                           "(every member advantage 0 and out of the loss; counted as groups_too_few_scored). "
                           "Unscored members never enter a group's mean or std. 1: a lone scored member counts",
                           default=2)
    advantage: str = _help("outcome (one score per completion), process (step scores, DeepSeekMath 4.1.3: each "
                           "token gets the sum of the group-normalised scores of the steps ending at or after it) "
                           "or both (the two added per token)", default="outcome")
    loss_agg: str = _help("token (DAPO), sequence (GRPO) or seq_sum_norm (Dr. GRPO, / max_new_tokens)",
                          default="token")
    update: str = _help("clipped (the clipped surrogate, AdamW steps: every preset but trpo) or trpo (one "
                        "natural-gradient step per batch inside the KL trust region of the trpo section; no "
                        "optimizer step, clip and lr unused)", default="clipped")
    eps_low: float = _help("lower clip range of the ratio (1 - eps_low)", default=0.2)
    eps_high: float = _help("upper clip range (1 + eps_high); 0.28 is DAPO's clip-higher", default=0.2)
    dual_clip_c: float | None = _help("dual-clip bound for negative advantages (e.g. 3; null: off)", default=None)
    ppo_epochs: int = _help("optimisation passes over each batch (with the stored old log-probs)", default=1)
    mini_batch_size: int = _help("completions per optimizer step (0: the whole batch, one step per epoch)",
                                 default=0)
    micro_batch_size: int = _help("completions per forward/backward pass (gradient accumulation)", default=16)
    max_tokens_per_micro_batch: int = _help(
        "token budget of one forward/backward pass: completions (sorted by length) are grouped so that rows x "
        "(longest prompt + longest completion) stays within it, and at most micro_batch_size rows; a longer "
        "completion runs alone. The accumulated gradient is the whole mini-batch's (0: off)", default=0)
    beta: float = _help("KL coefficient to the frozen start policy (0: no KL term and no reference model)",
                        default=0.0)
    kl_estimator: str = _help("k1, k2 or k3 (GRPO's) estimator of KL(pi || pi_ref)", default="k3")
    entropy_coef: float = _help("entropy bonus coefficient (0: off)", default=0.0)
    dynamic_sampling: bool = _help("DAPO: drop groups whose rewards are all equal and sample more prompts",
                                   default=False)
    max_sampling_rounds: int = _help("most generation rounds per step with dynamic sampling", default=3)
    overlong_filter: bool = _help("mask truncated completions (hit max_new_tokens) out of the loss", default=False)
    overlong_penalty: float = _help("DAPO soft overlong punishment, reward - up to this much (0: off)", default=0.0)
    overlong_cache_len: int = _help("tokens before max_new_tokens where the overlong penalty starts", default=8)

    def __post_init__(self) -> None:
        if self.advantage_scale not in ADVANTAGE_SCALES:
            raise ValueError(f"grpo.advantage_scale must be one of {ADVANTAGE_SCALES}, got {self.advantage_scale!r}")
        if self.baseline not in BASELINES:
            raise ValueError(f"grpo.baseline must be one of {BASELINES}, got {self.baseline!r}")
        if isinstance(self.min_valid, bool) or not isinstance(self.min_valid, int) or self.min_valid < 1:
            raise ValueError(f"grpo.min_valid must be an integer >= 1 (scored members a group needs), "
                             f"got {self.min_valid!r}")
        if self.advantage not in ADVANTAGE_SOURCES:
            raise ValueError(f"grpo.advantage must be one of {ADVANTAGE_SOURCES}, got {self.advantage!r}")
        if self.advantage != "outcome" and self.baseline == "leave_one_out":
            raise ValueError("grpo.advantage=process/both normalises step scores by the group's step mean; "
                             "set grpo.baseline=mean (or none), or grpo.advantage=outcome for RLOO")
        if self.update not in UPDATES:
            raise ValueError(f"grpo.update must be one of {UPDATES}, got {self.update!r}")
        if self.update == "trpo" and (self.beta or self.entropy_coef or self.ppo_epochs != 1 or self.mini_batch_size):
            raise ValueError("grpo.update=trpo takes one trust-region step on the whole batch with no extra loss "
                             "terms: set grpo.beta=0, grpo.entropy_coef=0, grpo.ppo_epochs=1 and "
                             "grpo.mini_batch_size=0 (algorithm: trpo does)")
        if self.loss_agg not in AGG_MODES:
            raise ValueError(f"grpo.loss_agg must be one of {AGG_MODES}, got {self.loss_agg!r}")
        if self.kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"grpo.kl_estimator must be one of {KL_ESTIMATORS}, got {self.kl_estimator!r}")
        if not (0 <= self.eps_low < 1 and self.eps_high >= 0):
            raise ValueError(f"need 0 <= grpo.eps_low < 1 and grpo.eps_high >= 0; got {self.eps_low}, {self.eps_high}")
        if self.dual_clip_c is not None and self.dual_clip_c <= 1:
            raise ValueError(f"grpo.dual_clip_c must be > 1 (typically 3) or null, got {self.dual_clip_c}")
        if self.ppo_epochs < 1 or self.micro_batch_size < 1 or self.mini_batch_size < 0:
            raise ValueError("need grpo.ppo_epochs >= 1, grpo.micro_batch_size >= 1, grpo.mini_batch_size >= 0")
        if self.max_tokens_per_micro_batch < 0:
            raise ValueError(f"grpo.max_tokens_per_micro_batch must be >= 0 (0: off, micro_batch_size rows per "
                             f"pass), got {self.max_tokens_per_micro_batch}")
        if self.beta < 0 or self.entropy_coef < 0 or self.overlong_penalty < 0:
            raise ValueError("grpo.beta, grpo.entropy_coef and grpo.overlong_penalty must be >= 0")
        if self.max_sampling_rounds < 1 or self.overlong_cache_len < 1:
            raise ValueError("grpo.max_sampling_rounds and grpo.overlong_cache_len must be >= 1")


@dataclass(frozen=True)
class GrpoTrainerConfig:
    model: ModelConfig
    data: DataConfig
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    grpo: GrpoConfig = field(default_factory=GrpoConfig)
    trpo: TrpoConfig = field(default_factory=TrpoConfig)  # read only with grpo.update=trpo
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)
    episodes: EpisodesConfig = field(default_factory=EpisodesConfig)  # multi-turn rollouts (``episodes_config``)
    algorithm: str | None = None  # the preset applied under the explicit values (``presets``)

    def __post_init__(self) -> None:
        if not self.data.train and (not self.episodes.enabled or self.episodes.rows_from == "data"):
            raise ValueError("data.train is required (a JSONL file of prompts, --set data.train=PATH), or "
                             "episodes.environment=NAME to train on an environment's episodes (whose rows are its "
                             "split's unless episodes.rows_from=data)")
        if self.run.eval_every and not self.run.eval_data and not self.episodes.enabled:
            raise ValueError("run.eval_every needs run.eval_data=PATH (held-out prompts)")
        if self.episodes.enabled:
            self._check_episodes()
        if self.sampling.group_size < 2:
            raise ValueError(f"GRPO needs sampling.group_size >= 2 (a group of one has no relative advantage); "
                             f"got {self.sampling.group_size}")
        if self.grpo.dynamic_sampling and self.grpo.max_sampling_rounds < 2:
            raise ValueError("grpo.dynamic_sampling needs grpo.max_sampling_rounds >= 2 to draw more prompts")
        if self.grpo.overlong_penalty and self.grpo.overlong_cache_len > self.sampling.max_new_tokens:
            raise ValueError(f"grpo.overlong_cache_len ({self.grpo.overlong_cache_len}) must be <= "
                             f"sampling.max_new_tokens ({self.sampling.max_new_tokens})")

    def _check_episodes(self) -> None:
        unsupported = [name for name, on in (("grpo.dynamic_sampling", self.grpo.dynamic_sampling),
                                             ("grpo.overlong_penalty", self.grpo.overlong_penalty)) if on]
        if unsupported:
            raise ValueError(f"episodes.environment={self.episodes.environment!r}: {', '.join(unsupported)} "
                             "apply to single-turn rollouts; set them to their defaults (false/0)")
        if self.run.eval_every and self.run.eval_n != 1:
            raise ValueError(f"run.eval_n={self.run.eval_n}: episode evaluation runs one episode per held-out row; "
                             "set run.eval_n=1 (run.eval_k=[1])")
        if not self.reward.embedded and not self.episodes.endpoint:
            raise ValueError("episodes need an environment service: set episodes.endpoint=host:port, or "
                             "reward.embedded=true (the embedded server then serves the environments)")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


TrainerConfig = GrpoTrainerConfig  # the name the GRPO trainer's config had before PPO shared the sections


def load_config(path: str | Path | None, overrides: Sequence[str] = (),
                run_dir: str | None = None) -> GrpoTrainerConfig:
    """YAML file (optional) + ``section.key=value`` overrides (+ ``run_dir``) -> a validated GRPO config."""
    return shared.load_config(path, overrides, run_dir, root=GrpoTrainerConfig)


def describe() -> str:
    """The presets and every key with its default and help text (``trainer-client grpo --help-config``)."""
    return shared.describe(GrpoTrainerConfig)


to_yaml = shared.to_yaml
