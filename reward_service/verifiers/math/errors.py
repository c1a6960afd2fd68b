"""Exceptions raised inside the math verifier.

They never escape the public verdict functions (:func:`answers_match`,
:func:`grade`, :func:`grade_numeric`): those turn them into a non-match.
They are public so that callers using :func:`parse_latex` directly can catch
them precisely.
"""

from __future__ import annotations

__all__ = ["MathParseError", "ExpressionTooLarge"]


class MathParseError(ValueError):
    """The text is not an expression the LaTeX/plain-math parser understands."""


class ExpressionTooLarge(ValueError):
    """The expression would be too expensive to build or evaluate.

    Raised *before* sympy does the expensive work: huge integer powers
    (``9^{9^{9^9}}``), big factorials (``100000!``), very deep nesting and
    over-long inputs.
    """
