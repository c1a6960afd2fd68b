"""Answers written as arithmetic on literal matrices: ``A + B``, ``A - B``, ``A B``, ``A \\cdot B``.

"The sum is $\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix} + \\begin{pmatrix}5&6\\\\7&8\\end{pmatrix}$" states
the matrix ``(6, 8; 10, 12)``.  :func:`matrix_expression` turns such an answer into the rows of the
resulting matrix, each entry an unevaluated expression string (``(1)+(5)``, ``(1)*(5)+(2)*(7)``)
that the equivalence step compares like any entry.  Pure string work, no sympy; at most
:data:`MAX_OPERANDS` matrices of at most :data:`MAX_CELLS` entries each.
"""

from __future__ import annotations

import re

__all__ = ["matrix_expression", "MAX_OPERANDS", "MAX_CELLS"]

MAX_OPERANDS = 4
MAX_CELLS = 64
_LITERAL_RE = re.compile(r"\\begin\{([pbvBV]?matrix)\}(.*?)\\end\{\1\}", re.DOTALL)
_SUM_OPS = frozenset({"+", "-"})
_PRODUCT_OPS = frozenset({"", "\\cdot", "\\times", "*"})

Rows = list[list[str]]


def _rows(body: str) -> Rows:
    rows = [[c.strip() for c in row.split("&")] for row in body.split("\\\\") if row.strip()]
    return rows if rows and all(len(r) == len(rows[0]) for r in rows) and all(all(r) for r in rows) else []


def _sum(a: Rows, b: Rows, op: str) -> Rows | None:
    if len(a) != len(b) or len(a[0]) != len(b[0]):
        return None
    return [[f"({x}){op}({y})" for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]


def _product(a: Rows, b: Rows) -> Rows | None:
    if len(a[0]) != len(b):
        return None
    return [["+".join(f"({a[i][k]})*({b[k][j]})" for k in range(len(b))) for j in range(len(b[0]))]
            for i in range(len(a))]


def matrix_expression(s: str) -> Rows | None:
    """The entries of the matrix that ``s`` computes from two or more literal matrices (``None``
    when ``s`` is not such an expression: one matrix, other terms, mixed or unknown operators,
    shapes that do not fit)."""
    literals = list(_LITERAL_RE.finditer(s))
    if not 2 <= len(literals) <= MAX_OPERANDS or s[:literals[0].start()].strip() or s[literals[-1].end():].strip():
        return None
    ops = [s[prev.end():nxt.start()].strip() for prev, nxt in zip(literals, literals[1:])]
    operands = [_rows(m.group(2)) for m in literals]
    if not all(operands) or any(len(m) * len(m[0]) > MAX_CELLS for m in operands):
        return None
    result: Rows | None = operands[0]
    if all(op in _SUM_OPS for op in ops):
        for op, operand in zip(ops, operands[1:]):
            result = _sum(result, operand, op) if result is not None else None
    elif all(op in _PRODUCT_OPS for op in ops):
        for operand in operands[1:]:
            result = _product(result, operand) if result is not None else None
    else:
        return None
    if result is None or sum(len(c) for r in result for c in r) > 100 * MAX_CELLS:
        return None
    return result
