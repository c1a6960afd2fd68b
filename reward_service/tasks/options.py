"""Checked task options: each check names the task and the option that is wrong, and what it takes."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from reward_service.task_api import InvalidTaskOptions


def number_option(task: str, name: str, value: Any) -> float:
    """A finite number (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidTaskOptions(f"task {task!r}: option {name!r} must be a finite number, got {value!r}")
    return float(value)


def int_option(task: str, name: str, value: Any, minimum: int) -> int:
    """An integer >= ``minimum`` (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidTaskOptions(f"task {task!r}: option {name!r} must be an integer >= {minimum}, got {value!r}")
    return value


def choice_option(task: str, name: str, value: Any, allowed: Collection[Any]) -> Any:
    """One of ``allowed``."""
    if value not in allowed:
        raise InvalidTaskOptions(f"task {task!r}: option {name!r} must be one of {list(allowed)}, got {value!r}")
    return value


def bool_option(task: str, name: str, value: Any) -> bool:
    """True or false (not 0/1 or a string)."""
    if not isinstance(value, bool):
        raise InvalidTaskOptions(f"task {task!r}: option {name!r} must be true or false, got {value!r}")
    return value


def strings_option(task: str, name: str, value: Any) -> tuple[str, ...]:
    """A non-empty list of non-empty strings (one string is a list of one)."""
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items or not all(isinstance(s, str) and s for s in items):
        raise InvalidTaskOptions(f"task {task!r}: option {name!r} must be a non-empty list of non-empty "
                                 f"strings, got {value!r}")
    return tuple(items)
