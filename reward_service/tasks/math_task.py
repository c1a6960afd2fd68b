"""The ``math`` task: answer extraction plus symbolic equivalence (see ``math_verifier``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_core.contract import RolloutStatus
from reward_service.task_api import Canary, InvalidReference, InvalidTaskOptions, Task, TaskOutcome
from reward_service.tasks.answer_scores import AnswerScores
from reward_service.tasks.math_canaries import math_canaries
from reward_service.tasks.options import choice_option
from reward_service.verifiers.math import (
    EquivalenceConfig,
    ExtractionConfig,
    GradeConfig,
    MathGrade,
    grade,
    normalize_answer,
)
from reward_service.verifiers.math.numeric import APPROX_SIG_DIGITS
from reward_service.verifiers.math.self_check import MATH_SELF_CHECK, SelfCheckCase, check_grader


def reference_answer(reference: Mapping[str, Any], task: str) -> str:
    """The gold answer of a math-style reference, as a string (InvalidReference if empty or not a value)."""
    answer = reference.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)) or not normalize_answer(str(answer)):
        raise InvalidReference(f"task {task!r} needs reference {{'answer': <gold>}}, got {dict(reference)!r:.200}")
    return str(answer)


def outcome_from_grade(result: MathGrade, gold: str = "") -> TaskOutcome:
    """A MathGrade as a task outcome.

    No extracted answer is NO_ANSWER (scored 0). A gold the grader cannot use is
    INVALID_REFERENCE and a verifier failure is ERROR: both unscored, never a 0.
    """
    if result.reason in ("no_gold", "bad_gold"):
        return TaskOutcome(0.0, RolloutStatus.INVALID_REFERENCE,
                           detail=f"reference answer {gold!r:.200} cannot be graded ({result.reason})")
    if result.reason == "error":
        return TaskOutcome(0.0, RolloutStatus.ERROR, extracted=result.extracted or "",
                           detail="the math verifier failed on this answer")
    if result.extracted is None:
        return TaskOutcome.no_answer(result.reason)
    return TaskOutcome.binary(result.correct, extracted=result.extracted, detail=result.reason)


def self_check_failures(task: Task, cases: tuple[SelfCheckCase, ...], strict: bool) -> list[str]:
    """Grades the fixed self-check golds through ``task.score`` (see ``math_verifier.self_check``)."""
    def verdict(completion: str, gold: str) -> bool | None:
        outcome = task.score(completion, {"answer": gold})
        return outcome.score == 1.0 if outcome.status.scored else None

    return check_grader(verdict, cases, strict)


def grade_config(strict: Any, last_number_fallback: Any, decimal_approximations: Any = "strict") -> GradeConfig:
    """Validated options shared by ``math`` and ``gsm8k`` (``gsm8k`` compares exactly, whatever
    ``decimal_approximations`` says)."""
    for key, value in (("strict", strict), ("last_number_fallback", last_number_fallback)):
        if not isinstance(value, bool):
            raise InvalidTaskOptions(f"option {key!r} must be true or false, got {value!r}")
    choice_option("math", "decimal_approximations", decimal_approximations, sorted(APPROX_SIG_DIGITS))
    return GradeConfig(extraction=ExtractionConfig(strict=strict, last_number_fallback=last_number_fallback),
                       equivalence=EquivalenceConfig(decimal_approximations=decimal_approximations))


class MathTask(Task):
    """MATH-style answers: extraction (####, \\boxed, 'the answer is', last number), then
    exact string, exact numeric, and sympy equivalence, with structures (tuples,
    intervals, sets, matrices, equations, several answers)."""

    name = "math"
    description = (
        "1 if the completion's final answer (\\boxed{}, '####', 'the answer is', last number) "
        "is mathematically equivalent to reference.answer, else 0"
    )
    required_reference_fields = ("answer",)

    def __init__(self, strict: bool = False, last_number_fallback: bool = True, wrong_score: float = 0.0,
                 no_answer_score: float = 0.0, decimal_approximations: str = "strict") -> None:
        """``decimal_approximations``: ``strict`` (a short decimal such as ``0.333`` never stands for
        ``1/3`` or ``3.142`` for ``\\pi``) or ``allow`` (3 correctly rounded significant digits do)."""
        super().__init__()
        self._config = grade_config(strict, last_number_fallback, decimal_approximations)
        self._scores = AnswerScores.from_options(self.name, wrong_score, no_answer_score)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        gold = reference_answer(reference, self.name)
        return self._scores.apply(outcome_from_grade(grade(completion, gold, self._config), gold))

    def self_check(self) -> list[str]:
        return self_check_failures(self, MATH_SELF_CHECK, self._config.extraction.strict)

    def canaries(self) -> list[Canary]:
        return math_canaries(self._scores.not_right_max)
