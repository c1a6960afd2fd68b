"""JSONL datasets of the trainers (preference pairs, stepwise examples): read with errors that
name ``path:line``, write one JSON object per line."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def iter_rows(path: str | Path, parse: Callable[[Any, str], T], error: type[Exception]) -> Iterator[T]:
    """``parse(row, "path:line")`` for each non-blank line; ``error`` for a line that is not JSON."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
            yield parse(row, f"{path}:{lineno}")


def write_rows(path: str | Path, rows: Iterable[dict]) -> int:
    """Writes one JSON object per line (UTF-8, not escaped); returns how many."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count
