"""The ``math`` task: answer extraction plus symbolic equivalence (see ``math_verifier``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reward_core.contract import RolloutStatus
from reward_service.task_api import Canary, InvalidReference, InvalidTaskOptions, Task, TaskInput, TaskOutcome
from reward_service.tasks.answer_scores import AnswerScores
from reward_service.tasks.explanation import quote
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


#: Where each extraction method (``answer_extract.EXTRACTION_METHODS``) found the answer, for explanations.
METHOD_WHERE = {
    "gsm8k": "after '####'", "boxed": "from \\boxed{}", "answer_is": "from an 'answer is' line",
    "bare": "(the whole completion)", "delimited": "from the last $...$ span", "bold": "from the last **bold** span",
    "last_number": "(the last number)",
}
#: How each comparison rule (``MatchResult.rule``) decided a match, for explanations.
RULE_HOW = {"string": "as a string", "normalized": "after normalization", "choice": "by option letter",
            "numeric": "numerically", "symbolic": "symbolically (sympy)"}


def explain_grade(result: MathGrade, gold: str, *, strict: bool = False) -> str:
    """One line on a MathGrade: what was extracted and from where, and how it compared with the gold."""
    if result.extracted is None:
        if strict:
            return "no answer: no \\boxed{} or '####' answer found (strict)"
        return ("no answer: no \\boxed{}, '####', 'the answer is' line, math span or final number found")
    got = f"extracted {quote(result.extracted)} {METHOD_WHERE.get(result.method or '', '')}".rstrip()
    target = quote(result.gold or gold)
    if result.correct:
        return f"{got}; equals gold {target} {RULE_HOW.get(result.rule, result.rule)}".rstrip()
    why = {"too_large": "too large to compare with", "not_numeric": "not a number; gold",
           "error": "could not be compared (the verifier failed) with"}.get(result.reason, "does not equal gold")
    return f"{got}; {why} {target}"


def outcome_from_grade(result: MathGrade, gold: str = "", *, strict: bool = False) -> TaskOutcome:
    """A MathGrade as a task outcome, explained (:func:`explain_grade`).

    No extracted answer is NO_ANSWER (scored 0). A gold the grader cannot use is
    INVALID_REFERENCE and a verifier failure is ERROR: both unscored, never a 0.
    """
    if result.reason in ("no_gold", "bad_gold"):
        return TaskOutcome(0.0, RolloutStatus.INVALID_REFERENCE,
                           detail=f"reference answer {gold!r:.200} cannot be graded ({result.reason})")
    explanation = explain_grade(result, gold, strict=strict)
    if result.reason == "error":
        return TaskOutcome(0.0, RolloutStatus.ERROR, extracted=result.extracted or "",
                           detail="the math verifier failed on this answer", explanation=explanation)
    if result.extracted is None:
        return TaskOutcome.no_answer(result.reason, explanation=explanation)
    return TaskOutcome.binary(result.correct, extracted=result.extracted, detail=result.reason,
                              explanation=explanation)


def grade_trace(item: TaskInput, config: GradeConfig, grader: Callable[[str, str, GradeConfig], MathGrade]
                ) -> dict[str, Any]:
    """``reward-service explain``'s trace of a math-style grade: the gold as read, the extraction method,
    the reason and the comparison rule."""
    gold = str(item.reference.get("answer", ""))
    result = grader(item.completion, gold, config)
    return {"gold": gold, "gold_as_compared": result.gold, "extracted": result.extracted,
            "extraction_method": result.method, "reason": result.reason, "rule": result.rule,
            "strict": config.extraction.strict}


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
        return self._scores.apply(outcome_from_grade(grade(completion, gold, self._config), gold,
                                                     strict=self._config.extraction.strict))

    def explain(self, item: TaskInput, outcome: TaskOutcome) -> dict[str, Any]:
        return grade_trace(item, self._config, grade)

    def self_check(self) -> list[str]:
        return self_check_failures(self, MATH_SELF_CHECK, self._config.extraction.strict)

    def canaries(self) -> list[Canary]:
        return math_canaries(self._scores.not_right_max)
