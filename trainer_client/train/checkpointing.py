"""Checkpoints for exact resume: weights, optimizer, scheduler, trainer state and every RNG.

Layout, one directory per saved step (``RUN_DIR/checkpoints/step-000040/``):

- the model and tokenizer (``save_pretrained``, safetensors): loadable on their own with
  ``AutoModelForCausalLM.from_pretrained``;
- ``optimizer.pt``: optimizer and LR-scheduler state dicts;
- ``rng_state.pt``: python ``random``, numpy and torch (CPU and CUDA) generator states;
- ``trainer_state.json``: the step and the prompt sampler's position;
- whatever else a trainer writes through ``write_extra`` (PPO: its critic in ``critic/``).

A checkpoint is written to a temporary directory and renamed into place, so a crash
mid-save never leaves a half checkpoint that resume would pick up.
"""

from __future__ import annotations

import json
import logging
import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

logger = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
TRAINER_STATE = "trainer_state.json"
OPTIMIZER_STATE = "optimizer.pt"
RNG_STATE = "rng_state.pt"
_NAME = re.compile(r"^step-(\d+)$")


def rng_state() -> dict[str, Any]:
    """The global RNG states as plain tuples/lists/tensors (``torch.load(weights_only=True)``-safe)."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": [name, keys.tolist(), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def checkpoint_dirs(run_dir: str | Path) -> list[Path]:
    """Complete checkpoints in ``run_dir``, oldest first."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir()
             if (m := _NAME.match(p.name)) and (p / TRAINER_STATE).is_file()]
    return [p for _, p in sorted(found)]


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    dirs = checkpoint_dirs(run_dir)
    return dirs[-1] if dirs else None


def save_checkpoint(run_dir: str | Path, step: int, model: Any, tokenizer: Any, optimizer: torch.optim.Optimizer,
                    scheduler: Any, trainer_state: dict[str, Any], keep: int = 2,
                    write_extra: Callable[[Path], None] | None = None) -> Path:
    """Writes ``checkpoints/step-NNNNNN`` atomically and keeps only the ``keep`` newest.

    ``write_extra(dir)`` adds more files to the checkpoint before it is renamed into place.
    """
    root = Path(run_dir) / CHECKPOINTS
    final = root / f"step-{step:06d}"
    tmp = root / f".tmp-step-{step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / OPTIMIZER_STATE)
    torch.save(rng_state(), tmp / RNG_STATE)
    if write_extra is not None:
        write_extra(tmp)
    (tmp / TRAINER_STATE).write_text(json.dumps({"step": step, **trainer_state}, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in checkpoint_dirs(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    logger.info("saved checkpoint %s", final)
    return final


def load_training_state(checkpoint: str | Path, optimizer: torch.optim.Optimizer, scheduler: Any) -> dict[str, Any]:
    """Restores optimizer and scheduler in place; returns trainer_state.json. RNGs: ``restore_rng``."""
    path = Path(checkpoint)
    states = torch.load(path / OPTIMIZER_STATE, map_location="cpu", weights_only=True)
    optimizer.load_state_dict(states["optimizer"])
    scheduler.load_state_dict(states["scheduler"])
    return json.loads((path / TRAINER_STATE).read_text(encoding="utf-8"))


def restore_rng(checkpoint: str | Path) -> None:
    """Sets every global RNG to its state at save time. Call it last, after all model loading."""
    set_rng_state(torch.load(Path(checkpoint) / RNG_STATE, map_location="cpu", weights_only=True))
