"""Reading one instruction's kwargs strictly: what a reference row gives, checked and typed.

IFEval fills a missing argument with a *random* one when it builds an instruction; a reward must
not, so every argument a check uses is required here and a missing or malformed one raises
:class:`BadInstruction` (the task answers INVALID_REFERENCE, unscored). ``None`` values are
ignored as IFEval's callers do (``{k: v for k, v in kwargs.items() if v is not None}``); numbers
may arrive as floats (a protobuf ``Struct`` has no integers) and are accepted when integral.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

RELATIONS = ("less than", "at least")


class BadInstruction(ValueError):
    """An instruction of the reference is unknown or its arguments are missing or malformed."""


class UnsupportedInstruction(LookupError):
    """A known instruction this verifier does not implement: the task's failure, never the reference's."""


class Args:
    """The non-None kwargs of one instruction; each getter marks its key used, ``done`` rejects the rest."""

    def __init__(self, instruction_id: str, kwargs: Mapping[str, Any] | None) -> None:
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise BadInstruction(f"{instruction_id}: kwargs must be an object, got {type(kwargs).__name__}")
        self.instruction_id = instruction_id
        self._values = {str(k): v for k, v in (kwargs or {}).items() if v is not None}
        self._used: set[str] = set()

    def _get(self, name: str) -> Any:
        self._used.add(name)
        if name not in self._values:
            raise BadInstruction(f"{self.instruction_id}: needs argument {name!r}; got {sorted(self._values)}")
        return self._values[name]

    def has(self, name: str) -> bool:
        return name in self._values

    def integer(self, name: str, minimum: int | None = None) -> int:
        value = self._get(name)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadInstruction(f"{self.instruction_id}: {name} must be an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise BadInstruction(f"{self.instruction_id}: {name} must be at least {minimum}, got {value}")
        return value

    def number(self, name: str, minimum: float | None = None) -> float:
        """A finite int or float (IFBench's percentages), as given."""
        value = self._get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise BadInstruction(f"{self.instruction_id}: {name} must be a finite number, got {value!r}")
        if minimum is not None and value < minimum:
            raise BadInstruction(f"{self.instruction_id}: {name} must be at least {minimum}, got {value}")
        return value

    def text(self, name: str, *, non_empty: bool = False) -> str:
        value = self._get(name)
        if not isinstance(value, str):
            raise BadInstruction(f"{self.instruction_id}: {name} must be a string, got {value!r}")
        if non_empty and not value:
            raise BadInstruction(f"{self.instruction_id}: {name} must not be empty")
        return value

    def texts(self, name: str) -> list[str]:
        value = self._get(name)
        if isinstance(value, str) or not isinstance(value, Sequence) or not value \
                or not all(isinstance(v, str) for v in value):
            raise BadInstruction(f"{self.instruction_id}: {name} must be a non-empty list of strings, got {value!r}")
        return list(value)

    def relation(self, name: str, allowed: Sequence[str] = RELATIONS) -> str:
        value = self.text(name)
        if value not in allowed:
            raise BadInstruction(f"{self.instruction_id}: {name} must be one of {list(allowed)}, got {value!r}")
        return value

    def ignore_others(self) -> None:
        """Accept the arguments not read (the reference's builder takes ``**kwargs`` and drops them)."""
        self._used.update(self._values)

    def done(self) -> None:
        """Raises BadInstruction when the kwargs hold a (non-None) argument the instruction does not take."""
        extra = sorted(set(self._values) - self._used)
        if extra:
            raise BadInstruction(f"{self.instruction_id}: unexpected argument(s) {extra}")


def compile_pattern(instruction_id: str, pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A regex from reference text (IFEval uses keywords, markers and splitters as regexes, unescaped)."""
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise BadInstruction(f"{instruction_id}: {pattern!r} is not a valid regular expression: {exc}") from None
