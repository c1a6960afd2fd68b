"""Find the arithmetic claims a step makes and check them exactly (``fractions.Fraction``).

A claim is an equality between arithmetic expressions:

- GSM8K's calculator annotations ``<<48/2=24>>``;
- ``a = b`` and chains ``3 + 4 = 7 = 14/2`` in the text, LaTeX operators included
  (``\\times``, ``\\cdot``, ``\\div``, ``\\frac{a}{b}``), with ``$``, thousands separators and
  ``%`` read as a reader would.

A side must be pure arithmetic right up to the ``=``: in ``48 apples / 2 = 24`` the left side
would be ``2``, cut out of a larger expression, so that claim is *not checkable* (never
"wrong"); ``x = 5`` and ``2x = 10`` make no checkable claim either. A decimal written with
k places equals a value that rounds to it (``10/3 = 3.33``). Division by zero, huge powers
and anything else odd make a claim uncheckable, never wrong.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction

#: GSM8K's calculator annotation: <<expression=result>>.
ANNOTATION = re.compile(r"<<([^<>=]*)=([^<>=]*)>>")
#: An "=" that is a claim of equality (not ==, <=, >=, !=, =>).
EQUALS = re.compile(r"(?<![<>!=])=(?![=>])")
#: Characters an arithmetic side may contain (LaTeX commands are rewritten first).
SIDE_CHARS = set("0123456789.,+-*/×÷·^()%$ \t")
OPERATORS = set("+-*/×÷·^:(")
LATEX_OPS = ((r"\times", "×"), (r"\cdot", "·"), (r"\div", "÷"), (r"\left", ""), (r"\right", ""), (r"\$", "$"))
FRAC = re.compile(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}")
THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?![\d])")
MAX_DIGITS = 1000  # a value with more digits than this is not checked
MAX_EXPONENT = 64


@dataclass(frozen=True)
class Claim:
    """An equality found in a step: its sides as written, and whether it holds (None: not checkable)."""

    sides: tuple[str, ...]
    correct: bool | None


class Unverifiable(ValueError):
    """A side that is not plain arithmetic we can evaluate exactly."""


def _rewrite_latex(text: str) -> str:
    """LaTeX operators as the characters the side scanner knows; ``\\frac{a}{b}`` as ``((a)/(b))``."""
    for command, char in LATEX_OPS:
        text = text.replace(command, char)
    previous = None
    while previous != text:
        previous, text = text, FRAC.sub(r"((\1)/(\2))", text)
    return text


def evaluate(side: str) -> Fraction:
    """The exact value of an arithmetic side; raises Unverifiable."""
    source = THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), side.replace("$", ""))
    if "," in source:
        raise Unverifiable(f"a comma that is not a thousands separator in {side!r}")
    source = (source.replace("×", "*").replace("·", "*").replace("÷", "/").replace("^", "**")
              .replace("%", "*(1/100)").strip())
    if not source or not re.search(r"\d", source):
        raise Unverifiable("no number")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        raise Unverifiable(f"not an expression: {side!r}") from None
    return _value(tree.body, source)


def _value(node: ast.AST, source: str) -> Fraction:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return Fraction(ast.get_source_segment(source, node) or str(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _value(node.operand, source)
        return value if isinstance(node.op, ast.UAdd) else -value
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, source), _value(node.right, source)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return _bounded(left * right)
        if isinstance(node.op, ast.Div):
            if right == 0:
                raise Unverifiable("division by zero")
            return left / right
        if isinstance(node.op, ast.Pow):
            if right.denominator != 1 or abs(right) > MAX_EXPONENT or (left == 0 and right < 0):
                raise Unverifiable("a power we do not evaluate")
            return _bounded(left ** int(right))
    raise Unverifiable(f"{type(node).__name__} is not arithmetic")


def _bounded(value: Fraction) -> Fraction:
    if len(str(value.numerator)) + len(str(value.denominator)) > MAX_DIGITS:
        raise Unverifiable("too large")
    return value


def equal(a: str, b: str) -> bool:
    """Whether two sides are equal: exactly, or one is a decimal literal the other rounds to."""
    left, right = evaluate(a), evaluate(b)
    if left == right:
        return True
    for literal, value in ((b, left), (a, right)):
        match = re.fullmatch(r"\s*\$?\s*-?\d[\d,]*\.(\d+)\s*%?\s*", literal)
        if match:
            places = len(match.group(1))
            rounded = evaluate(literal)
            if abs(value - rounded) <= Fraction(1, 2 * 10 ** places) + (Fraction(1, 10 ** (places + 6))):
                return True
    return False


def _side_before(segment: str) -> str | None:
    """The arithmetic side that ends where ``segment`` ends, or None when there is none or it is
    cut out of a larger expression (``48 apples / 2``: an operator or a word glued to its left)."""
    i = len(segment)
    while i > 0 and segment[i - 1] in SIDE_CHARS and not (segment[i - 1] == "," and not segment[i:i + 1].isdigit()):
        i -= 1
    region = segment[i:]
    side = region.strip()
    side = re.sub(r"^\d+[.)]\s+(?=\S)", "", side)  # a list marker "1. ", "2) " (a decimal point has no space after it)
    while side.startswith(")") or side.count("(") > side.count(")"):  # "... (see (3 + 4) = 7" keeps "3 + 4"
        side = side[1:].lstrip()
    if not re.search(r"\d", side) or side.count(")") > side.count("("):
        return None
    if side[0] in "*/×÷·^+%" or (side[0] == "-" and side[1:2].isspace()):
        return None  # the side begins with a binary operator: its left operand is outside it
    if i > 0 and not region[:1].isspace() and _glued(segment[i - 1]):
        return None  # glued to what precedes: "x5", "3:4", "a/2"
    return side


def _glued(char: str) -> bool:
    """A character that, touching a number, makes it part of a word or another notation."""
    return char.isalnum() or char in ":_\\'\"[]{}|"


def _side_after(segment: str) -> str | None:
    """The arithmetic side that starts where ``segment`` starts (see ``_side_before``)."""
    j = 0
    while (j < len(segment) and segment[j] in SIDE_CHARS
           and not (segment[j] == "," and not segment[j + 1:j + 2].isdigit())):
        j += 1
    region = segment[:j]
    side = region.strip()
    while side.endswith((".", ",")):  # sentence punctuation, not a decimal point
        side = side[:-1].rstrip()
    while side.endswith(")") and side.count(")") > side.count("("):
        side = side[:-1].rstrip()
    if not re.search(r"\d", side) or side.count("(") > side.count(")") or side[-1] in "+-*/×÷·^":
        return None
    if j < len(segment) and not region[-1:].isspace() and _glued(segment[j]) and not region.endswith("."):
        return None  # glued to what follows: "= 2x", "= 6:8"
    return side


def find_claims(text: str) -> list[Claim]:
    """Every equality claim in ``text``, checkable or not, in order of appearance."""
    claims: list[Claim] = []
    for match in ANNOTATION.finditer(text):
        claims.append(_claim((match.group(1), match.group(2))))
    text = _rewrite_latex(ANNOTATION.sub(lambda m: " " * len(m.group(0)), text))
    segments = EQUALS.split(text)
    chain: list[str] = []
    for i in range(len(segments) - 1):
        left = _side_before(segments[i]) if not chain else chain[-1]
        right = _side_after(segments[i + 1])
        if left is None or right is None:
            if len(chain) > 1:
                claims.append(_claim(tuple(chain)))
            chain = []
            continue
        if not chain:
            chain = [left]
        chain.append(right)
        if right != segments[i + 1].strip():  # the next "=" does not continue this chain
            claims.append(_claim(tuple(chain)))
            chain = []
    if len(chain) > 1:
        claims.append(_claim(tuple(chain)))
    return claims


def _claim(sides: tuple[str, ...]) -> Claim:
    try:
        return Claim(tuple(s.strip() for s in sides), all(equal(a, b) for a, b in zip(sides, sides[1:])))
    except Unverifiable:
        return Claim(tuple(s.strip() for s in sides), None)


def check_step(text: str) -> tuple[str, float | None]:
    """``("correct", 1.0)`` when every checkable claim holds, ``("wrong", 0.0)`` when one does not,
    ``("neutral", None)`` when the step makes no checkable claim."""
    verdicts = [c.correct for c in find_claims(text) if c.correct is not None]
    if not verdicts:
        return "neutral", None
    return ("correct", 1.0) if all(verdicts) else ("wrong", 0.0)
