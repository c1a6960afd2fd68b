"""Structured answers: tuples, intervals, unions, sets, matrices, equations, lists.

:func:`parse_structure` turns a *normalized* answer string into a small tree
(pure string work, no sympy); :func:`structures_match` compares two trees,
delegating leaf comparison to callbacks supplied by :mod:`.math_equal`.

Rules:

* ``(1, 2)``, ``[1, 2]``, ``(1, 2]``, ``[0, \\infty)`` are *ordered*; the
  opening and closing bracket must be the same on both sides.
* ``A \\cup B`` is a union; the pieces are compared as an unordered collection;
  a union of sets (``\\{1,3\\} \\cup \\{5\\}``) is the set of all their elements.
* ``\\{1, 2\\}`` is a set (unordered); ``\\emptyset`` is the empty set.  Two sets
  compare as sets (``\\{2,2,4\\}`` is ``\\{2,4\\}``); a list of answers (or a set
  against a list) compares as a multiset (``2, 2, 4`` is not ``2, 4``: roots
  listed with multiplicity), except a list of tuples (solutions as points:
  ``(1, 2), (3, 4), (1, 2)`` is ``(1, 2), (3, 4)``).
* ``\\begin{pmatrix}..\\end{pmatrix}`` (also ``bmatrix`` etc.) is compared
  element-wise with the same shape; the matrix flavour is ignored; a sum or
  product of literal matrices is the matrix it makes (:mod:`.matrix_arith`).  A
  column or row vector equals the tuple of its entries.
* ``x = 3`` against a non-equation compares ``3`` (when the left side is a
  single variable such as ``x``, ``x_1``, ``\\theta`` or ``f(x)``, or a label
  without operators and the right side has no variable: ``(p, q) = (3, 2)``,
  ``|AB| = 1``); a chain
  ``x = 2 + 3 = 5`` is ``x = 5``; equation against equation is delegated
  (``lhs - rhs`` up to a constant factor).
* Several answers -- a bare top-level comma list, ``2 and 3``, ``x=2 or x=3``,
  ``2 \\pm \\sqrt 3``, one ``\\pm`` anywhere (``\\frac{-1 \\pm \\sqrt 5}{2}``) -- form an
  unordered list; the other side must hold the same answers, no more and no fewer.  A set and a list compare alike; a
  list never matches a single answer (so "1 or 2 or 3" does not match 2).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from .errors import ExpressionTooLarge
from .matrix_arith import matrix_expression
from .normalize import THOUSANDS_RE

__all__ = [
    "Scalar", "Bracketed", "SetAnswer", "IntervalUnion", "Matrix", "Equation", "Choices",
    "Answer", "parse_structure", "structures_match", "split_top_level",
]

MAX_ITEMS = 64


@dataclass(frozen=True)
class Scalar:
    text: str


@dataclass(frozen=True)
class Bracketed:
    """Tuple, point or interval: ``brackets`` is e.g. ``"(]"``."""

    brackets: str
    items: tuple[Answer, ...]


@dataclass(frozen=True)
class SetAnswer:
    items: tuple[Answer, ...]


@dataclass(frozen=True)
class IntervalUnion:
    parts: tuple[Answer, ...]


@dataclass(frozen=True)
class Matrix:
    rows: tuple[tuple[Answer, ...], ...]


@dataclass(frozen=True)
class Equation:
    lhs: str
    rhs: str


@dataclass(frozen=True)
class Choices:
    """Several alternative answers (unordered)."""

    items: tuple[Answer, ...]


Answer = Scalar | Bracketed | SetAnswer | IntervalUnion | Matrix | Equation | Choices
ScalarEq = Callable[[str, str], bool]
EquationEq = Callable[[Equation, Equation], bool]

_OPEN = "([{"
_CLOSE = ")]}"
_LIST_SEP_RE = re.compile(r",\s*(?:and|or)\s+|,|;|\s+(?:and|or)\s+|(?<=[)\]}])\s*(?:and|or)\s*(?=[(\[{\\])"
                          r"|\s*\\(?:vee|lor)(?![A-Za-z])\s*")
_APPROX_RE = re.compile(r"\\approx(?![A-Za-z])")
_CUP_RE = re.compile(r"\\cup(?![A-Za-z])|\s+U\s+")
_EQ_RE = re.compile(r"(?<![<>!\\])=|\\(?:in|approx)(?![A-Za-z])")
_PM_RE = re.compile(r"\\pm(?![A-Za-z])|\+-|\+/-")
_MATRIX_RE = re.compile(
    r"[\[(]?\s*\\begin\{([pbvBV]?matrix|array)\}(?:\{[lcr| ]*\})?(.*)\\end\{\1\}\s*[\])]?",
    re.DOTALL)
_SINGLE_VAR_RE = re.compile(
    r"[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?|\\[A-Za-z]+|[A-Za-z]\s*\(\s*[A-Za-z]\s*\)")
_EMPTY_SET = frozenset({"\\emptyset", "\\varnothing", "\\{\\}", "{}", "\\{ \\}"})


def split_top_level(s: str, pattern: re.Pattern[str]) -> list[str]:
    """Split ``s`` on ``pattern`` matches that are outside all brackets."""
    parts: list[str] = []
    depth = 0
    start = 0
    idx = 0
    while idx < len(s):
        ch = s[idx]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0:
            m = pattern.match(s, idx)
            if m is not None and m.end() > idx:
                parts.append(s[start:idx])
                start = idx = m.end()
                continue
        idx += 1
    parts.append(s[start:])
    return [p.strip() for p in parts]


def _enclosing_pair(s: str) -> bool:
    """Whether the first char is a bracket whose match is the last char."""
    if len(s) < 2 or s[0] not in _OPEN or s[-1] not in _CLOSE:
        return False
    depth = 0
    for idx, ch in enumerate(s):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0:
                return idx == len(s) - 1
    return False


def _items(parts: list[str]) -> tuple[Answer, ...]:
    if len(parts) > MAX_ITEMS:
        raise ExpressionTooLarge(f"more than {MAX_ITEMS} items")
    return tuple(parse_structure(p) for p in parts)


def _parse_matrix(s: str) -> Matrix | None:
    m = _MATRIX_RE.fullmatch(s.strip())
    if m is None:
        return None
    rows = [r for r in (row.strip() for row in m.group(2).split("\\\\")) if r]
    if len(rows) > MAX_ITEMS:
        raise ExpressionTooLarge(f"more than {MAX_ITEMS} rows")
    return Matrix(tuple(_items([c.strip() for c in row.split("&")]) for row in rows))


def _parse_set(s: str) -> SetAnswer | None:
    if s in _EMPTY_SET:
        return SetAnswer(())
    if s.startswith("\\{") and s.endswith("\\}"):
        inner = s[2:-2]
    elif _enclosing_pair(s) and s[0] == "{" and s[-1] == "}" and "," in s:
        inner = s[1:-1]
    else:
        return None
    parts = split_top_level(inner.replace("\\{", "{").replace("\\}", "}"), re.compile(","))
    return SetAnswer(_items([p for p in parts if p]))


def _parse_list_like(s: str) -> Answer | None:
    parts = split_top_level(s, _CUP_RE)
    if len(parts) > 1:
        items = _items(parts)
        if all(isinstance(i, SetAnswer) for i in items):
            return SetAnswer(tuple(x for i in items for x in i.items))  # type: ignore[union-attr]
        return IntervalUnion(items)
    parts = [p for p in split_top_level(s, _LIST_SEP_RE) if p]
    if len(parts) > 1:
        return Choices(_items(parts))
    pm = split_top_level(s, _PM_RE)
    if len(pm) == 2:
        left = pm[0]
        return Choices((parse_structure(f"{left}+{pm[1]}" if left else pm[1]),
                        parse_structure(f"{left}-{pm[1]}" if left else f"-{pm[1]}")))
    inner = list(_PM_RE.finditer(s))
    if len(inner) == 1:  # "\frac{-1 \pm \sqrt{5}}{2}": both signs, inside the braces
        m = inner[0]
        return Choices((parse_structure(s[:m.start()] + "+" + s[m.end():]),
                        parse_structure(s[:m.start()] + "-" + s[m.end():])))
    return None


def _is_listed(s: str) -> bool:
    """Whether ``s`` is several answers at top level (``1, 2``; not ``(p, q)``)."""
    return len(split_top_level(s, _LIST_SEP_RE)) > 1


def _drop_approximation(s: str) -> str:
    """``x = 1/3 \\approx 0.33`` states ``x = 1/3``: an approximation after an exact value is a remark."""
    parts = split_top_level(s, _APPROX_RE)
    if len(parts) > 1 and parts[0] and _EQ_RE.search(parts[0]) and not _is_listed(s):
        return parts[0]
    return s


def parse_structure(s: str) -> Answer:
    """Parse a normalized answer into an :data:`Answer` tree (never sympy)."""
    s = _drop_approximation(s.strip())
    if THOUSANDS_RE.fullmatch(s):
        return Scalar(s)  # "12,500" is one number (thousands), as in normalization
    computed = matrix_expression(s) if s.count("\\begin{") > 1 else None
    if computed is not None:  # "A + B", "A B" of literal matrices: the matrix they make
        return Matrix(tuple(tuple(Scalar(cell) for cell in row) for row in computed))
    matrix = _parse_matrix(s)
    if matrix is not None:
        return matrix
    eq = split_top_level(s, _EQ_RE)
    if len(eq) > 2 and all(eq) and not any(_is_listed(part) for part in eq):
        eq = [eq[0], eq[-1]]  # a chain "x = 2 + 3 = 5" states x = 5
    if len(eq) == 2 and eq[0] and eq[1] and not _is_listed(eq[0]):
        rhs_parts = split_top_level(eq[1], _LIST_SEP_RE)
        if len(rhs_parts) == 1 or THOUSANDS_RE.fullmatch(eq[1]) or not _SINGLE_VAR_RE.fullmatch(eq[0]):
            return Equation(eq[0], eq[1])
    listed = _parse_list_like(s)
    if listed is not None:
        return listed
    set_answer = _parse_set(s)
    if set_answer is not None:
        return set_answer
    if _enclosing_pair(s) and s[0] in "([" and s[-1] in ")]":
        parts = split_top_level(s[1:-1], re.compile(","))
        if len(parts) == 1:
            parts = split_top_level(s[1:-1], re.compile(";"))  # "(0;-2;6)"
        if len(parts) > 1:
            return Bracketed(s[0] + s[-1], _items(parts))
    return Scalar(s)


_CONNECTIVE_RE = re.compile(r"\b(?:and|or)\b")
_NO_VARIABLE_RE = re.compile(r"(?:\\[A-Za-z]+|[^A-Za-z])*")
#: A name for a value: ``(p, q)``, ``|AB|``, ``f(2)``, ``S_{ABC}``; no operator, no leading digit.
_LABEL_RE = re.compile(r"[A-Za-z(|\\][^=+\-*/^<>]*")


def _rhs_if_assignment(a: Answer, answer_side: bool = False) -> Answer:
    """``x = 3``, ``(p, q) = (3, 2)`` and ``2 \\cdot 4 = 8`` stand for their right side.

    The right side counts when the left is a single variable, or a label
    (no operator) and the right has no variable.  On the answer's side
    (``answer_side``) any left side will do when the right has no variable:
    "$a + b = 9$" answers 9.  A gold ``7 = 11a + c`` or ``a + 3z = 0`` stays an
    equation: the question asked for one.
    """
    if isinstance(a, Equation):
        rhs_values = _CONNECTIVE_RE.sub(" ", a.rhs.strip())  # "(5, 8) and (8, 5)" has no variable
        lhs, rhs_constant = a.lhs.strip(), _NO_VARIABLE_RE.fullmatch(rhs_values) is not None
        if _SINGLE_VAR_RE.fullmatch(lhs) or (rhs_constant and (answer_side or _LABEL_RE.fullmatch(lhs))):
            return parse_structure(a.rhs)
    return a


def _vector_items(a: Answer) -> tuple[Answer, ...] | None:
    """The entries of a column/row vector matrix or a parenthesized tuple."""
    if isinstance(a, Matrix):
        if all(len(row) == 1 for row in a.rows):
            return tuple(row[0] for row in a.rows)
        if len(a.rows) == 1:
            return a.rows[0]
    if isinstance(a, Bracketed) and a.brackets == "()":
        return a.items
    return None


def _distinct(items: tuple[Answer, ...]) -> tuple[Answer, ...]:
    """``items`` without repeats written the same way (cheap: no value comparison, so no sympy)."""
    kept: list[Answer] = []
    for item in items:
        if item not in kept:
            kept.append(item)
    return tuple(kept)


def _all_tuples(items: tuple[Answer, ...]) -> bool:
    return bool(items) and all(isinstance(i, Bracketed) and i.brackets == "()" for i in items)


def _unordered_match(xs: tuple[Answer, ...], ys: tuple[Answer, ...], eq: Callable[[Answer, Answer], bool]) -> bool:
    if len(xs) != len(ys):
        return False
    if len(xs) <= 6:
        table = [[eq(x, y) for y in ys] for x in xs]
        return any(all(table[i][j] for i, j in enumerate(perm))
                   for perm in itertools.permutations(range(len(ys))))
    used = [False] * len(ys)
    for x in xs:
        for j, y in enumerate(ys):
            if not used[j] and eq(x, y):
                used[j] = True
                break
        else:
            return False
    return True


def _equations_match(a: Equation, b: Equation, scalar_eq: ScalarEq, equation_eq: EquationEq) -> bool:
    la, lb = a.lhs.strip(), b.lhs.strip()
    if _SINGLE_VAR_RE.fullmatch(la) and la.replace(" ", "") == lb.replace(" ", ""):
        if structures_match(parse_structure(a.rhs), parse_structure(b.rhs), scalar_eq, equation_eq):
            return True
    return equation_eq(a, b)


def structures_match(a: Answer, b: Answer, scalar_eq: ScalarEq, equation_eq: EquationEq) -> bool:
    """Compare the answer tree ``a`` with the gold tree ``b``; leaves use ``scalar_eq``, equations ``equation_eq``."""
    def rec(x: Answer, y: Answer) -> bool:
        return structures_match(x, y, scalar_eq, equation_eq)

    if isinstance(a, Equation) and isinstance(b, Equation):
        return _equations_match(a, b, scalar_eq, equation_eq)
    if isinstance(a, Equation) or isinstance(b, Equation):
        a2, b2 = _rhs_if_assignment(a, answer_side=True), _rhs_if_assignment(b)
        if isinstance(a2, Equation) or isinstance(b2, Equation):
            return False
        return rec(a2, b2)
    if isinstance(a, Choices) and len(a.items) == 1:
        return rec(a.items[0], b)
    if isinstance(b, Choices) and len(b.items) == 1:
        return rec(a, b.items[0])
    if isinstance(a, SetAnswer) and isinstance(b, SetAnswer):
        return _unordered_match(_distinct(a.items), _distinct(b.items), rec)
    if isinstance(a, (Choices, SetAnswer)) and isinstance(b, (Choices, SetAnswer)):
        if _all_tuples(a.items) and _all_tuples(b.items):  # solutions as points: a repeat is no multiplicity
            return _unordered_match(_distinct(a.items), _distinct(b.items), rec)
        return _unordered_match(a.items, b.items, rec)
    if isinstance(a, Matrix) != isinstance(b, Matrix):
        va, vb = _vector_items(a), _vector_items(b)
        if va is not None and vb is not None:
            return len(va) == len(vb) and all(rec(x, y) for x, y in zip(va, vb))
    if type(a) is not type(b):
        return False
    if isinstance(a, Scalar):
        return scalar_eq(a.text, b.text)
    if isinstance(a, Bracketed):
        return (a.brackets == b.brackets and len(a.items) == len(b.items)
                and all(rec(x, y) for x, y in zip(a.items, b.items)))
    if isinstance(a, IntervalUnion):
        return _unordered_match(a.parts, b.parts, rec)
    if isinstance(a, Matrix):
        return (len(a.rows) == len(b.rows)
                and all(len(r) == len(s) and all(rec(x, y) for x, y in zip(r, s))
                        for r, s in zip(a.rows, b.rows)))
    return False
