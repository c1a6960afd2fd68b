"""Equivalence of two answer strings, cheapest check first.

Steps of :func:`compare_answers` / :func:`answers_match`:

1. **String**: equal after :func:`normalize_answer`.
2. **Numeric** (pure Python, :class:`fractions.Fraction`): integers,
   fractions, decimals, scientific notation, mixed numbers, negatives,
   percent.  When both sides are plain numbers the verdict is final here;
   sympy is never touched.
3. **Structure** (:mod:`.structures`): tuples, intervals, sets, matrices,
   equations and lists are split and their leaves compared by steps 1-4.
4. **Symbolic** (:mod:`.latex_parser` builds sympy objects, :mod:`.symbolic`
   compares them by bounded mpmath evaluation, no ``simplify``): constants
   to ~60 digits (relative tolerance 1e-25, absolute 1e-35 near zero);
   expressions with free symbols at three fixed pseudo-random points
   (relative tolerance 1e-15).

Tolerance policy (exactly this one):

* Exact values compare exactly: ``0.5 = 1/2 = 5e-1``;
  ``2\\frac{1}{2} = 5/2 = 2.5``.
* A decimal literal against a value that is *not* a terminating decimal
  (``1/3``, ``\\pi``, ``\\sqrt{2}``) matches only when it equals that value
  rounded to the literal's number of decimal places AND the literal has
  enough significant digits: 6 by default (``decimal_approximations="strict"``:
  ``0.333333`` and a printed float match ``1/3``, ``0.333`` and ``3.142`` do
  not), 3 with ``decimal_approximations="allow"`` (``0.333`` matches ``1/3``,
  ``0.33`` does not; ``3.14`` matches ``\\pi``).  Applies in both directions.
  A decimal against a terminating value compares exactly (``0.13`` is not
  ``0.125``).
* A percent ``p\\%`` matches both ``p`` and ``p/100``.
* Degrees: ``30^\\circ`` matches ``30`` (no radian conversion).
* Units and words after a number are ignored (``5 cm`` = 5, ``\\$12`` = 12,
  ``12 dollars`` = 12).

Anything that fails to parse, or trips a resource guard, is a non-match;
these functions never raise on model output.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

import sympy

from .errors import ExpressionTooLarge, MathParseError
from .latex_parser import parse_latex
from .normalize import normalize_answer, strip_outer_wrappers
from .numeric import APPROX_SIG_DIGITS, NumericValue, numbers_match, parse_number
from .relations import canonical_relations, relation_as_interval
from .structures import Choices, Equation, SetAnswer, parse_structure, structures_match
from .symbolic import decimal_matches_expression, equations_equal, expressions_equal
from .sympy_build import add, div, neg, number_digits
from .text_answers import (
    is_text_command,
    is_words,
    number_word_value,
    option_letter,
    prose_key,
    time_of_day,
    times_match,
)

__all__ = ["EquivalenceConfig", "MatchResult", "answers_match", "compare_answers", "answer_part_count"]

#: Letter runs of 3+ characters (not LaTeX commands) that are still mathematics.
_MATH_WORDS = frozenset({
    "sin", "cos", "tan", "sec", "csc", "cot", "log", "exp", "sqrt", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "infty", "inf", "infinity", "abc", "xyz", "frac", "asin", "acos", "atan",
})
_DIGIT_GAP_RE = re.compile(r"(?<=\d) +(?=\d)")
_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")


@dataclass(frozen=True)
class EquivalenceConfig:
    """Knobs of :func:`answers_match`.

    Attributes:
        max_answer_chars: longer answers (either side) match only when
            literally identical; otherwise they are rejected as ``too_large``.
        symbolic: allow the sympy step (``False``: string/numeric/structure only).
        eval_points: points used for expressions with free symbols.
        decimal_approximations: ``"strict"`` (default): a decimal stands for a value
            that is not a terminating decimal (``1/3``, ``\\pi``) only with 6 or more
            significant digits, correctly rounded; ``"allow"``: 3 are enough
            (``0.333`` for ``1/3``, ``3.14`` for ``\\pi``).
    """

    max_answer_chars: int = 1000
    symbolic: bool = True
    eval_points: int = 3
    decimal_approximations: str = "strict"

    def __post_init__(self) -> None:
        if self.decimal_approximations not in APPROX_SIG_DIGITS:
            raise ValueError(f"decimal_approximations must be one of {sorted(APPROX_SIG_DIGITS)}, got "
                             f"{self.decimal_approximations!r}: 'allow' accepts 0.333 for 1/3, 'strict' does not")

    @property
    def approx_sig_digits(self) -> int:
        """Significant digits a decimal needs to stand for a non-terminating value."""
        return APPROX_SIG_DIGITS[self.decimal_approximations]


@dataclass(frozen=True)
class MatchResult:
    """Verdict plus a short reason.

    ``match``; ``mismatch``; ``too_large`` (a size/resource guard tripped);
    ``error`` (an arithmetic/type failure inside the comparison of odd input,
    reported rather than raised). ``rule`` names the comparison that decided (for
    explanations): ``string``, ``normalized``, ``choice``, ``numeric`` or ``symbolic``
    (structures and sympy); "" when none ran.
    """

    match: bool
    reason: str
    rule: str = ""


@dataclass(frozen=True)
class _Parsed:
    expr: sympy.Expr | None
    too_large: bool = False


class _TooLargeSignal(Exception):
    """Internal: a leaf comparison tripped a resource guard."""


class _ParseCache:
    """Thread-safe LRU cache of parse results (golds repeat across completions).

    Results holding big exact numbers are not cached, so hostile inputs cannot
    pin much memory.
    """

    def __init__(self, maxsize: int = 4096, max_digits: float = 2000.0) -> None:
        self._data: OrderedDict[str, _Parsed] = OrderedDict()
        self._lock = threading.Lock()
        self._maxsize = maxsize
        self._max_digits = max_digits

    def get(self, text: str) -> _Parsed:
        with self._lock:
            hit = self._data.get(text)
            if hit is not None:
                self._data.move_to_end(text)
                return hit
        parsed = _parse_uncached(text)
        if parsed.expr is None or _atom_digits(parsed.expr) <= self._max_digits:
            with self._lock:
                self._data[text] = parsed
                while len(self._data) > self._maxsize:
                    self._data.popitem(last=False)
        return parsed

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def _atom_digits(expr: sympy.Expr) -> float:
    return sum(number_digits(a) for a in expr.atoms(sympy.Rational))


def _parse_uncached(text: str) -> _Parsed:
    try:
        return _Parsed(parse_latex(text))
    except ExpressionTooLarge:
        return _Parsed(None, too_large=True)
    except (MathParseError, TypeError, ValueError, ZeroDivisionError, RecursionError):
        return _Parsed(None)


_PARSE_CACHE = _ParseCache()


def _parse(text: str) -> sympy.Expr | None:
    parsed = _PARSE_CACHE.get(text)
    if parsed.too_large:
        raise _TooLargeSignal
    return parsed.expr


def _safe_number(text: str) -> NumericValue | None:
    try:
        return parse_number(text)
    except ExpressionTooLarge as exc:
        raise _TooLargeSignal from exc
    except (ValueError, ZeroDivisionError):
        return None


def _symbolic_scalar_equal(a: str, b: str, num_a: NumericValue | None,
                           num_b: NumericValue | None, config: EquivalenceConfig) -> bool:
    for text_a, pct_a in _percent_readings(a):
        for text_b, pct_b in _percent_readings(b):
            ea, eb = _parse(text_a), _parse(text_b)
            if ea is None or eb is None:
                continue
            ea, eb = div(ea, sympy.Integer(pct_a)), div(eb, sympy.Integer(pct_b))
            if expressions_equal(ea, eb, config.eval_points):
                return True
            for literal, expr in ((num_a, eb), (num_b, ea)):
                if (literal is not None and not literal.percent
                        and decimal_matches_expression(literal, expr, config.approx_sig_digits)):
                    return True
    return False


def _percent_readings(text: str) -> list[tuple[str, int]]:
    if text.endswith("%"):
        return [(text[:-1].strip(), 1), (text[:-1].strip(), 100)]
    return [(text, 1)]


def _is_text(s: str) -> bool:
    """Prose answers (``Monday``, ``no solution``) are compared as strings only."""
    return any(word.lower() not in _MATH_WORDS for word in _WORD_RE.findall(s))


def _squeeze(s: str) -> str:
    """Whitespace-free form; digit-space-digit is kept apart (``1 1`` is not ``11``)."""
    return _DIGIT_GAP_RE.sub("\x00", s).replace(" ", "")


def _scalar_equal(a: str, b: str, config: EquivalenceConfig) -> bool:
    a, b = normalize_answer(a), normalize_answer(b)
    if a == b:
        return bool(a)
    time_a, time_b = time_of_day(a), time_of_day(b)
    if time_a is not None and time_b is not None:
        return times_match(time_a, time_b)
    num_a, num_b = _safe_number(a), _safe_number(b)
    if num_a is not None and num_b is not None:
        return numbers_match(num_a, num_b, config.approx_sig_digits)
    if _is_text(a) or _is_text(b):
        word_a, word_b = number_word_value(a), number_word_value(b)
        if word_a is not None or word_b is not None:
            return _word_number_equal(word_a, num_a, word_b, num_b)
        return prose_key(a) == prose_key(b)
    if _squeeze(a) == _squeeze(b):
        return True
    if not config.symbolic:
        return False
    return _symbolic_scalar_equal(a, b, num_a, num_b, config)


def _word_number_equal(word_a: int | None, num_a: NumericValue | None,
                       word_b: int | None, num_b: NumericValue | None) -> bool:
    """"fourteen" against 14 (or against "fourteen"); a number word never equals prose."""
    value_a = word_a if word_a is not None else (num_a.value if num_a is not None else None)
    value_b = word_b if word_b is not None else (num_b.value if num_b is not None else None)
    return value_a is not None and value_a == value_b


def _equation_equal(a: Equation, b: Equation, config: EquivalenceConfig) -> bool:
    """``lhs - rhs`` of both sides equal up to a nonzero constant factor."""
    if not config.symbolic:
        return False
    parts = [_parse(normalize_answer(t)) for t in (a.lhs, a.rhs, b.lhs, b.rhs)]
    if any(p is None for p in parts):
        return False
    diff_a, diff_b = add(parts[0], neg(parts[1])), add(parts[2], neg(parts[3]))
    return equations_equal(diff_a, diff_b, config.eval_points + 1)


def _same_words(pred: str, gold: str, norm_pred: str, norm_gold: str) -> bool:
    """Text answers equal but for case: ``\\text{NO}`` and ``No``, ``\\text{Yes}`` and ``yes``
    (never ``x`` and ``X``: see :func:`.text_answers.is_words`)."""
    if prose_key(norm_pred) != prose_key(norm_gold):
        return False
    text_command = is_text_command(strip_outer_wrappers(pred)) or is_text_command(strip_outer_wrappers(gold))
    return is_words(norm_pred, text_command) and is_words(norm_gold, text_command)


def compare_answers(pred: str, gold: str, config: EquivalenceConfig = EquivalenceConfig()) -> MatchResult:
    """Compare two answers; never raises on odd input (failures are a mismatch)."""
    if not isinstance(pred, str) or not isinstance(gold, str):
        return MatchResult(False, "mismatch")
    if pred.strip() == gold.strip() and pred.strip():
        return MatchResult(True, "match", "string")
    if len(pred) > config.max_answer_chars or len(gold) > config.max_answer_chars:
        return MatchResult(False, "too_large")
    norm_pred, norm_gold = normalize_answer(pred), normalize_answer(gold)
    if not norm_pred or not norm_gold:
        return MatchResult(False, "mismatch")
    if norm_pred == norm_gold or _same_words(pred, gold, norm_pred, norm_gold):
        return MatchResult(True, "match", "normalized")
    gold_letter = option_letter(norm_gold)
    if gold_letter is not None:
        pred_letter = option_letter(norm_pred)
        if pred_letter is not None:
            return MatchResult(pred_letter == gold_letter, "match" if pred_letter == gold_letter else "mismatch",
                               "choice")
    norm_pred = relation_as_interval(canonical_relations(norm_pred))
    norm_gold = relation_as_interval(canonical_relations(norm_gold))
    try:
        num_p, num_g = _safe_number(norm_pred), _safe_number(norm_gold)
        if num_p is not None and num_g is not None:
            ok = numbers_match(num_p, num_g, config.approx_sig_digits)
            return MatchResult(ok, "match" if ok else "mismatch", "numeric")
        ok = structures_match(
            parse_structure(norm_pred), parse_structure(norm_gold),
            lambda x, y: _scalar_equal(x, y, config),
            lambda x, y: _equation_equal(x, y, config))
    except (_TooLargeSignal, ExpressionTooLarge):
        return MatchResult(False, "too_large")
    except (ValueError, TypeError, ArithmeticError, RecursionError, AttributeError, IndexError):
        # Odd model output must never crash the reward; the reason makes it visible.
        return MatchResult(False, "error", "symbolic")
    return MatchResult(ok, "match" if ok else "mismatch", "symbolic")


def answer_part_count(answer: str) -> int:
    """How many answers ``answer`` lists (``2, 3`` and ``\\{1, 2\\}`` are 2; ``(1, 2)`` is 1)."""
    try:
        tree = parse_structure(normalize_answer(answer))
    except (ValueError, ExpressionTooLarge, RecursionError):
        return 1
    if isinstance(tree, (Choices, SetAnswer)):
        return len(tree.items)
    return 1


def answers_match(pred: str, gold: str, config: EquivalenceConfig = EquivalenceConfig()) -> bool:
    """Whether the predicted answer ``pred`` is equivalent to ``gold`` (see module doc)."""
    return compare_answers(pred, gold, config).match
