"""Inequalities as intervals: ``x \\ge 7`` is ``[7, \\infty)``, ``3 > x`` is ``(-\\infty, 3)``.

:func:`relation_as_interval` rewrites a *normalized* answer that states a
one-variable inequality into interval notation, so that the structure layer
compares it with an interval gold, or with the same inequality written
another way (``x \\geq 7`` and ``7 \\le x``; ``-2 < x < 6`` and ``(-2, 6)``).

Recognised (``V`` a single variable such as ``x``, ``x_1``, ``\\theta``, ``f(x)``;
``a``, ``b`` bounds without relations or variables of their own):

* ``V op a`` and ``a op V`` with ``op`` one of ``< > \\le \\ge``, and ``V \\ne a``
  (the reals without ``a``);
* ``a op V op b`` with both relations pointing the same way;
* several of those joined by "or" (or ``\\cup``): a union of intervals;
* the reals: ``\\mathbb{R}`` and "all real numbers" are ``(-\\infty, \\infty)``.

Anything else is returned unchanged: this is a rewrite, not a parser.  Pure
string work, no sympy.
"""

from __future__ import annotations

import re

__all__ = ["canonical_relations", "relation_as_interval", "REALS"]

REALS = "(-\\infty, \\infty)"

_GE_RE = re.compile(r"\\(?:geqslant|geq|ge)(?![A-Za-z])|>=|≥")
_LE_RE = re.compile(r"\\(?:leqslant|leq|le)(?![A-Za-z])|<=|≤")
_GT_RE = re.compile(r"\\gt(?![A-Za-z])")
_NE_RE = re.compile(r"\\(?:neq|ne)(?![A-Za-z])|!=|≠")
_LT_RE = re.compile(r"\\lt(?![A-Za-z])")
_REALS_RE = re.compile(
    r"^(?:\\mathbb\s*\{?\s*R\s*\}?|ℝ|\\R|\\Re|\(?-\s*\\infty\s*,\s*\+?\s*\\infty\s*\)|"
    r"(?:the\s+set\s+of\s+)?all\s+real\s+numbers|the\s+real\s+numbers|real\s+numbers|x\s*\\in\s*\\mathbb\s*\{?R\}?)$",
    re.IGNORECASE)
# Relations in canonical spelling: "<", ">", "\le", "\ge".
_REL_RE = re.compile(r"\\le(?![A-Za-z])|\\ge(?![A-Za-z])|\\ne(?![A-Za-z])|<|>")
_VAR_RE = re.compile(r"[A-Za-z]\s*\(\s*[A-Za-z]\s*\)|[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?"
                     r"|\\(?:alpha|beta|gamma|theta|lambda|mu|phi|varphi|omega|sigma|tau)")
_OR_RE = re.compile(r"\s+(?:or)\s+|\\cup(?![A-Za-z])|\\lor(?![A-Za-z])|\\vee(?![A-Za-z])")
_LETTER_RE = re.compile(r"(?<!\\)(?<![A-Za-z])[A-Za-z](?![A-Za-z])")


def canonical_relations(s: str) -> str:
    """One spelling per relation: ``\\geq``, ``\\geqslant``, ``>=``, ``≥`` become ``\\ge``; ``\\lt`` is ``<``;
    ``\\neq``, ``!=``, ``≠`` become ``\\ne``."""
    s = _GE_RE.sub(r"\\ge ", s)
    s = _LE_RE.sub(r"\\le ", s)
    s = _GT_RE.sub(">", s)
    s = _LT_RE.sub("<", s)
    s = _NE_RE.sub(r"\\ne ", s)
    return s


def _is_bound(s: str) -> bool:
    return bool(s) and _REL_RE.search(s) is None and _LETTER_RE.search(s.replace("\\infty", "")) is None


def _interval(lower: str, lower_closed: bool, upper: str, upper_closed: bool) -> str:
    return f"{'[' if lower_closed else '('}{lower}, {upper}{']' if upper_closed else ')'}"


_FLIPPED = {"<": ">", ">": "<", "\\le": "\\ge", "\\ge": "\\le"}


def _negated(bound: str) -> str:
    bound = bound.strip()
    if bound.startswith("-") and not re.search(r"[-+]", bound[1:]):
        return bound[1:].strip()
    return f"-({bound})" if re.search(r"[-+ ]", bound) else f"-{bound}"


def _unnegated(left: str, right: str, op: str) -> tuple[str, str]:
    """``-x > -1`` as ``x`` and ``1`` (the caller flips the relation); other sides unchanged."""
    for side, other in ((left, right), (right, left)):
        if side.startswith("-") and _VAR_RE.fullmatch(side[1:].strip()) and _is_bound(other):
            var, bound = side[1:].strip(), _negated(other)
            return (var, bound) if side is left else (bound, var)
    return left, right


def _one_relation(s: str) -> str | None:
    """Interval for one (possibly double) inequality, or ``None``."""
    pieces: list[str] = []
    ops: list[str] = []
    pos = 0
    for m in _REL_RE.finditer(s):
        pieces.append(s[pos:m.start()].strip())
        ops.append(m.group())
        pos = m.end()
    pieces.append(s[pos:].strip())
    if not ops or len(ops) > 2:
        return None
    if len(ops) == 1:
        left, right = _unnegated(*pieces, ops[0])
        op = ops[0] if (left, right) == tuple(pieces) or ops[0] == "\\ne" else _FLIPPED[ops[0]]
        if op == "\\ne":
            if _VAR_RE.fullmatch(right) and _is_bound(left):
                left, right = right, left
            if not (_VAR_RE.fullmatch(left) and _is_bound(right)):
                return None
            return f"(-\\infty, {right}) \\cup ({right}, \\infty)"
        if _VAR_RE.fullmatch(right) and _is_bound(left):  # "3 > x" is "x < 3"
            left, right = right, left
            op = _FLIPPED[op]
        if not (_VAR_RE.fullmatch(left) and _is_bound(right)):
            return None
        if op in ("<", "\\le"):
            return _interval("-\\infty", False, right, op == "\\le")
        return _interval(right, op == "\\ge", "\\infty", False)
    low, var, high = pieces
    if not (_VAR_RE.fullmatch(var) and _is_bound(low) and _is_bound(high)):
        return None
    up = {"<": True, "\\le": True, ">": False, "\\ge": False}
    if "\\ne" in ops or up[ops[0]] != up[ops[1]]:
        return None
    if up[ops[0]]:
        return _interval(low, ops[0] == "\\le", high, ops[1] == "\\le")
    return _interval(high, ops[1] == "\\ge", low, ops[0] == "\\ge")


def relation_as_interval(s: str) -> str:
    """``s`` in interval notation when it states a one-variable inequality (else ``s``)."""
    if _REALS_RE.fullmatch(s.strip()):
        return REALS
    if _REL_RE.search(s) is None:
        return s
    parts = [p.strip() for p in _OR_RE.split(s)]
    intervals = [_one_relation(p) for p in parts]
    if any(i is None for i in intervals):
        return s
    return " \\cup ".join(intervals)  # type: ignore[arg-type]
