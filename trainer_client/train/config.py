"""The trainers' shared configuration: sections, one YAML file, ``--set key=value`` overrides.

    config = load_config("configs/demo_grpo.yaml", ["grpo.beta=0.04", "run.steps=20"], "runs/grpo",
                         root=GrpoTrainerConfig)

A root config (GRPO's ``GrpoTrainerConfig`` in ``grpo_config``, PPO's in ``ppo_config``)
is one frozen dataclass per section (``model``, ``data``, ``sampling``, ``reward``, the
algorithm's own, ``optim``, ``run``) plus one top-level key, ``algorithm``: the name of a
preset (``presets``) applied under the explicit values. The sections other than the
algorithm's live here. Every field carries its help text (``describe()`` prints them all).
Values are checked twice: types when the file and overrides are read, ranges and
combinations in each section's ``__post_init__``. Both raise ``ValueError`` saying what
to change.
"""

from __future__ import annotations

import dataclasses
import logging
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from reward_core.dtype_names import canonical_dtype
from trainer_client.train.presets import apply_preset, describe_presets, get_preset

logger = logging.getLogger(__name__)

DEVICES = ("cpu", "cuda")
KL_ESTIMATORS = ("k1", "k2", "k3")
ADVANTAGE_SOURCES = ("outcome", "process", "both")  # what advantages come from: see grpo/ppo configs
ALGORITHM = "algorithm"  # the one top-level key that is not a section


def _help(text: str, **kwargs: Any) -> Any:
    return field(metadata={"help": text}, **kwargs)


CHAT_TEMPLATE_MODES = ("auto", "true", "false")  # data.chat_template


@dataclass(frozen=True)
class LoraSettings:
    """``model.lora``: low-rank adapters on the policy (through ``peft``); the base weights stay frozen."""

    r: int = _help("adapter rank", default=8)
    alpha: float = _help("adapter scale numerator (the update is scaled by alpha / r)", default=16.0)
    dropout: float = _help("dropout on the adapters' input while training (0: none, so the sampler's and the "
                           "update's log-probs agree)", default=0.0)
    target_modules: tuple[str, ...] = _help("module names to adapt, e.g. [q_proj, v_proj], or [all-linear] "
                                            "(empty: peft's default for the architecture)", default=())
    save_merged: bool = _help("each checkpoint also holds merged/: the base with the adapters folded in, a plain "
                              "checkpoint any tool loads (the checkpoint itself holds the adapter only)",
                              default=False)

    def __post_init__(self) -> None:
        if self.r < 1 or self.alpha <= 0 or not 0 <= self.dropout < 1:
            raise ValueError(f"need model.lora.r >= 1, model.lora.alpha > 0 and 0 <= model.lora.dropout < 1; got "
                             f"r={self.r}, alpha={self.alpha}, dropout={self.dropout}")
        if any(not name for name in self.target_modules):
            raise ValueError("model.lora.target_modules must be module names, e.g. [q_proj, v_proj]")


@dataclass(frozen=True)
class ModelConfig:
    path: str = _help("local directory of a transformers causal LM and its tokenizer (save_pretrained layout)")
    device: str = _help("cpu or cuda", default="cpu")
    dtype: str = _help("float32 or bfloat16 (fp32, bf16 also accepted): weights and compute; log-probs are "
                       "always taken in float32", default="float32")
    gradient_checkpointing: bool = _help("recompute activations in the backward pass (saves memory)", default=False)
    threads: int = _help("torch CPU threads (0: torch's default)", default=0)
    lora: LoraSettings | None = _help("train low-rank adapters instead of every weight (pip install "
                                      "'reward-suite[lora]'): a mapping {r, alpha, dropout, target_modules, "
                                      "save_merged}, or --set model.lora.r=16; the KL reference is then the base "
                                      "with the adapters disabled (no second copy). null: full fine-tuning",
                                      default=None)

    def __post_init__(self) -> None:
        if not self.path:
            raise ValueError("model.path is required: a directory written by save_pretrained")
        if self.device not in DEVICES:
            raise ValueError(f"model.device must be one of {DEVICES}, got {self.device!r}")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype, "model.dtype"))
        if self.threads < 0:
            raise ValueError(f"model.threads must be >= 0 (0: torch's default), got {self.threads}")


