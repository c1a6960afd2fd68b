"""The ``gsm8k`` task: the final number after ``####`` compared numerically with the gold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_service.task_api import Canary, Task, TaskInput, TaskOutcome
from reward_service.tasks.answer_scores import AnswerScores
from reward_service.tasks.math_canaries import math_canaries
from reward_service.tasks.math_task import (
    grade_config,
    grade_trace,
    outcome_from_grade,
    reference_answer,
    self_check_failures,
)
from reward_service.verifiers.math import grade_numeric
from reward_service.verifiers.math.self_check import NUMERIC_SELF_CHECK


class Gsm8kTask(Task):
    """GSM8K: extract the answer after ``####`` (falling back to \\boxed, 'the answer is',
    then the last number unless strict) and compare it numerically, exactly."""

    name = "gsm8k"
    description = "1 if the number after '####' (or the fallback answer) equals reference.answer numerically, else 0"
    required_reference_fields = ("answer",)

    def __init__(self, strict: bool = False, last_number_fallback: bool = True, wrong_score: float = 0.0,
                 no_answer_score: float = 0.0) -> None:
        super().__init__()
        self._config = grade_config(strict, last_number_fallback)
        self._scores = AnswerScores.from_options(self.name, wrong_score, no_answer_score)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        gold = reference_answer(reference, self.name)
        return self._scores.apply(outcome_from_grade(grade_numeric(completion, gold, self._config), gold,
                                                     strict=self._config.extraction.strict))

    def explain(self, item: TaskInput, outcome: TaskOutcome) -> dict[str, Any]:
        return grade_trace(item, self._config, grade_numeric)

    def self_check(self) -> list[str]:
        return self_check_failures(self, NUMERIC_SELF_CHECK, self._config.extraction.strict)

    def canaries(self) -> list[Canary]:
        return math_canaries(self._scores.not_right_max)
