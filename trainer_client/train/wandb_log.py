"""Weights & Biases as a third mirror of a run's metrics, beside ``metrics.jsonl`` and TensorBoard.

Off by default (``run.wandb``); needs the ``wandb`` extra (``pip install 'reward-suite[wandb]'``),
checked before any model loads (:func:`check_wandb`), so a missing package is a clear error, not a
crash at the first step. ``WANDB_MODE=offline`` works without a network (``wandb sync`` uploads
later); ``WANDB_API_KEY``, ``WANDB_ENTITY`` and the rest of wandb's own variables apply as usual.
The wandb run's id is kept in ``RUN_DIR/wandb-run-id``, so a resumed run continues the same
wandb run. Its files go under ``RUN_DIR/wandb/``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reward_core.extras import require_extra

RUN_ID_FILE = "wandb-run-id"
DEFAULT_PROJECT = "reward-suite"


def check_wandb() -> None:
    """Raises MissingExtra (naming ``reward-suite[wandb]``) when wandb is not installed."""
    require_extra("wandb", "run.wandb=true")


def open_wandb(run_dir: str | Path, project: str, name: str, config: Mapping[str, Any]) -> Any:
    """A started wandb run for ``run_dir`` (the same one again on resume), with ``config`` recorded."""
    check_wandb()
    import wandb

    root = Path(run_dir)
    id_file = root / RUN_ID_FILE
    run_id = id_file.read_text(encoding="utf-8").strip() if id_file.is_file() else uuid.uuid4().hex[:12]
    id_file.write_text(run_id + "\n", encoding="utf-8")
    return wandb.init(project=project or os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT,
                      name=name or root.resolve().name, id=run_id, resume="allow", dir=str(root),
                      config=dict(config))
