"""Math answer verifier: extraction, normalization and equivalence of answers.

Pure Python + sympy, no I/O.  Model output is never evaluated as code: the
LaTeX parser builds sympy objects directly, behind resource guards.

Public API::

    extract_answer(text, config=ExtractionConfig()) -> Extraction | None
    normalize_answer(s) -> str
    parse_latex(text) -> sympy.Expr          # raises MathParseError / ExpressionTooLarge
    answers_match(pred, gold, config=EquivalenceConfig()) -> bool
    compare_answers(pred, gold, config=EquivalenceConfig()) -> MatchResult
    grade(completion, gold, config=GradeConfig()) -> MathGrade
    grade_numeric(completion, gold, config=GradeConfig()) -> MathGrade
"""

from .answer_extract import Extraction, ExtractionConfig, extract_answer
from .errors import ExpressionTooLarge, MathParseError
from .grader import GradeConfig, MathGrade, gold_answer, grade, grade_numeric
from .latex_parser import parse_latex
from .math_equal import EquivalenceConfig, MatchResult, answers_match, compare_answers
from .normalize import normalize_answer

__all__ = [
    "Extraction", "ExtractionConfig", "extract_answer",
    "ExpressionTooLarge", "MathParseError",
    "GradeConfig", "MathGrade", "gold_answer", "grade", "grade_numeric",
    "parse_latex",
    "EquivalenceConfig", "MatchResult", "answers_match", "compare_answers",
    "normalize_answer",
]