@dataclass(frozen=True)
class DataConfig:
    train: str = _help("training prompts, JSONL lines {\"prompt\", \"reference\", \"task\"[, \"id\"]} (the "
                       "column names: data.prompt_key, data.reference_key; or a \"messages\" list). Required, "
                       "except for GRPO on episodes (episodes.environment: the rows are the environment's)",
                       default="")
    task: str | None = _help("reward task for lines without a \"task\" field", default=None)
    prompt_key: str = _help("the column holding the prompt text (gsm8k: question); a row without it may have a "
                            "\"messages\" list of {role, content} instead", default="prompt")
    reference_key: str = _help("the column holding the reference: an object, or a string read as "
                               "{\"answer\": string} (gsm8k: answer). With the default a row may have none; "
                               "with another name every row needs it", default="reference")
    chat_template: str = _help("auto: render prompts with the tokenizer's chat template (one user turn + the "
                               "generation prompt) when it has one; true: the same, and refuse a tokenizer "
                               "without one; false: the prompt text as is (\"messages\" rows need a template)",
                               default="auto")
    shuffle: bool = _help("reshuffle the prompts every pass over the file (seeded by run.seed)", default=True)
    check_tasks: bool = _help("before step 0, refuse rows whose task the reward service does not serve or whose "
                              "reference lacks a field the task requires (false: they train as unscored)",
                              default=True)

    def __post_init__(self) -> None:
        if not self.prompt_key or not self.reference_key:
            raise ValueError("data.prompt_key and data.reference_key must be column names, e.g. "
                             "data.prompt_key=question data.reference_key=answer for gsm8k")
        if self.prompt_key == self.reference_key:
            raise ValueError(f"data.prompt_key and data.reference_key are both {self.prompt_key!r}: the prompt "
                             "and its reference must be different columns")
        if self.chat_template not in CHAT_TEMPLATE_MODES:
            raise ValueError(f"data.chat_template must be one of {CHAT_TEMPLATE_MODES}, got {self.chat_template!r}")


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
    dir: str = _help("run directory: metrics.jsonl, rollouts.jsonl, checkpoints/, config.yaml, tensorboard/",
                     default="runs/grpo")
    steps: int = _help("training steps (one batch of prompts_per_step groups each)", default=100)
    max_time_s: float = _help("stop after this many seconds of training (0: no limit)", default=0.0)
    seed: int = _help("seeds sampling, the prompt order and mini-batch shuffling", default=0)
    save_every: int = _help("checkpoint every N steps (0: only at the end)", default=0)
    keep_checkpoints: int = _help("newest checkpoints to keep", default=2)
    resume: bool = _help("continue from the newest checkpoint in run.dir, if there is one", default=True)
    allow_config_change: bool = _help("let a resume change the config the run ran with (else refused, naming the "
                                      "changed keys; CLI: --allow-config-change)", default=False)
    tensorboard: bool = _help("also log to run.dir/tensorboard if the tensorboard package is installed",
                              default=True)
    progress: bool = _help("show a tqdm progress bar", default=True)
    wandb: bool = _help("also log to Weights & Biases (pip install 'reward-suite[wandb]'; WANDB_MODE=offline "
                        "needs no network)", default=False)
    wandb_project: str = _help("Weights & Biases project (default: the WANDB_PROJECT variable, else reward-suite)",
                               default="")
    wandb_name: str = _help("Weights & Biases run name (default: the run directory's name)", default="")
    rollouts_sample: int = _help("groups per step written to run.dir/rollouts.jsonl with their completions, "
                                 "rewards, statuses and explanations (reward-service inspect RUN_DIR; 0: off)",
                                 default=4)
    rollouts_max_mb: float = _help("rollouts.jsonl stops growing at this size (logged once)", default=100.0)
    eval_every: int = _help("evaluate on run.eval_data every N steps and at the end, logged as eval/* "
                            "(trainer-client eval's metrics; 0: off)", default=0)
    eval_data: str = _help("held-out prompts for run.eval_every (the data.train format); required, except for "
                           "GRPO on episodes (default: the environment's episodes.eval_split)", default="")
    eval_n: int = _help("completions per held-out prompt", default=1)
    eval_k: tuple[int, ...] = _help("the k of eval/pass@k and eval/maj@k, each <= run.eval_n", default=(1,))
    eval_temperature: float = _help("eval sampling temperature (0: greedy, needs run.eval_n=1)", default=0.0)
    eval_max_new_tokens: int = _help("eval generation budget (0: sampling.max_new_tokens)", default=0)
    eval_max_prompts: int = _help("evaluate the first N held-out prompts only (0: all)", default=0)
    eval_correct_at: float = _help("an eval sample is correct when its reward is at least this", default=1.0)

    def __post_init__(self) -> None:
        if self.steps < 1 or self.max_time_s < 0 or self.save_every < 0 or self.keep_checkpoints < 1:
            raise ValueError("need run.steps >= 1, run.max_time_s >= 0, run.save_every >= 0, run.keep_checkpoints >= 1")
        if self.eval_every < 0 or self.eval_max_new_tokens < 0 or self.eval_max_prompts < 0 or self.eval_n < 1:
            raise ValueError("need run.eval_every, run.eval_max_new_tokens, run.eval_max_prompts >= 0 and "
                             "run.eval_n >= 1")
        if not self.eval_k or any(k < 1 or k > self.eval_n for k in self.eval_k):
            raise ValueError(f"every run.eval_k must be in 1..run.eval_n={self.eval_n}, got {list(self.eval_k)}")
        if self.eval_temperature < 0 or (self.eval_temperature == 0 and self.eval_n != 1):
            raise ValueError(f"run.eval_temperature must be >= 0, and 0 (greedy) needs run.eval_n=1 (got "
                             f"{self.eval_temperature}, {self.eval_n}): greedy samples would all be the same")
        if self.rollouts_sample < 0 or self.rollouts_max_mb <= 0:
            raise ValueError(f"need run.rollouts_sample >= 0 (0: no rollouts.jsonl) and run.rollouts_max_mb > 0; "
                             f"got {self.rollouts_sample}, {self.rollouts_max_mb}")


