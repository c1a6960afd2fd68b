"""Stepwise-supervision rows: JSONL I/O in the format TRL's PRM trainer read.

One example per line: ``{"prompt": str, "completions": [step, ...], "labels": [bool, ...]}``
(one label per step, ``true`` = the step is correct), with an optional ``"meta"`` (anything;
the generator writes the problem's corruption kinds there). This is the "stepwise
supervision" layout of TRL's ``PRMTrainer`` (``trl.experimental.prm`` up to TRL 1.13; it is
gone from TRL 1.16), so sets converted for it load here unchanged. Malformed lines stop
reading with ``path:line: what is wrong``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer_client.jsonl_rows import iter_rows, write_rows


class StepDataError(ValueError):
    """A stepwise file is malformed; the message starts with ``path:line:``."""


@dataclass(frozen=True)
class StepwiseExample:
    prompt: str
    completions: tuple[str, ...]
    labels: tuple[bool, ...]
    meta: Any = None

    def to_json(self) -> dict:
        row: dict[str, Any] = {"prompt": self.prompt, "completions": list(self.completions),
                               "labels": list(self.labels)}
        if self.meta is not None:
            row["meta"] = self.meta
        return row


def parse_example(row: Any, where: str) -> StepwiseExample:
    """Validate one decoded JSON row; ``where`` (``path:line``) prefixes every error."""
    if not isinstance(row, dict):
        raise StepDataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [k for k in ("prompt", "completions", "labels") if k not in row]
    if missing:
        raise StepDataError(f"{where}: missing field(s) {missing}; each line needs prompt, completions, labels")
    prompt, steps, labels = row["prompt"], row["completions"], row["labels"]
    if not isinstance(prompt, str):
        raise StepDataError(f"{where}: 'prompt' must be a string, got {type(prompt).__name__}")
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        raise StepDataError(f"{where}: 'completions' must be a list of strings (one per step)")
    if not isinstance(labels, list) or not all(isinstance(v, bool) for v in labels):
        raise StepDataError(f"{where}: 'labels' must be a list of booleans (true = correct step)")
    if len(steps) != len(labels):
        raise StepDataError(f"{where}: {len(steps)} steps but {len(labels)} labels; give one label per step")
    if not steps:
        raise StepDataError(f"{where}: no steps; a stepwise example needs at least one step")
    return StepwiseExample(prompt, tuple(steps), tuple(labels), row.get("meta"))


def iter_examples(path: str | Path) -> Iterator[StepwiseExample]:
    return iter_rows(path, parse_example, StepDataError)


def read_examples(path: str | Path) -> list[StepwiseExample]:
    """All examples of a JSONL file; StepDataError (``path:line: ...``) on the first bad line."""
    examples = list(iter_examples(path))
    if not examples:
        raise StepDataError(f"{path}: no stepwise examples (empty file)")
    return examples


def write_examples(path: str | Path, examples: Iterable[StepwiseExample]) -> int:
    return write_rows(path, (example.to_json() for example in examples))
