"""Length shaping: cosine-scaled correctness, DAPO's soft overlong punishment, Kimi 1.5's group
length reward. Lengths are whatever unit the caller counts (characters, tokens)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CosineSchedule:
    """Correctness scaled by length on a cosine ("Demystifying Long CoT", appendix C.1).

    ``reward = lo + (hi - lo) * (1 + cos(pi * length / max_len)) / 2`` with ``(lo, hi)`` =
    ``(min_value_correct, max_value_correct)`` for a correct completion (shorter earns more) and
    ``(max_value_wrong, min_value_wrong)`` for a wrong one (shorter is punished more). With
    ``clamp`` (TRL) lengths past ``max_len`` stay at the long end; without it (open-r1) the cosine
    turns back up past ``max_len``.
    """

    max_len: int = 1000
    min_value_wrong: float = -1.0
    max_value_wrong: float = -0.5
    min_value_correct: float = 0.5
    max_value_correct: float = 1.0
    clamp: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.max_len, bool) or not isinstance(self.max_len, int) or self.max_len < 1:
            raise ValueError(f"max_len must be an integer >= 1, got {self.max_len!r}")
        values = (self.min_value_wrong, self.max_value_wrong, self.min_value_correct, self.max_value_correct)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
            raise ValueError(f"the four min/max values must be finite numbers, got {values}")

    def reward(self, correct: bool, length: int) -> float:
        progress = length / self.max_len
        if self.clamp:
            progress = min(progress, 1.0)
        cosine = math.cos(progress * math.pi)
        if correct:
            lo, hi = self.min_value_correct, self.max_value_correct
        else:
            lo, hi = self.max_value_wrong, self.min_value_wrong
        return float(lo + 0.5 * (hi - lo) * (1.0 + cosine))


def soft_overlong(length: int, max_completion_len: int, soft_punish_cache: int) -> float:
    """DAPO's soft overlong punishment (eq. 13; TRL's ``get_soft_overlong_punishment``): 0 up to
    ``max_completion_len - soft_punish_cache``, then linear down to -1 at ``max_completion_len``,
    -1 beyond. A cache of 0 is a hard cut: 0 up to the limit, -1 past it."""
    if max_completion_len < 1 or not 0 <= soft_punish_cache <= max_completion_len:
        raise ValueError(f"need max_completion_len >= 1 and 0 <= soft_punish_cache <= max_completion_len, "
                         f"got {max_completion_len} and {soft_punish_cache}")
    free = max_completion_len - soft_punish_cache
    if length <= free:
        return 0.0
    if length <= max_completion_len:
        return (free - length) / soft_punish_cache
    return -1.0


def group_length_rewards(lengths: Sequence[int], correct: Sequence[bool]) -> list[float]:
    """Kimi 1.5's length reward over one group (arXiv:2501.12599, sec. 2.3.3; open-r1's ``len_reward``).

    ``lam = 0.5 - (len - min_len) / (max_len - min_len)`` over the group's lengths; a correct
    completion gets ``lam``, a wrong one ``min(0, lam)``. All lengths equal: 0 for every member.
    """
    if len(lengths) != len(correct):
        raise ValueError(f"{len(lengths)} lengths but {len(correct)} correctness flags")
    if not lengths:
        return []
    shortest, longest = min(lengths), max(lengths)
    if shortest == longest:
        return [0.0] * len(lengths)
    rewards = []
    for length, ok in zip(lengths, correct):
        lam = 0.5 - (length - shortest) / (longest - shortest)
        rewards.append(float(lam) if ok else float(min(0.0, lam)))
    return rewards
