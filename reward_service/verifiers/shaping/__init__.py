"""Reward shaping as pure functions: repetition penalty, length schedules, tag counts, the answer after
the reasoning. Functions of (text or lengths, options) only; they import nothing of ours.

Where each definition comes from (open-r1, TRL, DAPO, Kimi 1.5): ``docs/tasks.md``, "Shaping rewards".
"""

from reward_service.verifiers.shaping.length_rewards import CosineSchedule, group_length_rewards, soft_overlong
from reward_service.verifiers.shaping.repetition import repetition_penalty, words
from reward_service.verifiers.shaping.tags import R1_TAGS, answer_after_reasoning, tag_count

__all__ = [
    "CosineSchedule", "group_length_rewards", "soft_overlong",
    "repetition_penalty", "words",
    "R1_TAGS", "answer_after_reasoning", "tag_count",
]
