"""The single scoring path: extract the completion's answer and compare it to the gold.

:func:`grade` is the general math grader (string -> numeric -> structure ->
symbolic equivalence); :func:`grade_numeric` is the GSM8K grader (exact
rational comparison only, never sympy).  Both return a :class:`MathGrade`
and never raise on model output.

The gold goes through the same preparation as the completion: special
tokens are removed; a gold holding ``\\boxed{}`` or ``####`` (a full
solution) gives its extracted answer, its last box together with the boxes
listed with it ("$\\boxed{2}$ and $\\boxed{3}$"; :mod:`.boxes`); a gold that is a
sentence ("The answer is $5$.", "The final answer is **2**.") gives the
answer a completion would give, and one without math or answer phrase its
only number ("There are 4 ways."); a gold in delimiters
(``$\\frac{7}{3}$``) is normalized like any answer.

Several boxes in a completion: the last box is the answer, except that
when the gold lists several answers (``(1,4), (5,4)``), all the boxes
together are tried as well.

Reasons: ``match``, ``mismatch``, ``no_answer`` (nothing extracted from the
completion), ``no_gold`` (the gold answer is empty), ``bad_gold``
(``grade_numeric``: the gold is not a number), ``too_large`` (an answer
exceeded a size/resource guard), ``not_numeric`` (``grade_numeric`` on a
completion answer that is not a plain number) and ``error`` (the verifier
itself failed on this input).  ``no_gold``, ``bad_gold`` and ``error`` are
not verdicts: :attr:`MathGrade.scored` is false for them, and the tasks
report them unscored (``INVALID_REFERENCE``, ``ERROR``), never as 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .answer_extract import Extraction, ExtractionConfig, extract_answer, sole_number
from .boxes import CandidateTooLong, find_boxes, listed_run
from .errors import ExpressionTooLarge
from .math_equal import EquivalenceConfig, answer_part_count, compare_answers
from .math_spans import math_spans
from .normalize import normalize_answer
from .numeric import numbers_match, parse_number
from .special_tokens import strip_special_tokens

__all__ = ["GradeConfig", "MathGrade", "grade", "grade_numeric", "gold_answer", "UNSCORED_REASONS"]

#: A word of a sentence (not a LaTeX command's name).
_PROSE_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")

#: Reasons that are failures to grade, not verdicts on the completion.
UNSCORED_REASONS = frozenset({"no_gold", "bad_gold", "error"})


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
    #: The comparison that decided (``MatchResult.rule``; ``numeric`` for ``grade_numeric``), "" when none ran.
    rule: str = ""
    #: The gold's answer as compared (``gold_answer``), "" when grading stopped before.
    gold: str = ""

    @property
    def scored(self) -> bool:
        """Whether ``correct`` is a verdict (false for a bad gold or a verifier failure)."""
        return self.reason not in UNSCORED_REASONS


def gold_answer(gold: str) -> str:
    """The gold's answer (see the module doc): extracted from a solution or a sentence, else as given."""
    gold = strip_special_tokens(gold).strip()
    limit = max(len(gold), 1)
    if "####" in gold:
        found = extract_answer(gold, ExtractionConfig(strict=True, max_answer_chars=limit))
        if found is not None and found.method == "gsm8k":
            return found.answer
    if "\\boxed" in gold or "\\fbox" in gold:
        try:
            boxes = find_boxes(gold, limit)
        except CandidateTooLong:
            boxes = []
        if boxes:  # the last box and the boxes listed with it: "$\\boxed{2}$ and $\\boxed{3}$"
            return ", ".join(_distinct(tuple(b.content for b in listed_run(gold, boxes))))
    if len(gold) > 4000:
        return gold
    spans = math_spans(gold)
    if spans and (spans[0].start > 0 or spans[-1].end < len(gold)):
        # A sentence with math in it: "The answer is $5$." -- but "$5$ apples" is just 5.
        found = extract_answer(gold, ExtractionConfig(last_number_fallback=False, max_answer_chars=limit))
        if found is not None and found.method == "answer_is":
            return found.answer
        if len(spans) == 1 and _is_sentence(gold[:spans[0].start]):
            return spans[0].content
    elif not spans and _is_prose(gold):
        # A sentence without math: "The final answer is **2**.", "There are 4 ways."
        found = extract_answer(gold, ExtractionConfig(last_number_fallback=False, max_answer_chars=limit))
        if found is not None and found.method in ("answer_is", "bold"):
            return found.answer
        return sole_number(gold) or gold
    return gold


def _is_sentence(prefix: str) -> bool:
    """Whether the text before a gold's math span is prose ("The area is"), not part of the answer."""
    words = prefix.split()
    return len(words) >= 2 and all(w.isalpha() for w in words)


def _is_prose(gold: str) -> bool:
    """A gold sentence with a number in it ("So the total is 12."), not a LaTeX answer or a text answer."""
    if "\\" in gold or not any(ch.isdigit() for ch in gold):
        return False
    return len([w for w in _PROSE_WORD_RE.findall(gold) if w.lower() not in ("and", "or")]) >= 3


def _distinct(boxes: tuple[str, ...]) -> list[str]:
    seen: list[str] = []
    for box in boxes:
        if box not in seen:
            seen.append(box)
    return seen


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
    answer = extraction.answer
    if not result.match and len(extraction.boxes) > 1 and answer_part_count(target) > 1:
        joined = ", ".join(_distinct(extraction.boxes))
        together = compare_answers(joined, target, config.equivalence)
        if together.match or result.reason == "error":
            result, answer = together, joined
    return MathGrade(result.match, answer, extraction.method, result.reason, result.rule, target)


def _value_side(answer: str) -> str:
    """``x = 5`` and ``48 / 2 = 24`` state the number on the right of their last ``=``; a list of
    answers (``x = 70, x = 72``) states none."""
    if "=" not in answer or answer_part_count(answer) > 1:
        return answer
    return normalize_answer(answer.rsplit("=", 1)[1])


def grade_numeric(completion: str, gold: str, config: GradeConfig = GradeConfig()) -> MathGrade:
    """Grade a GSM8K-style completion: exact rational comparison of numbers only."""
    pair = _extract_pair(completion, gold, config)
    if isinstance(pair, MathGrade):
        return pair
    extraction, target = pair
    limit = config.equivalence.max_answer_chars
    if len(extraction.answer) > limit or len(target) > limit:
        return MathGrade(False, extraction.answer, extraction.method, "too_large", gold=target)
    try:
        pred_num = parse_number(_value_side(normalize_answer(extraction.answer)))
        gold_num = parse_number(_value_side(normalize_answer(target)))
    except ExpressionTooLarge:
        return MathGrade(False, extraction.answer, extraction.method, "too_large", gold=target)
    if gold_num is None:
        return MathGrade(False, extraction.answer, extraction.method, "bad_gold", gold=target)
    if pred_num is None:
        return MathGrade(False, extraction.answer, extraction.method, "not_numeric", gold=target)
    ok = numbers_match(pred_num, gold_num, min_sig_digits=None)
    return MathGrade(ok, extraction.answer, extraction.method, "match" if ok else "mismatch", "numeric", target)
