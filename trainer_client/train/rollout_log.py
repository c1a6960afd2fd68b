"""``RUN_DIR/rollouts.jsonl``: a sample of each step's completions with their verdicts, to look at later.

Metrics say *that* the reward moved; this file says *why*: per step, the first
``run.rollouts_sample`` groups sampled (every member: prompt, completion, reward, status,
error, the verifier's explanation and, for groups trained on, the advantage), one JSON line
per rollout. Long texts are cut (``…[+N chars]`` says how much), and the file stops growing at
``run.rollouts_max_mb`` (logged once). ``reward-service inspect RUN_DIR`` serves it as a web
page. On resume, lines of steps after the checkpoint are dropped, as in ``metrics.jsonl``.
Which groups are written is decided without random numbers, so logging never changes a run.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # run_logging (and `trainer-client plot`) import this module without torch
    import torch

    from reward_core.clients import GroupResult
    from trainer_client.train.collect import StepData

logger = logging.getLogger(__name__)

ROLLOUTS_FILE = "rollouts.jsonl"
PROMPT_CHARS = 2_000
COMPLETION_CHARS = 8_000
EXPLANATION_CHARS = 4_000
ERROR_CHARS = 2_000
REFERENCE_CHARS = 1_000


def clip(text: str, cap: int) -> str:
    """``text`` cut to ``cap`` characters, saying how many were left out."""
    return text if len(text) <= cap else f"{text[:cap]}…[+{len(text) - cap} chars]"


def _reference(reference: Mapping[str, Any]) -> Any:
    """The reference as given when it is short, else its JSON text cut to ``REFERENCE_CHARS``."""
    text = json.dumps(dict(reference), ensure_ascii=False, default=str)
    return dict(reference) if len(text) <= REFERENCE_CHARS else clip(text, REFERENCE_CHARS)


def _finite(value: float | None) -> float | None:
    """A float JSON can carry: NaN and infinities become null."""
    return value if value is None or math.isfinite(value) else None


def completion_advantages(advantages: torch.Tensor, loss_mask: torch.Tensor) -> list[float | None]:
    """One advantage per completion row: the value ([N]) or the mean over its trained tokens ([N, T]).

    None where the row takes no part in the loss (unscored, or filtered out as overlong).
    """
    trained = loss_mask.any(dim=1)
    if advantages.dim() == 2:
        mask = loss_mask.to(advantages.dtype)
        values = (advantages * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
    else:
        values = advantages
    return [float(v) if ok else None for v, ok in zip(values.detach().float().cpu().tolist(), trained.tolist())]


def step_records(step: int, data: StepData, groups: int,
                 advantages: list[float | None] | None = None) -> list[dict[str, Any]]:
    """The JSON lines of one step: every member of the first ``groups`` groups sampled.

    ``advantages`` holds one value per row of ``data.rollouts`` (the kept groups, in order);
    a group that was sampled but not kept (dynamic sampling) has ``"kept": false`` and no advantage.
    """
    kept_at = {id(result): i for i, result in enumerate(data.results)}
    g = data.sampled.group_size
    records: list[dict[str, Any]] = []
    for index, group in enumerate(data.sampled_results[:groups]):
        row = data.sampled_rows[index] if index < len(data.sampled_rows) else None
        kept = kept_at.get(id(group))
        records += _group_records(step, group, row, data.sampled.texts[index * g:(index + 1) * g], kept,
                                  None if kept is None or advantages is None else advantages[kept * g:(kept + 1) * g])
    return records


def _group_records(step: int, group: GroupResult, row: Any, texts: list[str], kept: int | None,
                   advantages: list[float | None] | None) -> list[dict[str, Any]]:
    records = []
    for k, (result, text) in enumerate(zip(group.results, texts)):
        records.append({  # the short fields first, in this order: the inspector indexes a line by its head
            "step": step,
            "group_id": group.group_id,
            "id": result.id,
            "task": result.task or (row.task if row else ""),
            "reward": _finite(result.reward),
            "status": result.status.name,
            "advantage": _finite(advantages[k]) if advantages is not None else None,
            "kept": kept is not None,
            "prompt_id": row.id if row else "",
            "prompt": clip(row.prompt, PROMPT_CHARS) if row else "",
            "reference": _reference(row.reference) if row else None,
            "completion": clip(text, COMPLETION_CHARS),
            "extracted": clip(result.extracted, ERROR_CHARS),
            "error": clip(result.error, ERROR_CHARS),
            "explanation": clip(getattr(result, "explanation", "") or "", EXPLANATION_CHARS),
            "components": {name: _finite(float(v)) for name, v in result.components.items()},
        })
    return records


class RolloutLog:
    """Appends rollout lines to ``RUN_DIR/rollouts.jsonl`` until the file reaches ``max_mb``."""

    def __init__(self, run_dir: str | Path, max_mb: float, resume_step: int | None = None) -> None:
        self.path = Path(run_dir) / ROLLOUTS_FILE
        self.max_bytes = int(max_mb * 1024 * 1024)
        _drop_after(self.path, resume_step)
        self._file = open(self.path, "ab")
        self._size = self._file.tell()
        self.full = False

    def write(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Writes whole lines while they fit under the cap; the first line that does not stops the log."""
        if self.full:
            return
        for record in records:
            line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
            if self._size + len(line) > self.max_bytes:
                self.full = True
                logger.warning("%s reached run.rollouts_max_mb=%g: no more rollouts are written this run "
                               "(raise the cap or lower run.rollouts_sample)", self.path, self.max_bytes / 2**20)
                break
            self._file.write(line)
            self._size += len(line)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _drop_after(path: Path, resume_step: int | None) -> None:
    """A fresh run starts an empty file; a resumed one keeps the lines of steps up to ``resume_step``."""
    if resume_step is None or not path.is_file():
        path.write_bytes(b"")
        return
    tmp = path.with_name(path.name + ".part")
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        for line in src:
            try:
                keep = int(json.loads(line).get("step", 0)) <= resume_step
            except (ValueError, AttributeError):
                keep = False  # a line cut short when the run was killed
            if keep:
                dst.write(line)
    os.replace(tmp, path)
