"""JSONL rollouts in, JSONL results out (one line per rollout, same order, same ids)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from reward_core.contract import InvalidRollout, Rollout, RolloutResult


class JsonlError(ValueError):
    """A JSONL input line is malformed; the message names the file and line."""


def read_rollouts(path: str | Path, default_task: str = "") -> list[Rollout]:
    """Reads and validates every line first, so a bad line stops the run before any scoring."""
    rollouts: list[Rollout] = []
    seen: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rollout = Rollout.from_dict(json.loads(line), default_task=default_task)
            except json.JSONDecodeError as exc:
                raise JsonlError(f"{path}:{lineno}: invalid JSON: {exc}") from None
            except InvalidRollout as exc:
                raise JsonlError(f"{path}:{lineno}: {exc}") from None
            if rollout.id in seen:
                raise JsonlError(f"{path}:{lineno}: duplicate id {rollout.id!r} (first on line {seen[rollout.id]})")
            seen[rollout.id] = lineno
            rollouts.append(rollout)
    return rollouts


def write_results(out: TextIO, results: Iterable[RolloutResult], inputs: Sequence[Rollout] | None = None) -> int:
    """Writes one JSON line per result; returns how many were written.

    With ``inputs`` (the rollouts, in the results' order), each line also holds its rollout's fields
    (completion, reference, prompt, metadata, group id): a file ``reward-service rescore`` can re-score.
    """
    n = 0
    for r in results:
        line = {**inputs[n].to_dict(), **r.to_dict()} if inputs is not None else r.to_dict()
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        n += 1
    out.flush()
    return n


@contextlib.contextmanager
def atomic_text_file(path: str | Path) -> Iterator[TextIO]:
    """A text file that appears at ``path`` complete, or not at all.

    Written to a temporary file beside ``path`` and renamed over it when the block ends without
    an exception; on an exception (an unreachable endpoint, Ctrl-C) the temporary file is removed
    and whatever ``path`` held before is left as it was.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
