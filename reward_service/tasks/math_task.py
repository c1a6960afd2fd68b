"""The ``math`` task: answer extraction plus symbolic equivalence (see ``math_verifier``)."""

from __future__ import annotations

from typing import Any, Mapping

from reward_service.math_verifier import ExtractionConfig, GradeConfig, MathGrade, grade
from reward_service.task_api import InvalidReference, InvalidTaskOptions, Task, TaskOutcome


def reference_answer(reference: Mapping[str, Any], task: str) -> str:
    """The gold answer of a math-style reference, as a string."""
    answer = reference.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)) or answer == "":
        raise InvalidReference(f"task {task!r} needs reference {{'answer': <gold>}}, got {dict(reference)!r:.200}")
    return str(answer)


def outcome_from_grade(result: MathGrade) -> TaskOutcome:
    """A MathGrade as a task outcome: no extracted answer is NO_ANSWER (scored 0)."""
    if result.extracted is None:
        return TaskOutcome.no_answer(result.reason)
    return TaskOutcome.binary(result.correct, extracted=result.extracted, detail=result.reason)


def grade_config(strict: Any, last_number_fallback: Any) -> GradeConfig:
    """Validated options shared by ``math`` and ``gsm8k``."""
    for key, value in (("strict", strict), ("last_number_fallback", last_number_fallback)):
        if not isinstance(value, bool):
            raise InvalidTaskOptions(f"option {key!r} must be true or false, got {value!r}")
    return GradeConfig(extraction=ExtractionConfig(strict=strict, last_number_fallback=last_number_fallback))


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

    def __init__(self, strict: bool = False, last_number_fallback: bool = True) -> None:
        super().__init__()
        self._config = grade_config(strict, last_number_fallback)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return outcome_from_grade(grade(completion, reference_answer(reference, self.name), self._config))
