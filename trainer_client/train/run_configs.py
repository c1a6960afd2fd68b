"""Every config a run ran with, and the refusal to resume it with another one.

A run directory keeps ``config.yaml``, the config its first step ran with (written once, by a fresh
start), and ``config.resume-<step>.yaml`` for each resume, named for the step it continued from.
A resume compares its config with the newest of those: keys that change what is trained (the
model, data, rewards, algorithm, optimizer, seed...) must be equal, or the resume is refused with
:class:`ConfigChangeError` naming each changed key, unless ``run.allow_config_change`` (the CLI's
``--allow-config-change``) accepts them (logged). Keys that only say how long, where, and how the
run is watched (:data:`FREE_KEYS`: ``run.steps`` to extend a run, logging switches) may change.

Read before any model is loaded, so a refused resume costs nothing.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from trainer_client.errors import ConfigChangeError
from trainer_client.train.checkpointing import TRAINER_STATE

logger = logging.getLogger(__name__)

FIRST_CONFIG = "config.yaml"
_RESUME = re.compile(r"^config\.resume-(\d+)\.yaml$")

#: Keys a resume may change without --allow-config-change: how long, where, and how the run is watched.
FREE_KEYS = frozenset({
    "run.steps", "run.max_time_s", "run.dir", "run.resume", "run.allow_config_change", "run.progress",
    "run.tensorboard", "run.wandb", "run.wandb_project", "run.wandb_name", "run.rollouts_sample",
    "run.rollouts_max_mb", "run.save_every", "run.keep_checkpoints", "model.threads",
    # held-out evaluation samples in a forked RNG: it watches the run without changing it
    "run.eval_every", "run.eval_data", "run.eval_n", "run.eval_k", "run.eval_temperature", "run.eval_max_new_tokens",
    "run.eval_max_prompts", "run.eval_correct_at", "episodes.eval_split", "episodes.eval_rows",
})


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"a.b": 1}`` (lists and scalars are leaves)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Keys (dotted) of both whose value differs, outside FREE_KEYS, with (before, after). A key only one
    side has is a setting another version of the trainer added or dropped, not a change of this run."""
    old, new = flatten(before), flatten(after)
    return {key: (old[key], new[key]) for key in sorted(old.keys() & new.keys())
            if key not in FREE_KEYS and old[key] != new[key]}


def config_history(run_dir: str | Path) -> list[tuple[int, Path]]:
    """(step it started at, path) of every config the run kept, oldest first."""
    root = Path(run_dir)
    found = [(0, root / FIRST_CONFIG)] if (root / FIRST_CONFIG).is_file() else []
    if root.is_dir():
        found += sorted((int(m.group(1)), p) for p in root.iterdir() if (m := _RESUME.match(p.name)))
    return found


def _checkpoint_step(checkpoint: Path) -> int:
    return int(json.loads((checkpoint / TRAINER_STATE).read_text(encoding="utf-8"))["step"])


def keep_config(run_dir: str | Path, config_yaml: str, checkpoint: Path | None, allow_change: bool) -> Path:
    """Checks a resume's config against the run's newest one and keeps it; returns the file written.

    A fresh start (``checkpoint`` None) writes ``config.yaml`` and drops an earlier run's resume
    configs; a resume from ``checkpoint`` writes ``config.resume-<step>.yaml`` after refusing
    (ConfigChangeError) a change outside FREE_KEYS unless ``allow_change``.
    """
    root = Path(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    if checkpoint is None:
        for _, path in config_history(root):
            if path.name != FIRST_CONFIG:  # an earlier run's resumes
                path.unlink()
        (root / FIRST_CONFIG).write_text(config_yaml, encoding="utf-8")
        return root / FIRST_CONFIG
    step = _checkpoint_step(checkpoint)
    history = config_history(root)
    if history:
        ran_with = history[-1][1]
        changes = changed_keys(yaml.safe_load(ran_with.read_text(encoding="utf-8")) or {},
                               yaml.safe_load(config_yaml) or {})
        if changes:
            listed = "; ".join(f"{key}: {old!r} -> {new!r}" for key, (old, new) in changes.items())
            if not allow_change:
                raise ConfigChangeError(
                    f"{root} ran with another config ({ran_with.name}); resuming at step {step} would change "
                    f"{listed}. Resume with the same config, accept the change with --allow-config-change "
                    f"(--set run.allow_config_change=true), or start a new run.dir")
            logger.warning("resuming at step %d with a changed config (allowed): %s", step, listed)
    else:
        logger.warning("%s has a checkpoint but no %s: keeping this resume's config only", root, FIRST_CONFIG)
    path = root / f"config.resume-{step}.yaml"
    path.write_text(config_yaml, encoding="utf-8")
    return path
