"""What a right-or-wrong answer task pays for a wrong answer and for no answer.

Defaults keep 1 / 0 / 0. verl's GSM8K ``format_score`` (a well-formed answer that is wrong) is
``wrong_score``; DAPO's reward (-1 for anything not right) is ``wrong_score: -1, no_answer_score: -1``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from reward_core.contract import RolloutStatus
from reward_service.task_api import TaskOutcome
from reward_service.tasks.options import number_option


@dataclass(frozen=True)
class AnswerScores:
    """Scores of a scored outcome that is not right: extracted but wrong, and nothing extracted."""

    wrong: float = 0.0
    no_answer: float = 0.0

    @classmethod
    def from_options(cls, task: str, wrong_score: Any, no_answer_score: Any) -> AnswerScores:
        return cls(number_option(task, "wrong_score", wrong_score),
                   number_option(task, "no_answer_score", no_answer_score))

    @property
    def not_right_max(self) -> float:
        """The most an answer that is not right earns: the ceiling of the task's canaries."""
        return max(self.wrong, self.no_answer)

    def apply(self, outcome: TaskOutcome) -> TaskOutcome:
        """``outcome`` with its wrong or missing answer paid as configured (a right answer and an
        unscored outcome unchanged)."""
        if self == _DEFAULT:
            return outcome
        if outcome.status == RolloutStatus.NO_ANSWER:
            return dataclasses.replace(outcome, score=self.no_answer)
        if outcome.status == RolloutStatus.OK and outcome.score == 0.0:
            return dataclasses.replace(outcome, score=self.wrong)
        return outcome


_DEFAULT = AnswerScores()
