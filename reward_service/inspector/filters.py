"""What a query keeps: a status, task, step and reward filter, read from the page's query string."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Filters:
    """What a query keeps: rollouts matching all given fields; a group shows if any member matches."""

    statuses: frozenset[str] = frozenset()
    tasks: frozenset[str] = frozenset()
    step_min: int | None = None
    step_max: int | None = None
    reward_min: float | None = None
    reward_max: float | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Filters:
        """``status=ERROR,TIMEOUT&task=gsm8k&step=3`` or ``step=10-20``, ``min_reward=0&max_reward=0.5``."""
        def names(key: str, upper: bool) -> frozenset[str]:
            raw = query.get(key, "")
            return frozenset((n.strip().upper() if upper else n.strip()) for n in raw.split(",") if n.strip())

        def number(key: str) -> float | None:
            raw = query.get(key, "").strip()
            if not raw:
                return None
            try:
                return float(raw)
            except ValueError:
                raise ValueError(f"{key} must be a number, got {raw!r}") from None

        step_min = step_max = None
        step = query.get("step", "").strip()
        if step:
            lo, sep, hi = step.partition("-") if not step.startswith("-") else (step, "", "")
            try:
                step_min = int(lo) if lo.strip() else None
                step_max = (int(hi) if hi.strip() else None) if sep else step_min
            except ValueError:
                raise ValueError(f"step must be N or A-B, got {step!r}") from None
        return cls(names("status", True), names("task", False), step_min, step_max, number("min_reward"),
                   number("max_reward"))

    @property
    def empty(self) -> bool:
        return self == Filters()
