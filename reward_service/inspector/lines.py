"""What one line of a rollouts or results file counts as: its step, group, task, status and reward.

The trainer's own lines (``trainer_client.train.rollout_log``) lead with those fields in a fixed
order, so their heads are read by one regex match and the texts after them are never parsed; any
other line (another key order, a results file from ``reward-service score``) is parsed whole.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from reward_core.contract import RolloutStatus

ROLLOUTS_FILE = "rollouts.jsonl"  # what the trainer writes in its run directory (trainer_client.train.rollout_log)
SCORED = frozenset(s.name for s in RolloutStatus if s.scored)

# The head of a line written by trainer_client.train.rollout_log (json.dumps, its key order): read without
# parsing the texts that follow, so indexing a 100 MB file costs a regex match per line, not a JSON parse.
# Any other line (another order, a results file) is parsed whole.
# Its groups: step, group_id, task, reward, status (the id is matched, not kept).
_JSON_STRING = rb'"([^"\\]*(?:\\.[^"\\]*)*)"'
TRAINER_LINE = re.compile(rb'\{"step": (\d+), "group_id": ' + _JSON_STRING + rb', "id": "(?:[^"\\]*(?:\\.[^"\\]*)*)"'
                          + rb', "task": ' + _JSON_STRING + rb', "reward": (null|-?[0-9][0-9.eE+-]*), "status": '
                          + _JSON_STRING + rb'[,}]')


class InspectorInputError(ValueError):
    """The path given cannot be inspected: missing, empty, or not JSONL; the message says what to pass."""


def resolve_input(path: str | Path) -> Path:
    """A run directory -> its ``rollouts.jsonl``; a file -> itself."""
    p = Path(path)
    if p.is_dir():
        if not (p / ROLLOUTS_FILE).is_file():
            raise InspectorInputError(f"{p} has no {ROLLOUTS_FILE}: the trainer writes one when run.rollouts_sample "
                                      f"> 0 (the default); or pass a results JSONL from `reward-service score`")
        return p / ROLLOUTS_FILE
    if not p.is_file():
        raise InspectorInputError(f"{p}: no such file or directory (pass a run directory, its rollouts.jsonl, "
                                  f"or a results JSONL)")
    return p


def status_of(record: Mapping[str, Any]) -> str:
    status = record.get("status")
    if isinstance(status, str) and status:
        return status.upper().removeprefix("ROLLOUT_STATUS_")
    return "UNSCORED" if "score" not in record and "reward" not in record else "OK"


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def reward_of(record: Mapping[str, Any], status: str) -> float | None:
    """The reward: ``reward`` as written (null: unscored), else ``score`` when the status is a scored one."""
    if "reward" in record:
        return number(record["reward"])
    scored = record.get("scored")
    if not isinstance(scored, bool):
        scored = status in SCORED
    return number(record.get("score")) if scored else None


def group_key(record: Mapping[str, Any]) -> str:
    """Which group a line belongs to: its group id, else its prompt (same prompt, same group), else itself."""
    for name, prefix in (("group_id", "g:"), ("prompt_id", "p:"), ("prompt", "t:")):
        value = record.get(name)
        if isinstance(value, str) and value:
            return prefix + value
    return "r:" + str(record.get("id", ""))


def json_string(raw: bytes) -> str:
    """The text of a JSON string's body (between its quotes)."""
    return json.loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode()


def split_lines(body: bytes, start: int) -> Iterator[tuple[int, bytes]]:
    """(offset in the file, line) of each non-blank line of ``body`` (whole lines, from byte ``start``)."""
    offset = start
    for raw in body.split(b"\n")[:-1]:
        if raw.strip():
            yield offset, raw
        offset += len(raw) + 1


def is_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def parse_line(raw: bytes, path: Path, offset: int) -> dict[str, Any]:
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise InspectorInputError(f"{path}: byte {offset}: not a JSON line ({exc})") from None
    if not isinstance(record, dict):
        raise InspectorInputError(f"{path}: byte {offset}: a line must be a JSON object")
    return record
