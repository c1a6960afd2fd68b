"""The answer transformations of `make verify-diff`: equivalent rewrites and wrong variants.

Pure functions on answer strings (LaTeX, or the plain math of reasoning-gym's answers). Every
rewrite in ``REWRITES`` keeps the value and every variant in ``WRONGS`` changes it, by
construction; each returns None where it does not apply. ``verify_diff_pairs.py`` embeds them in
responses.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

# ---------------------------------------------------------------- answer structure

# A number token: grouped thousands (1,000 / 1{,}000 / 1\,000), a decimal, an integer.
GROUPED = r"\d{1,3}(?:(?:,|\{,\}|\\,)\d{3})+(?:\.\d+)?"
NUM = re.compile(GROUPED + r"|\d*\.\d+|\d+")
GROUP_SEP = re.compile(r"\{,\}|\\,|,")
INTERVAL = re.compile(r"(\\left)?([(\[])(.*?)(\\right)?([)\]])", re.S)
SET = re.compile(r"(\\left)?\\\{(.*?)(\\right)?\\\}", re.S)
RELATION = re.compile(r"\\(?:geq?|leq?)(?![a-zA-Z])|(?<!\\)[<>]")


def _depths_ok(s: str) -> bool:
    """Every closing (, [, { in s has its opener inside s."""
    depth = 0
    for ch in s:
        depth += (ch in "([{") - (ch in ")]}")
        if depth < 0:
            return False
    return depth == 0


def split_top(s: str) -> list[str]:
    """s split at the ", " that are outside every bracket and brace."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0 and s[i + 1:i + 2] == " ":
            items.append(s[start:i].strip())
            start = i + 1
    return items + [s[start:].strip()]


@dataclass(frozen=True)
class Shape:
    # set, bracket (interval or tuple), list (bare, comma separated), equation, relation, matrix, scalar, other
    kind: str
    items: tuple[str, ...] = ()
    open: str = ""
    close: str = ""

    def join(self, items: list[str] | tuple[str, ...]) -> str:
        return self.open + ", ".join(items) + self.close


def shape(a: str) -> Shape:
    if "\\begin" in a:
        return Shape("matrix")
    m = SET.fullmatch(a)
    if m and _depths_ok(m.group(2)):
        lr = bool(m.group(1))
        return Shape("set", tuple(split_top(m.group(2))), "\\left\\{" if lr else "\\{", "\\right\\}" if lr else "\\}")
    m = INTERVAL.fullmatch(a)
    if m and _depths_ok(m.group(3)) and len(split_top(m.group(3))) >= 2:
        return Shape("bracket", tuple(split_top(m.group(3))), (m.group(1) or "") + m.group(2),
                     (m.group(4) or "") + m.group(5))
    items = split_top(a)
    if len(items) >= 2 and "\\text" not in a and {x.count("=") for x in items} in ({0}, {1}):
        return Shape("list", tuple(items))  # values, or one equation each (a = -3, b = 2)
    if "\\cup" in a or "\\text" in a or "\\pm" in a or a.count("=") > 1:
        return Shape("other")
    if RELATION.search(a):
        return Shape("relation") if len(RELATION.findall(a)) == 1 and "=" not in a else Shape("other")
    return Shape("equation") if a.count("=") == 1 and "," not in a else Shape("scalar")


def is_constant(a: str) -> bool:
    """A single value without variables: a number, with \\pi, roots, %, degrees, a currency sign."""
    bare = re.sub(r"(?<=\d)e[+-]?\d+", "", re.sub(r"\\[a-zA-Z]+", "", a))
    return shape(a).kind == "scalar" and bool(re.search(r"\d|\\pi", a)) and not re.search(r"[a-zA-Z:]", bare)


FRAC = re.compile(r"(-?)\\[dt]?frac\{(-?\d+)\}\{(\d+)\}|(-?)\\[dt]?frac(\d)(\d)|(-?\d+)/(\d+)")


def as_fraction(s: str) -> Fraction | None:
    """The exact value of a plain number or a plain fraction (\\frac{a}{b}, \\frac12, a/b), else None."""
    if re.fullmatch(r"-?\d*\.?\d+", s):
        return Fraction(s)
    m = FRAC.fullmatch(s)
    if not m or (m.group(3) or m.group(6) or m.group(8)) in ("0", None):
        return None
    if m.group(8):
        return Fraction(int(m.group(7)), int(m.group(8)))
    sign, num, den = (m.group(1), m.group(2), m.group(3)) if m.group(3) else (m.group(4), m.group(5), m.group(6))
    return (-1 if sign else 1) * Fraction(int(num), int(den))


def exact_decimal(value: Fraction, max_places: int = 6) -> str | None:
    """value as a terminating decimal string, when it is one with at most max_places places."""
    for places in range(1, max_places + 1):
        scaled = value * 10 ** places
        if scaled.denominator == 1:
            text = f"{abs(scaled.numerator):0{places + 1}d}"
            return ("-" if value < 0 else "") + text[:-places] + "." + text[-places:]
    return None


def latex_frac(value: Fraction) -> str:
    return ("-" if value < 0 else "") + f"\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def _group(digits: str, sep: str) -> str:
    head, dot, tail = digits.partition(".")
    sign = "-" if head.startswith("-") else ""
    head = head.lstrip("-")
    groups = [head[max(0, i - 3):i] for i in range(len(head), 0, -3)][::-1]
    return sign + sep.join(groups) + dot + tail


def _fmt(value: Decimal, like: str) -> str:
    """value written as the number token `like` is written (its thousands separator, if any)."""
    text = f"{value:f}"
    sep = GROUP_SEP.search(like)
    return _group(text, sep.group()) if sep and "." not in like.split(sep.group())[0] else text


# ---------------------------------------------------------------- equivalent rewrites

def _lift(rewrite: Callable[[str], str | None]) -> Callable[[str], str | None]:
    """A rewrite of single values, applied to the whole answer or to every element it applies to."""
    def lifted(a: str) -> str | None:
        s = shape(a)
        if s.kind in ("set", "bracket", "list"):
            items = [rewrite(x) or x for x in s.items]
            return s.join(items) if list(s.items) != items else None
        return rewrite(a) if s.kind == "scalar" else None
    return lifted


def _sub(pattern: str, repl: str | Callable, guard: Callable[[str], bool] = lambda a: True):
    def rewrite(a: str) -> str | None:
        out = re.sub(pattern, repl, a) if guard(a) else a
        return out if out != a else None
    return rewrite


def _slash_frac(s: str) -> str | None:
    v = as_fraction(s)
    return f"{'-' if v < 0 else ''}{abs(v.numerator)}/{v.denominator}" if v is not None and "frac" in s else None


def _frac_from_slash(s: str) -> str | None:
    return latex_frac(as_fraction(s)) if re.fullmatch(r"-?\d+/\d+", s) and as_fraction(s) is not None else None


def _decimal_to_frac(s: str) -> str | None:
    v = as_fraction(s) if "." in s else None
    return latex_frac(v) if v is not None and 1 < v.denominator <= 1000 else None


def _frac_to_decimal(s: str) -> str | None:
    v = as_fraction(s) if ("frac" in s or "/" in s) else None
    return exact_decimal(v) if v is not None and v.denominator > 1 else None


def _mixed(s: str, to_decimal: bool) -> str | None:
    m = re.fullmatch(r"(\d+)\\frac\{(\d+)\}\{(\d+)\}(\\%)?", s)
    if not m:
        return None
    value = int(m.group(1)) + Fraction(int(m.group(2)), int(m.group(3)))
    out = exact_decimal(value) if to_decimal else latex_frac(value)
    return out + (m.group(4) or "") if out else None


def _trailing_zeros(s: str) -> str | None:
    if re.fullmatch(r"-?\d+", s):
        return s + ".00"
    if re.fullmatch(r"-?\d+\.\d+", s):
        return s.rstrip("0").rstrip(".") if s.endswith("0") else s + "0"
    return None


def _leading_zero(s: str) -> str | None:
    if re.fullmatch(r"-?\.\d+", s):
        return s.replace(".", "0.", 1)
    return s.replace("0.", ".", 1) if re.fullmatch(r"-?0\.\d+", s) else None


def _thousands(sep: str) -> Callable[[str], str | None]:
    return lambda a: _group(a, sep) if re.fullmatch(r"-?\d{4,}(\.\d+)?", a) else None


def _sci_expanded(a: str) -> str | None:
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?) ?\\(?:times|cdot) ?10\^\{?(-?\d+)\}?", a)
    return f"{Decimal(m.group(1)).scaleb(int(m.group(2))):f}" if m else None


def _power_evaluated(a: str) -> str | None:
    m = re.fullmatch(r"(\d+)\^\{?(-?\d+)\}?", a)
    if not m or abs(int(m.group(2))) > 40 or int(m.group(1)) == 0:
        return None
    value = Fraction(int(m.group(1))) ** int(m.group(2))
    return str(value) if value.denominator == 1 else latex_frac(value)


def _interval_as_inequality(short: bool) -> Callable[[str], str | None]:
    geq, leq = ("\\ge", "\\le") if short else ("\\geq", "\\leq")

    def rewrite(a: str) -> str | None:
        s = shape(a)
        if s.kind != "bracket" or len(s.items) != 2 or not ("[" in s.open + s.close or "\\infty" in a):
            return None
        lo, hi = s.items
        lower, upper = (geq if s.open.endswith("[") else ">"), (leq if s.close.endswith("]") else "<")
        if lo == "-\\infty" and hi == "\\infty":
            return None
        if lo == "-\\infty":
            out = f"x {upper} {hi}"
        elif hi == "\\infty":
            out = f"x {lower} {lo}"
        else:
            out = f"{lo} {'<' if lower == '>' else leq} x {upper} {hi}"
        return out if not short or "\\ge" in out or "\\le" in out else None
    return rewrite


def _add_left_right(a: str) -> str | None:
    if re.search(r"\\left|\\sqrt\[|\\text", a) or _choice(a) or not re.search(r"[(\[]|\\\{", a):
        return None
    for group in re.findall(r"\{([^{}]*)\}", a):  # \left( ... \right) must not straddle a brace group
        if not _depths_ok(re.sub(r"[^()\[\]]", "", group)):
            return None
    if not _depths_ok(re.sub(r"[^()\[\]]", "", a)):
        return None
    out = a.replace("\\{", "\0").replace("\\}", "\1")
    out = re.sub(r"[(\[]", lambda m: "\\left" + m.group(), out)
    out = re.sub(r"[)\]]", lambda m: "\\right" + m.group(), out)
    return out.replace("\0", "\\left\\{").replace("\1", "\\right\\}")


def _reorder(a: str) -> str | None:
    s = shape(a)
    if s.kind not in ("set", "list") or len(set(s.items)) < 2:
        return None
    return s.join(s.items[::-1])


def _swap_sides(a: str) -> str | None:
    if shape(a).kind != "equation":
        return None
    lhs, rhs = a.split("=")
    return f"{rhs.strip()} = {lhs.strip()}"


def _drop_lhs(a: str) -> str | None:
    m = re.fullmatch(r"[a-zA-Z] ?= ?(.+)", a)
    return m.group(1) if m and is_constant(m.group(1)) else None


def _pm_expanded(a: str) -> str | None:
    m = re.fullmatch(r"([^,=]+?) ?\\pm ?([^,=+-]+)", a)
    return f"{m.group(1)} + {m.group(2)}, {m.group(1)} - {m.group(2)}" if m else None


_FLIP = {">": "<", "<": ">", "\\ge": "\\le", "\\le": "\\ge", "\\geq": "\\leq", "\\leq": "\\geq"}
_STRICT = {">": "\\geq", "<": "\\leq", "\\ge": ">", "\\geq": ">", "\\le": "<", "\\leq": "<"}


def _relation(a: str) -> tuple[str, str, str] | None:
    """(left side, relation, right side) of a single inequality."""
    if shape(a).kind != "relation":
        return None
    m = RELATION.search(a)
    return a[:m.start()].strip(), m.group(), a[m.end():].strip()


def _relation_reversed(a: str) -> str | None:
    r = _relation(a)
    return f"{r[2]} {_FLIP[r[1]]} {r[0]}" if r and r[0] and r[2] else None


def _ineq_as_interval(a: str) -> str | None:
    r = _relation(a)
    if not r or not re.fullmatch(r"[a-z]", r[0]) or not is_constant(r[2]):
        return None
    op, c = r[1], r[2]
    return {">": f"({c}, \\infty)", "<": f"(-\\infty, {c})"}.get(op) or (
        f"[{c}, \\infty)" if op.startswith("\\g") else f"(-\\infty, {c}]")


def _choice(a: str) -> re.Match | None:
    """A multiple-choice answer: D, (D), \\text{D}, \\text{(D)}; group 3 is the letter."""
    return re.fullmatch(r"(\\text\{)?(\()?([A-E])(?(2)\))(?(1)\})", a)


def _choice_form(a: str) -> str | None:
    m = _choice(a)
    return None if not m else f"({a})" if a == m.group(3) else m.group(3)


_UNITS = ("\\text{ cm}", "\\text{ units}", "\\ \\text{m}")
_NO_E_NOTATION = lambda a: not re.search(r"\de[+-]?\d", a)  # noqa: E731

# (name, rewrite); each keeps the value, returns None where it does not apply or changes nothing.
REWRITES: tuple[tuple[str, Callable[[str], str | None]], ...] = (
    ("extra_spacing", _sub(r"\s*([+=])\s*", r"  \1  ", _NO_E_NOTATION)),
    ("dfrac", _sub(r"\\frac(?=[{\d])", r"\\dfrac")),
    ("tfrac", _sub(r"\\frac(?=[{\d])", r"\\tfrac")),
    ("plain_frac", _sub(r"\\[dt]frac", r"\\frac")),
    ("frac_short", _sub(r"\\frac\{(\d)\}\{(\d)\}", r"\\frac\1\2")),
    ("frac_braced", _sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}")),
    ("sqrt_short", _sub(r"\\sqrt\{(\d)\}", r"\\sqrt\1")),
    ("sqrt_braced", _sub(r"\\sqrt(\d)", r"\\sqrt{\1}")),
    ("left_right", _add_left_right),
    ("drop_left_right", _sub(r"\\left|\\right", "")),
    ("degrees_braced", _sub(r"\^\\circ", r"^{\\circ}")),
    ("degrees_unbraced", _sub(r"\^\{\\circ\}", r"^\\circ")),
    ("degrees_symbol", _sub(r"\^\{?\\circ\}?", "°")),
    ("degrees_latex", _sub("°", r"^\\circ")),
    ("times_latex", _sub("×", r"\\times")),
    ("cdot_explicit", _sub(r"(\d)(\\pi|\\sqrt)", r"\1 \\cdot \2")),
    ("strip_point_zero", _sub(r"(?<![\d.])(\d+)\.0+(?!\d)", r"\1")),
    ("sci_times", _sub(r"^(-?\d+(?:\.\d+)?)e([+-]?\d+)$", lambda m: f"{m.group(1)} \\times 10^{{{int(m.group(2))}}}")),
    ("sci_cdot", _sub(r"\\times 10\^", r"\\cdot 10^")),
    ("sci_expanded", _sci_expanded),
    ("power_evaluated", _power_evaluated),
    ("pmatrix_to_bmatrix", _sub("pmatrix", "bmatrix")),
    ("drop_currency", _sub(r"^\\\$", "")),
    ("slash_frac", _lift(_slash_frac)),
    ("frac_from_slash", _lift(_frac_from_slash)),
    ("decimal_to_frac", _lift(_decimal_to_frac)),
    ("frac_to_decimal", _lift(_frac_to_decimal)),
    ("mixed_to_improper", _lift(lambda s: _mixed(s, to_decimal=False))),
    ("mixed_to_decimal", _lift(lambda s: _mixed(s, to_decimal=True))),
    ("trailing_zeros", _lift(_trailing_zeros)),
    ("leading_zero", _lift(_leading_zero)),
    ("thousands_comma", _thousands(",")),
    ("thousands_brace", _thousands("{,}")),
    ("thousands_thinspace", _thousands("\\,")),
    ("thousands_removed", _sub(f"^-?{GROUPED}$", lambda m: GROUP_SEP.sub("", m.group()))),
    ("units", lambda a: a + _UNITS[len(a) % 3] if is_constant(a) and not re.search(r"%|circ|°|\\\$", a) else None),
    ("x_equals", lambda a: f"x = {a}" if is_constant(a) else None),
    ("drop_lhs", _drop_lhs),
    ("swap_sides", _swap_sides),
    ("interval_as_ineq_geq", _interval_as_inequality(short=False)),
    ("interval_as_ineq_ge", _interval_as_inequality(short=True)),
    ("pm_expanded", _pm_expanded),
    ("geq_long", _sub(r"\\(ge|le)(?![a-zA-Z])", r"\\\1q")),
    ("geq_short", _sub(r"\\(ge|le)q(?![a-zA-Z])", r"\\\1")),
    ("relation_reversed", _relation_reversed),
    ("ineq_as_interval", _ineq_as_interval),
    ("choice_form", _choice_form),
    ("drop_text", _sub(r"^\\text\{([^{}]+)\}$", r"\1", lambda a: not _choice(a))),
    ("capitalized", lambda a: a.capitalize() if re.fullmatch(r"[a-z]{2,}", a) else None),
    ("reorder_elements", _reorder),
)


def rewrites(a: str) -> list[tuple[str, str]]:
    """Every (name, equivalent form of a) that applies."""
    out = [(name, fn(a)) for name, fn in REWRITES]
    return [(name, b) for name, b in out if b and b != a]


# ---------------------------------------------------------------- wrong variants

def _numbers(a: str) -> list[re.Match]:
    text_spans = [m.span() for m in re.finditer(r"\\text\{[^}]*\}", a)]
    return [m for m in NUM.finditer(a) if not any(s <= m.start() < e for s, e in text_spans)]


def change_number(a: str, rng: random.Random, scale: bool) -> str | None:
    tokens = [m for m in _numbers(a) if not scale or Decimal(GROUP_SEP.sub("", m.group())) != 0]
    if not tokens:
        return None
    m = rng.choice(tokens)
    value = Decimal(GROUP_SEP.sub("", m.group()))
    new = value * 10 if scale else (value + 1 if value < 2 or rng.random() < 0.5 else value - 1)
    return a[:m.start()] + _fmt(new, m.group()) + a[m.end():]


def _negate(x: str) -> str | None:
    """-x for a number or expression; None for zero, infinity, words, choices, times, equations."""
    if re.search(r"\\infty|\\text|\\mathbb|[:=]|^\(.*,", x) or re.fullmatch(r"-?[0.]+|\(?[A-Z]\)?|[a-zA-Z]{2,}", x):
        return None
    if not re.search(r"\d|\\pi|[a-z]", x):
        return None
    return x[1:].lstrip() if x.startswith("-") else "-" + x


def _flip_sign(a: str, rng: random.Random) -> str | None:
    s = shape(a)
    if s.kind in ("set", "bracket", "list"):
        choices = [i for i, x in enumerate(s.items) if _negate(x)]
        if not choices:
            return None
        i = rng.choice(choices)
        return s.join(s.items[:i] + (_negate(s.items[i]),) + s.items[i + 1:])
    if s.kind == "equation":
        lhs, rhs = a.split("=")
        new = _negate(rhs.strip())
        return f"{lhs.rstrip()} = {new}" if new else None
    return _negate(a) if s.kind == "scalar" else None


def _swap(a: str, want_interval: bool) -> str | None:
    s = shape(a)
    is_interval = "[" in s.open + s.close or "\\infty" in a
    if s.kind != "bracket" or is_interval != want_interval or s.items[0] == s.items[1]:
        return None
    return s.join((s.items[1], s.items[0]) + s.items[2:])


def _change_bracket(a: str, rng: random.Random) -> str | None:
    s = shape(a)
    if s.kind != "bracket" or len(s.items) != 2:
        return None
    flip = {"(": "[", "[": "(", ")": "]", "]": ")"}
    sides = [side for side, item in ((0, s.items[0]), (1, s.items[1])) if "\\infty" not in item]
    if not sides:
        return None
    if rng.choice(sides) == 0:
        return s.open[:-1] + flip[s.open[-1]] + ", ".join(s.items) + s.close
    return s.open + ", ".join(s.items) + s.close[:-1] + flip[s.close[-1]]


def _drop_element(a: str, rng: random.Random) -> str | None:
    s = shape(a)
    ok = s.kind in ("set", "list") or (s.kind == "bracket" and len(s.items) >= 3 and "[" not in s.open + s.close)
    if not ok or len(set(s.items)) != len(s.items) or len(s.items) < 2:
        return None
    i = rng.randrange(len(s.items))
    return s.join(s.items[:i] + s.items[i + 1:])


def _add_element(a: str, rng: random.Random) -> str | None:
    s = shape(a)
    if s.kind not in ("set", "list") or "=" in a:
        return None
    extra = change_number(rng.choice(s.items), rng, scale=False)
    return s.join(s.items + (extra,)) if extra and extra not in s.items else None


def _differs(a: str, b: str) -> bool:
    """False only where both are plain numbers of the same value (a guard on the constructions)."""
    va, vb = as_fraction(GROUP_SEP.sub("", a)), as_fraction(GROUP_SEP.sub("", b))
    return va is None or vb is None or va != vb


def _changed_relation(a: str, strictness: bool) -> str | None:
    r = _relation(a)
    return f"{r[0]} {(_STRICT if strictness else _FLIP)[r[1]]} {r[2]}" if r else None


def _changed_choice(a: str) -> str | None:
    m = _choice(a)
    return a[:m.start(3)] + "BCDEA"["ABCDE".index(m.group(3))] + a[m.end(3):] if m else None


WRONGS: tuple[tuple[str, Callable[[str, random.Random], str | None]], ...] = (
    ("perturbed_number", lambda a, rng: change_number(a, rng, scale=False)),
    ("scaled_number", lambda a, rng: change_number(a, rng, scale=True)),
    ("flipped_sign", _flip_sign),
    ("swapped_order", lambda a, rng: _swap(a, want_interval=False)),
    ("swapped_endpoint", lambda a, rng: _swap(a, want_interval=True)),
    ("changed_bracket", _change_bracket),
    ("dropped_element", _drop_element),
    ("added_element", _add_element),
    ("flipped_inequality", lambda a, rng: _changed_relation(a, strictness=False)),
    ("changed_strictness", lambda a, rng: _changed_relation(a, strictness=True)),
    ("changed_choice", lambda a, rng: _changed_choice(a)),
    ("yes_no", lambda a, rng: {"yes": "no", "no": "yes"}.get(a.lower())),
)


def wrongs(a: str, rng: random.Random) -> list[tuple[str, str]]:
    """Every (name, wrong variant of a) that applies."""
    out = [(name, fn(a, rng)) for name, fn in WRONGS]
    return [(name, b) for name, b in out if b and b != a and _differs(a, b)]