def sections_of(root: type) -> dict[str, type]:
    """Section name -> section dataclass of a root config class (its dataclass-typed fields)."""
    hints = typing.get_type_hints(root)
    return {f.name: hints[f.name] for f in dataclasses.fields(root) if dataclasses.is_dataclass(hints[f.name])}


def _coerce(value: Any, kind: Any, where: str) -> Any:
    """Checks (and gently converts: int -> float, list -> tuple) one value against its type hint."""
    args = typing.get_args(kind)
    if type(None) in args:
        if value is None:
            return None
        kind = next(a for a in args if a is not type(None))
        args = typing.get_args(kind)
    if dataclasses.is_dataclass(kind):  # a nested group of keys (model.lora)
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected a mapping of key: value, got {value!r}")
        return _build(kind, value, where)
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
    if kind is str and isinstance(value, bool):  # YAML reads true/false as booleans (data.chat_template)
        return "true" if value else "false"
    if kind is str and isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{where}: expected {kind.__name__}, got {value!r}")
    return value


def _build(cls: type, values: Mapping[str, Any], name: str) -> Any:
    """A section (or nested group) dataclass from its key: value mapping, each value checked."""
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


def _section(name: str, values: Mapping[str, Any], sections: Mapping[str, type]) -> Any:
    return _build(sections[name], values, name)


def apply_override(tree: dict[str, Any], assignment: str, sections: Mapping[str, type]) -> None:
    """``"grpo.beta=0.04"`` -> tree["grpo"]["beta"] = 0.04; ``"algorithm=dapo"`` -> tree["algorithm"] (YAML values);
    ``"model.lora.r=16"`` -> tree["model"]["lora"]["r"] = 16 (a nested group of keys)."""
    key, sep, raw = assignment.partition("=")
    parts = key.strip().split(".")
    value = yaml.safe_load(raw) if raw.strip() else None
    if sep and parts == [ALGORITHM]:
        tree[ALGORITHM] = value
        return
    if not sep or len(parts) not in (2, 3) or parts[0] not in sections:
        raise ValueError(f"override {assignment!r} must look like section.key=value with section one of "
                         f"{sorted(sections)} (or algorithm=NAME)")
    section = tree.setdefault(parts[0], {})
    if len(parts) == 3:
        group = section.get(parts[1])
        section[parts[1]] = group = dict(group) if isinstance(group, Mapping) else {}
        group[parts[2]] = value
    else:
        section[parts[1]] = value


