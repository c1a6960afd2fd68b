"""A process reward model (PRM) checkpoint served by the reward-model server.

``trainer-client train-prm`` writes a token-classification model, its tokenizer and
``prm_config.json`` (:mod:`reward_core.prm_inputs`: how ``(prompt, steps)`` is encoded and
where each step's label sits). The server tells the two kinds of checkpoint apart by that
file: :func:`load_any_checkpoint` loads a PRM as :class:`LoadedPrm`, anything else as the
Bradley-Terry :class:`~reward_service.rm.checkpoint.LoadedRewardModel`; the holder, reload
and health are the same for both.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reward_core.prm_inputs import PRM_CONFIG_FILE, PRMInputSpec, encode_steps, load_prm, step_scores
from reward_service.rm.checkpoint import CheckpointError, LoadedRewardModel, load_checkpoint

logger = logging.getLogger(__name__)

WARMUP_ITEM = ("2 + 2?", ["2 + 2 = 4", "The answer is 4."])


@dataclass(frozen=True)
class LoadedPrm:
    """A loaded PRM, ready to score steps. Immutable: a reload builds a new one."""

    path: str
    model: Any
    tokenizer: Any
    spec: PRMInputSpec
    device: str
    dtype: str
    load_seconds: float

    @property
    def max_length(self) -> int:
        return self.spec.max_length

    def score_steps(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[list[float | None]]:
        """P(correct) per step of each ``(prompt, steps)``; None for a step cut off by max length."""
        return step_scores(self.model, self.tokenizer, self.spec, items)

    def num_tokens(self, prompt: str, steps: Sequence[str]) -> int:
        return len(encode_steps(self.tokenizer, self.spec, prompt, steps).input_ids)

    def warm_up(self) -> None:
        self.score_steps([WARMUP_ITEM])


def is_prm_checkpoint(path: str | Path) -> bool:
    return (Path(path) / PRM_CONFIG_FILE).is_file()


def load_prm_checkpoint(path: str | Path, device: str = "cpu") -> LoadedPrm:
    """Loads a ``train-prm`` checkpoint; raises CheckpointError naming what is wrong."""
    start = time.perf_counter()
    try:
        model, tokenizer, spec = load_prm(path, device)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise CheckpointError(f"{path}: cannot load the process reward model: {exc}") from exc
    loaded = LoadedPrm(str(path), model, tokenizer, spec, device, "float32", time.perf_counter() - start)
    logger.info("loaded process reward model %s (max_length %d) in %.2fs", path, spec.max_length, loaded.load_seconds)
    return loaded


def load_any_checkpoint(path: str | Path, device: str = "cpu", dtype: str = "float32",
                        max_length: int = 0) -> LoadedRewardModel | LoadedPrm:
    """A PRM when the directory has ``prm_config.json``, else a Bradley-Terry reward model."""
    if is_prm_checkpoint(path):
        return load_prm_checkpoint(path, device)
    return load_checkpoint(path, device=device, dtype=dtype, max_length=max_length)
