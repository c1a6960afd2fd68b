"""Safe LaTeX / plain-math parser producing sympy objects.

A regex tokenizer plus a recursive-descent parser build sympy objects
directly; ``eval``, ``sympify`` and ``parse_expr`` are never used, so model
output cannot execute code.

Supported: numbers (decimals become exact rationals), letters as symbols
(``x_1``/``a_{n}`` subscripts), ``e`` and ``i`` as constants, ``\\pi``,
``\\infty``, ``+ - * / \\cdot \\times \\div``, powers ``^``/``**`` (right
associative), implicit multiplication (``2x``, ``2\\pi``, ``3(x+1)``,
``x y``), ``\\frac{a}{b}``/``\\frac12``, ``\\sqrt{x}``/``\\sqrt[3]{x}``,
``\\binom``, functions (``\\sin \\cos \\tan \\sec \\csc \\cot \\arcsin
\\arccos \\arctan \\sinh \\cosh \\tanh \\log \\log_b \\ln \\exp``, also
written without backslash), ``|x|``, ``\\lfloor x\\rfloor``,
``\\lceil x\\rceil`` and postfix ``!``.  ``\\pm``, relations and
commas are not expressions: the structure layer handles them.

Only exact rational arithmetic is evaluated; everything else is built
unevaluated by :mod:`.sympy_build` (sympy's automatic simplification can
take unbounded time on hostile input), and compared numerically later.

Resource guards (checked *before* sympy does the work) raise
:class:`ExpressionTooLarge`: input longer than :data:`MAX_INPUT_CHARS`,
nesting deeper than :data:`MAX_DEPTH`, more than :data:`MAX_TOTAL_DIGITS`
digits of exact numbers in total, plus the per-operation guards of
:mod:`.sympy_build` (huge powers and towers such as ``9^{9^{9^9}}``, big
factorials).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sympy

from .errors import ExpressionTooLarge, MathParseError
from .sympy_build import (
    MAX_DIGITS,
    MAX_FACTORIAL,
    add,
    binomial,
    div,
    factorial,
    mul,
    neg,
    number_digits,
    power,
    root,
    symbol,
)

__all__ = ["parse_latex", "MAX_INPUT_CHARS", "MAX_DEPTH", "MAX_DIGITS", "MAX_FACTORIAL"]

MAX_INPUT_CHARS = 2000
MAX_DEPTH = 100


_TOKEN_RE = re.compile(
    r"(?P<ws>\s+)|(?P<num>\d+\.\d*|\.\d+|\d+)|(?P<cmd>\\[A-Za-z]+|\\[{}|])"
    r"|(?P<word>[A-Za-z]+)|(?P<op>\*\*|[-+*/^_!(){}\[\]|])"
)

_FUNCS: dict[str, Callable[[sympy.Expr], sympy.Expr]] = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "sec": sympy.sec,
    "csc": sympy.csc, "cot": sympy.cot, "arcsin": sympy.asin, "arccos": sympy.acos,
    "arctan": sympy.atan, "sinh": sympy.sinh, "cosh": sympy.cosh, "tanh": sympy.tanh,
    "ln": sympy.log, "log": sympy.log, "exp": sympy.exp,
    # Plain-text spellings (sympy/Python output: "asin(3*x)").
    "asin": sympy.asin, "acos": sympy.acos, "atan": sympy.atan,
}
_CONSTANTS = {"pi": sympy.pi, "infty": sympy.oo, "infinity": sympy.oo, "inf": sympy.oo}
_MUL_OPS = {"*", "\\cdot", "\\times", "\\ast"}
_DIV_OPS = {"/", "\\div"}
_WORDS = set(_FUNCS) | set(_CONSTANTS) | {"sqrt"}
_GREEK = frozenset({
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
    "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau",
    "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta",
    "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega",
})
#: Total digits of exact numbers one input may create (sum over powers/factorials).
MAX_TOTAL_DIGITS = 3 * MAX_DIGITS


@dataclass
class _Tok:
    kind: str  # "num" | "cmd" | "word" | "op"
    text: str


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise MathParseError(f"unexpected character {text[pos]!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind == "ws":
            continue
        if kind == "word":
            tokens.extend(_split_word(m.group()))
        else:
            tokens.append(_Tok(kind, m.group()))
    return tokens


def _split_word(word: str) -> list[_Tok]:
    """``sin`` stays a word; ``xy`` becomes two one-letter words."""
    if word.lower() in _WORDS:
        return [_Tok("cmd", "\\" + word.lower())]
    return [_Tok("word", ch) for ch in word]


class _Parser:
    """Recursive-descent parser over a token list; one instance per input."""

    def __init__(self, tokens: list[_Tok]) -> None:
        self.toks = tokens
        self.pos = 0
        self.depth = 0
        self.total_digits = 0.0

    # -- token helpers -------------------------------------------------
    def peek(self) -> _Tok | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def at(self, *texts: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.text in texts

    def take(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise MathParseError("unexpected end of input")
        self.pos += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.take()
        if tok.text != text:
            raise MathParseError(f"expected {text!r}, got {tok.text!r}")

    def spend(self, value: sympy.Expr) -> sympy.Expr:
        """Charge the digits of an exact number built by a power/factorial."""
        self.total_digits += number_digits(value)
        if self.total_digits > MAX_TOTAL_DIGITS:
            raise ExpressionTooLarge("too many large numbers")
        return value

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionTooLarge("expression nested too deeply")

    # -- grammar -------------------------------------------------------
    def parse(self) -> sympy.Expr:
        result = self.expr()
        if self.peek() is not None:
            raise MathParseError(f"unexpected token {self.peek().text!r}")
        return result

    def expr(self) -> sympy.Expr:
        self.enter()
        result = self.term()
        while self.at("+", "-"):
            op = self.take().text
            rhs = self.term()
            result = add(result, rhs if op == "+" else neg(rhs))
        self.depth -= 1
        return result

    def term(self) -> sympy.Expr:
        result = self.unary()
        while True:
            tok = self.peek()
            if tok is None:
                return result
            if tok.text in _MUL_OPS:
                self.take()
                result = mul(result, self.unary())
            elif tok.text in _DIV_OPS:
                self.take()
                result = div(result, self.unary())
            elif self.starts_primary(tok):
                if tok.kind == "num" and self.toks[self.pos - 1].kind == "num":
                    raise MathParseError("two numbers in a row")
                result = mul(result, self.power())
            else:
                return result

    def starts_primary(self, tok: _Tok) -> bool:
        if tok.kind in ("num", "word"):
            return True
        if tok.kind == "cmd":
            name = tok.text[1:]
            return name in _FUNCS or name in _CONSTANTS or name in _GREEK or name in (
                "frac", "sqrt", "binom", "lfloor", "lceil")
        return tok.text in ("(", "{", "[")

    def unary(self) -> sympy.Expr:
        if self.at("-", "+"):
            self.enter()
            op = self.take().text
            operand = self.unary()
            self.depth -= 1
            return operand if op == "+" else neg(operand)
        return self.power()

    def power(self) -> sympy.Expr:
        base = self.postfix()
        if self.at("^", "**"):
            self.take()
            self.enter()
            exponent = self.exponent()
            self.depth -= 1
            base = self.spend(power(base, exponent))
            while self.at("!"):
                self.take()
                base = self.spend(factorial(base))
        return base

    def exponent(self) -> sympy.Expr:
        if self.at("{"):
            return self.group("{", "}")
        if self.at("-", "+"):
            return self.unary()
        return self.power()

    def postfix(self) -> sympy.Expr:
        result = self.primary()
        while self.at("!"):
            self.take()
            result = self.spend(factorial(result))
        return result

    def group(self, open_: str, close: str) -> sympy.Expr:
        self.expect(open_)
        result = self.expr()
        self.expect(close)
        return result

    def primary(self) -> sympy.Expr:
        tok = self.peek()
        if tok is None:
            raise MathParseError("unexpected end of input")
        if tok.kind == "num":
            self.take()
            return sympy.Rational(tok.text) if "." in tok.text else sympy.Integer(tok.text)
        if tok.kind == "word":
            self.take()
            return symbol(tok.text + self.subscript())
        if tok.text in ("(", "{", "["):
            return self.group(tok.text, {"(": ")", "{": "}", "[": "]"}[tok.text])
        if tok.text == "|":
            inner = self.group("|", "|")
            return sympy.Abs(inner, evaluate=isinstance(inner, sympy.Rational))
        if tok.kind == "cmd":
            return self.command(tok.text[1:])
        raise MathParseError(f"unexpected token {tok.text!r}")

    def subscript(self) -> str:
        if not self.at("_"):
            return ""
        self.take()
        tok = self.take()
        if tok.text != "{":
            return "_" + tok.text
        parts = []
        while not self.at("}"):
            parts.append(self.take().text)
            if len(parts) > 20:
                raise MathParseError("subscript too long")
        self.take()
        return "_{" + "".join(parts) + "}"

    def argument(self) -> sympy.Expr:
        """A command argument: ``{...}`` or a single token (``\\frac12``)."""
        tok = self.peek()
        if tok is not None and tok.kind == "num" and len(tok.text) > 1 and tok.text[0] != ".":
            self.toks[self.pos] = _Tok("num", tok.text[1:])
            return sympy.Integer(tok.text[0])
        if tok is not None and tok.text == "{":
            return self.group("{", "}")
        return self.primary()

    def command(self, name: str) -> sympy.Expr:
        self.take()
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name in _GREEK:
            return sympy.Symbol(name + self.subscript())
        if name == "frac":
            num = self.argument()
            return div(num, self.argument())
        if name == "binom":
            n = self.argument()
            return binomial(n, self.argument())
        if name == "sqrt":
            if self.at("["):
                index = self.group("[", "]")
                return root(self.argument(), index)
            return power(self.argument(), sympy.Rational(1, 2))
        if name in ("lfloor", "lceil"):
            inner = self.expr()
            self.expect("\\r" + name[1:])
            func = sympy.floor if name == "lfloor" else sympy.ceiling
            return func(inner, evaluate=isinstance(inner, sympy.Rational))
        if name in _FUNCS:
            return self.function(name)
        raise MathParseError(f"unsupported command \\{name}")

    def function(self, name: str) -> sympy.Expr:
        base = None
        if name == "log" and self.at("_"):
            self.take()
            base = self.argument()
        exponent = None
        if self.at("^"):
            self.take()
            exponent = self.exponent()
        if self.at("("):
            arg = self.group("(", ")")
        else:
            self.enter()
            arg = self.term_no_implicit_funcs()
            self.depth -= 1
        if base is None:
            result = _FUNCS[name](arg, evaluate=False)
        else:
            result = div(sympy.log(arg, evaluate=False), sympy.log(base, evaluate=False))
        return result if exponent is None else power(result, exponent)

    def term_no_implicit_funcs(self) -> sympy.Expr:
        """Function argument without parentheses: ``\\sin 2x`` is ``sin(2x)``."""
        result = self.power()
        while True:
            tok = self.peek()
            if tok is None or not self.starts_primary(tok) or tok.kind == "cmd" and tok.text[1:] in _FUNCS:
                return result
            if tok.kind == "num":
                return result
            result = mul(result, self.power())


def parse_latex(text: str) -> sympy.Expr:
    """Parse a (normalized) LaTeX or plain-math expression into a sympy object.

    Raises:
        MathParseError: the text is not a supported expression.
        ExpressionTooLarge: the expression exceeds a resource guard.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ExpressionTooLarge("input too long")
    tokens = _tokenize(text)
    if not tokens:
        raise MathParseError("empty expression")
    return _Parser(tokens).parse()