def config_from_dict(tree: Mapping[str, Any], root: type) -> Any:
    """Sections of ``tree`` (+ ``algorithm``: a preset under them) -> a validated ``root`` config."""
    known = sections_of(root)
    algorithm = tree.get(ALGORITHM)
    if algorithm is not None:
        if not isinstance(algorithm, str):
            raise ValueError(f"algorithm must be a preset name, got {algorithm!r}")
        preset = get_preset(algorithm)
        foreign = set(preset.values) - set(known)
        if foreign:
            raise ValueError(f"algorithm {algorithm!r} runs with `trainer-client {preset.trainer}` "
                             f"(it sets {sorted(foreign)}, which this trainer has not)")
        tree, overridden = apply_preset(tree, algorithm)
        if overridden:
            logger.warning("algorithm %s: the config's own values win over the preset's: %s", algorithm,
                           ", ".join(overridden))
    unknown = set(tree) - set(known) - {ALGORITHM}
    if unknown:
        raise ValueError(f"unknown section(s) {sorted(unknown)}; valid sections: {sorted(known)} and {ALGORITHM}")
    sections: dict[str, Any] = {}
    for name in known:
        values = tree.get(name) or {}
        if not isinstance(values, Mapping):
            raise ValueError(f"section {name!r} must be a mapping of key: value, got {values!r}")
        sections[name] = _section(name, values, known)
    return root(**sections, **({ALGORITHM: algorithm} if algorithm is not None else {}))


def _read_tree(path: str | Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: the top level must be a mapping of sections")
    return {k: dict(v) if isinstance(v, Mapping) else v for k, v in loaded.items()}


def trainer_of(path: str | Path | None, overrides: Sequence[str] = ()) -> str:
    """Which trainer (``"grpo"`` or ``"ppo"``) the config's ``algorithm`` runs with; ``"grpo"`` without one."""
    algorithm = _read_tree(path).get(ALGORITHM)
    for assignment in overrides:
        key, sep, raw = assignment.partition("=")
        if sep and key.strip() == ALGORITHM:
            algorithm = yaml.safe_load(raw) if raw.strip() else None
    if algorithm is None:
        return "grpo"
    if not isinstance(algorithm, str):
        raise ValueError(f"algorithm must be a preset name, got {algorithm!r}")
    return get_preset(algorithm).trainer


def load_config(path: str | Path | None, overrides: Sequence[str] = (), run_dir: str | None = None, *,
                root: type) -> Any:
    """YAML file (optional) + ``section.key=value`` overrides (+ ``run_dir``) -> a validated ``root`` config."""
    tree = _read_tree(path)
    for assignment in overrides:
        apply_override(tree, assignment, sections_of(root))
    if run_dir is not None:
        tree.setdefault("run", {})["dir"] = run_dir
    return config_from_dict(tree, root)


def to_yaml(config: Any) -> str:
    """The resolved config (any root config dataclass) as YAML, loadable again with ``load_config``."""
    return yaml.safe_dump(_plain(dataclasses.asdict(config)), sort_keys=False)


def _plain(value: Any) -> Any:
    """Tuples as lists, at any depth (YAML's safe dumper writes no tuples)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def describe(root: type) -> str:
    """The presets, then every key with its default and help text (``trainer-client grpo --help-config``)."""
    lines = [describe_presets(), ""]
    lines.append(f"{ALGORITHM} = None  -- a preset name from the list above (null: the field defaults)")
    for name, cls in sections_of(root).items():
        lines.append(f"{name}:")
        for f in dataclasses.fields(cls):
            default = "(required)" if f.default is dataclasses.MISSING else f"= {f.default!r}"
            lines.append(f"  {f.name} {default}  -- {f.metadata.get('help', '')}")
            group = _nested_group(cls, f.name)
            for sub in dataclasses.fields(group) if group is not None else ():
                lines.append(f"    {f.name}.{sub.name} = {sub.default!r}  -- {sub.metadata.get('help', '')}")
    return "\n".join(lines)


def _nested_group(cls: type, name: str) -> type | None:
    """The dataclass of a nested group field (``model.lora``), else None."""
    kind = typing.get_type_hints(cls)[name]
    candidates = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
    return next((c for c in candidates if dataclasses.is_dataclass(c)), None)
