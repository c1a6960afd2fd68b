"""The single scoring path: extract the completion's answer and compare it to the gold.

:func:`grade` is the general math grader (string -> numeric -> structure ->
symbolic equivalence); :func:`grade_numeric` is the GSM8K grader (exact
rational comparison only, never sympy).  Both return a :class:`MathGrade`
and never raise on model output.

Reasons: ``match``, ``mismatch``, ``no_answer`` (nothing extracted from the
completion), ``no_gold`` (the gold answer is empty), ``too_large`` (an
answer exceeded a size/resource guard), ``not_numeric`` (``grade_numeric``
on something that is not a plain number) and ``error`` (an internal
arithmetic failure on odd input).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .answer_extract import Extraction, ExtractionConfig, extract_answer
from .errors import ExpressionTooLarge
from .math_equal import EquivalenceConfig, compare_answers
from .normalize import normalize_answer
from .numeric import numbers_match, parse_number

__all__ = ["GradeConfig", "MathGrade", "grade", "grade_numeric", "gold_answer"]


@dataclass(frozen=True)
class GradeConfig:
    """Configuration of :func:`grade` / :func:`grade_numeric`."""

    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    equivalence: EquivalenceConfig = field(default_factory=EquivalenceConfig)


@dataclass(frozen=True)
class MathGrade:
    """Outcome of grading one completion."""

    correct: bool
    extracted: str | None
    method: str | None
    reason: str


def gold_answer(gold: str) -> str:
    """The gold's answer: extracted when the gold holds ``\\boxed{}`` or ``####``."""
    if "\\boxed" in gold or "\\fbox" in gold or "####" in gold:
        found = extract_answer(gold, ExtractionConfig(strict=True, max_answer_chars=max(len(gold), 1)))
        if found is not None:
            return found.answer
    return gold.strip()


def _extract_pair(completion: str, gold: str, config: GradeConfig) -> tuple[Extraction, str] | MathGrade:
    """The completion's extracted answer and the gold's answer, or the MathGrade that ends grading."""
    if not isinstance(completion, str) or not isinstance(gold, str):
        return MathGrade(False, None, None, "no_answer")
    extraction = extract_answer(completion, config.extraction)
    if extraction is None:
        return MathGrade(False, None, None, "no_answer")
    target = gold_answer(gold)
    if not target:
        return MathGrade(False, extraction.answer, extraction.method, "no_gold")
    return extraction, target


def grade(completion: str, gold: str, config: GradeConfig = GradeConfig()) -> MathGrade:
    """Grade a completion against a gold answer (general math equivalence)."""
    pair = _extract_pair(completion, gold, config)
    if isinstance(pair, MathGrade):
        return pair
    extraction, target = pair
    result = compare_answers(extraction.answer, target, config.equivalence)
    return MathGrade(result.match, extraction.answer, extraction.method, result.reason)


def grade_numeric(completion: str, gold: str, config: GradeConfig = GradeConfig()) -> MathGrade:
    """Grade a GSM8K-style completion: exact rational comparison of numbers only."""
    pair = _extract_pair(completion, gold, config)
    if isinstance(pair, MathGrade):
        return pair
    extraction, target = pair
    limit = config.equivalence.max_answer_chars
    if len(extraction.answer) > limit or len(target) > limit:
        return MathGrade(False, extraction.answer, extraction.method, "too_large")
    try:
        pred_num = parse_number(normalize_answer(extraction.answer))
        gold_num = parse_number(normalize_answer(target))
    except ExpressionTooLarge:
        return MathGrade(False, extraction.answer, extraction.method, "too_large")
    if pred_num is None or gold_num is None:
        return MathGrade(False, extraction.answer, extraction.method, "not_numeric")
    ok = numbers_match(pred_num, gold_num, rounding=False)
    return MathGrade(ok, extraction.answer, extraction.method, "match" if ok else "mismatch")
