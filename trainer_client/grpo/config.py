"""The GRPO run's configuration: frozen dataclasses, one YAML file, ``--set key=value`` overrides.

    config = load_config("configs/demo_grpo.yaml", overrides=["grpo.beta=0.04", "run.steps=20"],
                         run_dir="runs/grpo")

The YAML file has one mapping per section (``model``, ``data``, ``sampling``, ``reward``,
``grpo``, ``optim``, ``run``); every field carries its help text (``describe()`` prints
them all). Values are checked twice: types when the file and overrides are read, ranges
and combinations in each section's ``__post_init__``. Both raise ``ValueError`` saying
what to change. The loading functions take ``root=`` another root config class, so PPO
(``trainer_client.ppo.config``) shares the sections and the machinery.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from trainer_client.rl.masking import AGG_MODES

DEVICES = ("cpu", "cuda")
DTYPES = ("fp32", "bf16")
KL_ESTIMATORS = ("k1", "k2", "k3")
ADVANTAGE_SCALES = ("group", "batch", "none")


def _help(text: str, **kwargs: Any) -> Any:
    return field(metadata={"help": text}, **kwargs)


@dataclass(frozen=True)
class ModelConfig:
    path: str = _help("local directory of a transformers causal LM and its tokenizer (save_pretrained layout)")
    device: str = _help("cpu or cuda", default="cpu")
    dtype: str = _help("fp32 or bf16 (weights and compute; log-probs are always taken in fp32)", default="fp32")
    gradient_checkpointing: bool = _help("recompute activations in the backward pass (saves memory)", default=False)
    threads: int = _help("torch CPU threads (0: torch's default)", default=0)

    def __post_init__(self) -> None:
        if not self.path:
            raise ValueError("model.path is required: a directory written by save_pretrained")
        if self.device not in DEVICES:
            raise ValueError(f"model.device must be one of {DEVICES}, got {self.device!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"model.dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.threads < 0:
            raise ValueError(f"model.threads must be >= 0 (0: torch's default), got {self.threads}")


@dataclass(frozen=True)
class DataConfig:
    train: str = _help("training prompts, JSONL lines {\"prompt\", \"reference\", \"task\"[, \"id\"]}")
    task: str | None = _help("reward task for lines without a \"task\" field", default=None)
    shuffle: bool = _help("reshuffle the prompts every pass over the file (seeded by run.seed)", default=True)


@dataclass(frozen=True)
class SamplingConfig:
    prompts_per_step: int = _help("groups (prompts) in each training batch", default=8)
    group_size: int = _help("completions sampled per prompt (G)", default=8)
    temperature: float = _help("sampling temperature; log-probs are taken at the same temperature", default=1.0)
    top_p: float = _help("nucleus sampling threshold (1.0: off)", default=1.0)
    top_k: int = _help("top-k sampling (0: off)", default=0)
    max_new_tokens: int = _help("generation budget per completion, in tokens", default=32)
    stop_strings: tuple[str, ...] = _help("extra strings that end a completion (besides eos)", default=())
    generation_batch_prompts: int = _help(
        "prompts per generate() call; each call's groups go to the reward service as soon as it returns, "
        "so scoring overlaps the next call", default=4)

    def __post_init__(self) -> None:
        if self.prompts_per_step < 1 or self.group_size < 1:
            raise ValueError("sampling.prompts_per_step and sampling.group_size must be >= 1; got "
                             f"{self.prompts_per_step}, {self.group_size}")
        if self.temperature <= 0:
            raise ValueError(f"sampling.temperature must be > 0 (RL samples), got {self.temperature}")
        if not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ValueError(f"need 0 < sampling.top_p <= 1 and sampling.top_k >= 0; got {self.top_p}, {self.top_k}")
        if self.max_new_tokens < 1 or self.generation_batch_prompts < 1:
            raise ValueError("sampling.max_new_tokens and sampling.generation_batch_prompts must be >= 1")


@dataclass(frozen=True)
class RewardConfig:
    embedded: bool = _help("start a local reward server process on loopback for the run (stopped at the end)",
                           default=True)
    endpoint: str | None = _help("host:port of a running reward service (set reward.embedded=false)", default=None)
    workers: int = _help("verification worker processes of the embedded server", default=1)
    rewards_config: str | None = _help("rewards YAML for the embedded server (tasks, composites)", default=None)
    timeout_s: float = _help("deadline of one scoring call", default=120.0)
    item_timeout_s: float = _help("per-rollout verifier limit asked of the server (0: server default)", default=0.0)
    startup_timeout_s: float = _help("how long to wait for the embedded server to report SERVING", default=60.0)

    def __post_init__(self) -> None:
        if self.embedded == bool(self.endpoint):
            raise ValueError("set exactly one of reward.embedded=true (start a local server) or "
                             "reward.endpoint=host:port (with reward.embedded=false)")
        if self.endpoint and ":" not in self.endpoint:
            raise ValueError(f"reward.endpoint must be host:port (or a gRPC target such as dns:///h:p), "
                             f"got {self.endpoint!r}")
        if self.workers < 1 or self.timeout_s <= 0 or self.item_timeout_s < 0 or self.startup_timeout_s <= 0:
            raise ValueError("need reward.workers >= 1, reward.timeout_s > 0, reward.item_timeout_s >= 0, "
                             "reward.startup_timeout_s > 0")


@dataclass(frozen=True)
class GrpoConfig:
    advantage_scale: str = _help("divide group-centred rewards by the group std, the batch std, or nothing "
                                 "(Dr. GRPO)", default="group")
    leave_one_out: bool = _help("RLOO baseline: the mean of the other group members", default=False)
    loss_agg: str = _help("token (DAPO), sequence (GRPO) or seq_sum_norm (Dr. GRPO, / max_new_tokens)",
                          default="token")
    eps_low: float = _help("lower clip range of the ratio (1 - eps_low)", default=0.2)
    eps_high: float = _help("upper clip range (1 + eps_high); 0.28 is DAPO's clip-higher", default=0.2)
    dual_clip_c: float | None = _help("dual-clip bound for negative advantages (e.g. 3; null: off)", default=None)
    ppo_epochs: int = _help("optimisation passes over each batch (with the stored old log-probs)", default=1)
    mini_batch_size: int = _help("completions per optimizer step (0: the whole batch, one step per epoch)",
                                 default=0)
    micro_batch_size: int = _help("completions per forward/backward pass (gradient accumulation)", default=16)
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
        if self.beta < 0 or self.entropy_coef < 0 or self.overlong_penalty < 0:
            raise ValueError("grpo.beta, grpo.entropy_coef and grpo.overlong_penalty must be >= 0")
        if self.max_sampling_rounds < 1 or self.overlong_cache_len < 1:
            raise ValueError("grpo.max_sampling_rounds and grpo.overlong_cache_len must be >= 1")


@dataclass(frozen=True)
class OptimConfig:
    lr: float = _help("peak AdamW learning rate", default=1e-5)
    weight_decay: float = _help("AdamW weight decay", default=0.0)
    adam_beta1: float = _help("AdamW beta1", default=0.9)
    adam_beta2: float = _help("AdamW beta2", default=0.99)
    max_grad_norm: float = _help("gradient clipping norm (0: off)", default=1.0)
    warmup_steps: int = _help("linear learning-rate warm-in over this many steps, then constant", default=0)

    def __post_init__(self) -> None:
        if self.lr <= 0 or self.weight_decay < 0 or self.max_grad_norm < 0 or self.warmup_steps < 0:
            raise ValueError("need optim.lr > 0 and optim.weight_decay, optim.max_grad_norm, optim.warmup_steps >= 0")
        if not (0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1):
            raise ValueError("optim.adam_beta1 and optim.adam_beta2 must be in [0, 1)")


@dataclass(frozen=True)
class RunConfig:
    dir: str = _help("run directory: metrics.jsonl, checkpoints/, config.yaml, tensorboard/", default="runs/grpo")
    steps: int = _help("training steps (one batch of prompts_per_step groups each)", default=100)
    max_time_s: float = _help("stop after this many seconds of training (0: no limit)", default=0.0)
    seed: int = _help("seeds sampling, the prompt order and mini-batch shuffling", default=0)
    save_every: int = _help("checkpoint every N steps (0: only at the end)", default=0)
    keep_checkpoints: int = _help("newest checkpoints to keep", default=2)
    resume: bool = _help("continue from the newest checkpoint in run.dir, if there is one", default=True)
    tensorboard: bool = _help("also log to run.dir/tensorboard if the tensorboard package is installed",
                              default=True)
    progress: bool = _help("show a tqdm progress bar", default=True)

    def __post_init__(self) -> None:
        if self.steps < 1 or self.max_time_s < 0 or self.save_every < 0 or self.keep_checkpoints < 1:
            raise ValueError("need run.steps >= 1, run.max_time_s >= 0, run.save_every >= 0, run.keep_checkpoints >= 1")


@dataclass(frozen=True)
class TrainerConfig:
    model: ModelConfig
    data: DataConfig
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    grpo: GrpoConfig = field(default_factory=GrpoConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def __post_init__(self) -> None:
        if self.sampling.group_size < 2:
            raise ValueError(f"GRPO needs sampling.group_size >= 2 (a group of one has no relative advantage); "
                             f"got {self.sampling.group_size}")
        if self.grpo.dynamic_sampling and self.grpo.max_sampling_rounds < 2:
            raise ValueError("grpo.dynamic_sampling needs grpo.max_sampling_rounds >= 2 to draw more prompts")
        if self.grpo.overlong_penalty and self.grpo.overlong_cache_len > self.sampling.max_new_tokens:
            raise ValueError(f"grpo.overlong_cache_len ({self.grpo.overlong_cache_len}) must be <= "
                             f"sampling.max_new_tokens ({self.sampling.max_new_tokens})")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def sections_of(root: type) -> dict[str, type]:
    """Section name -> section dataclass of a root config class (GRPO's ``TrainerConfig``, PPO's, ...)."""
    hints = typing.get_type_hints(root)
    return {f.name: hints[f.name] for f in dataclasses.fields(root)}


SECTIONS: dict[str, type] = sections_of(TrainerConfig)


def _coerce(value: Any, kind: Any, where: str) -> Any:
    """Checks (and gently converts: int -> float, list -> tuple) one value against its type hint."""
    args = typing.get_args(kind)
    if type(None) in args:
        if value is None:
            return None
        kind = next(a for a in args if a is not type(None))
        args = typing.get_args(kind)
    if typing.get_origin(kind) is tuple:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise ValueError(f"{where}: expected a list, got {value!r}")
        return tuple(_coerce(v, args[0], f"{where}[]") for v in items)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is float and isinstance(value, str):  # PyYAML reads 1e-4 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{where}: expected a number, got {value!r}") from None
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{where}: expected {kind.__name__}, got {value!r}")
    return value


def _section(name: str, values: Mapping[str, Any], sections: Mapping[str, type]) -> Any:
    cls = sections[name]
    hints = typing.get_type_hints(cls)
    unknown = set(values) - set(hints)
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)} in section {name!r}; valid keys: {sorted(hints)}")
    kwargs = {k: _coerce(v, hints[k], f"{name}.{k}") for k, v in values.items()}
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field is missing
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in kwargs
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        raise ValueError(f"section {name!r} needs {missing} (e.g. --set {name}.{missing[0]}=...)") from exc


def apply_override(tree: dict[str, Any], assignment: str, sections: Mapping[str, type] = SECTIONS) -> None:
    """``"grpo.beta=0.04"`` -> tree["grpo"]["beta"] = 0.04 (the value is parsed as YAML)."""
    key, sep, raw = assignment.partition("=")
    parts = key.strip().split(".")
    if not sep or len(parts) != 2 or parts[0] not in sections:
        raise ValueError(f"override {assignment!r} must look like section.key=value with section one of "
                         f"{sorted(sections)}")
    tree.setdefault(parts[0], {})[parts[1]] = yaml.safe_load(raw) if raw.strip() else None


def config_from_dict(tree: Mapping[str, Any], root: type = TrainerConfig) -> Any:
    """Sections of ``tree`` -> a validated ``root`` config (``TrainerConfig`` unless another is given)."""
    known = sections_of(root)
    unknown = set(tree) - set(known)
    if unknown:
        raise ValueError(f"unknown section(s) {sorted(unknown)}; valid sections: {sorted(known)}")
    sections = {}
    for name in known:
        values = tree.get(name) or {}
        if not isinstance(values, Mapping):
            raise ValueError(f"section {name!r} must be a mapping of key: value, got {values!r}")
        sections[name] = _section(name, values, known)
    return root(**sections)


def load_config(path: str | Path | None, overrides: Sequence[str] = (), run_dir: str | None = None,
                root: type = TrainerConfig) -> Any:
    """YAML file (optional) + ``section.key=value`` overrides (+ ``run_dir``) -> a validated ``root`` config."""
    tree: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"cannot read config {path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: the top level must be a mapping of sections")
        tree = {k: dict(v) if isinstance(v, Mapping) else v for k, v in loaded.items()}
    for assignment in overrides:
        apply_override(tree, assignment, sections_of(root))
    if run_dir is not None:
        tree.setdefault("run", {})["dir"] = run_dir
    return config_from_dict(tree, root)


def to_yaml(config: Any) -> str:
    """The resolved config (any root config dataclass) as YAML, loadable again with ``load_config``."""
    tree = {k: {kk: list(vv) if isinstance(vv, tuple) else vv for kk, vv in v.items()}
            for k, v in dataclasses.asdict(config).items()}
    return yaml.safe_dump(tree, sort_keys=False)


def describe(root: type = TrainerConfig) -> str:
    """Every key with its default and help text, for ``trainer-client grpo --help-config``."""
    lines = []
    for name, cls in sections_of(root).items():
        lines.append(f"{name}:")
        for f in dataclasses.fields(cls):
            default = "(required)" if f.default is dataclasses.MISSING else f"= {f.default!r}"
            lines.append(f"  {f.name} {default}  -- {f.metadata.get('help', '')}")
    return "\n".join(lines)
