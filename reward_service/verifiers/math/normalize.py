"""String normalization of extracted math answers.

:func:`normalize_answer` rewrites an answer into a canonical surface form
without interpreting it mathematically (no sympy here).  It is the first
and cheapest equivalence step: two answers whose normalized forms are equal
match.  The later numeric and symbolic steps also work on normalized text.

What it does, in order:

* strips wrappers around the whole answer: ``$...$``, ``\\(...\\)``,
  ``\\[...\\]``, ``\\boxed{...}``, ``**...**``;
* maps unicode math (``π √ × ÷ · − ∞ ≤ ≥``) to LaTeX/ASCII;
* removes layout-only LaTeX: ``\\left``/``\\right``, ``\\displaystyle``,
  spacing (``\\, \\; \\: \\ `` ``\\quad``), ``{,}`` becomes ``,``; the negative
  space ``\\!`` goes without a trace (``2,\\!400`` is ``2,400``);
* ``\\langle a, b\\rangle`` (a vector) becomes ``(a, b)``; ``\\mathbb{R}`` becomes
  ``(-\\infty, \\infty)``;
* a unit in a text command at the end of a math answer is dropped
  (``49\\pi \\text{ m}^2``, ``12\\,\\mathrm{cm}``);
* ``\\dfrac``/``\\tfrac``/``\\cfrac`` become ``\\frac``;
* degrees (``^\\circ``, ``^{\\circ}``, ``°``, ``\\degree``) are dropped;
* currency (``$``, ``\\$``) is dropped;
* percent (``\\%``, ``%``, the word ``percent``) becomes a trailing ``%``
  marker that the equivalence step understands;
* ``\\text{}``, ``\\textbf{}``, ``\\mathrm{}``, ``\\mbox{}``... are unwrapped;
* trailing units and words after a number (``5 cm``, ``12 dollars``,
  ``3 square units``, ``5cm``) are dropped;
* a whole number written with thousands separators (``1,000``,
  ``-12,345.5``, ``1 000``, ``11,\\!111``) loses them; anything else
  (``(1,2)``, ``1,2``) keeps its commas;
* a doubled backslash before a command (``\\\\frac``, from a string escaped
  twice) is one backslash;
* whitespace is collapsed, trailing ``.``/``,``/``;`` removed.
"""

from __future__ import annotations

import re

__all__ = ["normalize_answer", "strip_outer_wrappers", "MAX_NORMALIZE_CHARS", "THOUSANDS_RE"]

#: Inputs longer than this are only stripped; the equivalence layer rejects them.
MAX_NORMALIZE_CHARS = 10_000

_UNICODE = {
    "π": r"\pi ", "√": r"\sqrt", "×": r"\times ", "÷": r"\div ", "·": r"\cdot ",
    "−": "-", "–": "-", "∞": r"\infty ", "≤": r"\le ", "≥": r"\ge ", "°": r"^\circ",
    "\u00a0": " ", "∪": r"\cup ", "±": r"\pm ",
}
_LAYOUT_RE = re.compile(
    r"\\(?:displaystyle|textstyle|quad|qquad|limits|nolimits|mathopen|mathclose)(?![A-Za-z])"
    r"|(?<!\\)\\[!,;: ]|\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big)(?![A-Za-z])\.?"
)
#: ``\\frac`` written with a doubled backslash (a raw string escaped twice): ``\\\\frac``.
_DOUBLED_BACKSLASH_RE = re.compile(r"\\\\(?=[A-Za-z])")
#: ``{,}``, ``{, }``, ``\\{,\\}`` and the thousands idiom ``,\\!`` are a plain comma (``14 {, }916`` is ``14,916``).
_BRACED_COMMA_RE = re.compile(r"(?<=\d)\s*\\?\{\s*,\s*\\?\}\s*(?=\d{3})|\\?\{\s*,\s*\\?\}|(?<=\d),\\!\s*(?=\d{3})")
#: ``1 000 000``: groups of three digits separated by spaces, as a whole answer.
_SPACE_THOUSANDS_RE = re.compile(r"[-+]?[1-9]\d{0,2}(?: \d{3})+(?:\.\d+)?")
#: ``11_{10}``: a base-ten subscript on a whole answer says nothing.
_BASE_TEN_RE = re.compile(r"(?<=\d)_\{?10\}?$")
_NEG_SPACE_RE = re.compile(r"(?<!\\)\\!")
_ANGLE_RE = re.compile(r"\\(?:langle|rangle)(?![A-Za-z])|⟨|⟩")
_ANGLES = {"\\langle": "(", "\\rangle": ")", "⟨": "(", "⟩": ")"}
_REALS_RE = re.compile(r"\\mathbb\s*\{\s*R\s*\}|\\mathbb\s+R(?![A-Za-z])|ℝ")
#: A unit after a math answer: ``... \text{ m}^2`` at the very end, after a digit, brace or command.
_TRAILING_TEXT_UNIT_RE = re.compile(
    r"(?<=[\w})\]])\s*\\(?:text|mathrm|textrm|mbox|rm|textnormal)\s*\{\s*(?![ap]\.?\s*m\.?\s*\})"
    r"[A-Za-z][A-Za-z .\-/]{0,30}\}"
    r"(?:\s*\^\s*\{?\s*[23]\s*\}?)?\s*$")
_FRAC_RE = re.compile(r"\\[dtc]frac(?![A-Za-z])")
_DEGREE_RE = re.compile(
    r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\degree(?![A-Za-z])|\{\s*\}\s*\^\s*\{?\\circ\}?|\\circ(?![A-Za-z])"
)
_PERCENT_WORD_RE = re.compile(r"\s*(?:per\s*cent|percent)\.?\s*$", re.IGNORECASE)
_TEXT_CMD_RE = re.compile(
    r"\\(?:text|textbf|textit|textrm|texttt|textnormal|mathrm|mathbf|mathit|mathsf|mathtt|"
    r"mbox|hbox|operatorname|boldsymbol|bm|mathbb|emph)\s*\{"
)
#: A whole number with comma thousands separators (``1,000``, ``-12,345.5``; never ``0,111``).
THOUSANDS_RE = re.compile(r"[-+]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?")
_WS_RE = re.compile(r"\s+")
#: "≈ 1.05", "\approx 1.05", "about 12": the marker says the value is rounded; the value is the answer.
_APPROX_PREFIX_RE = re.compile(
    r"^(?:\\approx|\\simeq|\\sim|≈|approximately|approx\.?|about|roughly|around)\s*(?=[-+.\d\\])",
    re.IGNORECASE)
#: ``0.333...`` / ``0.333\ldots``: an ellipsis right after decimal digits is dropped.
#: Any other ellipsis is one spelling, kept (``1, 2, 3, \ldots`` is not ``1, 2, 3``).
_DOTS_RE = re.compile(r"\.\.\.|…|\\[lc]?dots(?![A-Za-z])")
_ELLIPSIS_RE = re.compile(r"(\d\.\d+)\s*(?:\\[lc]?dots|\.\.\.|…)$")
#: Thin spaces used as thousands separators: ``3\,600`` -> ``3600``.
_DIGIT_SPACE_RE = re.compile(r"(?<=\d)(?:\\[,!;:]|\u2009|\u202f)(?=\d{3}(?!\d))")
_KNOWN_UNIT_WORDS = frozenset({
    "unit", "units", "square", "sq", "cubic", "cm", "mm", "km", "meter", "meters", "metre",
    "metres", "inch", "inches", "foot", "feet", "ft", "yard", "yards", "mile", "miles",
    "dollars", "dollar", "cents", "cent", "degrees", "degree", "radians", "seconds",
    "minutes", "hours", "days", "weeks", "years", "kg", "grams", "liters", "litres",
})
_UNIT_TOKEN_RE = re.compile(r"[A-Za-z]+\.?(?:/[A-Za-z]+)?(?:\^\{?\d\}?)?")
_ATTACHED_UNIT_RE = re.compile(
    r"(.*\d)\s*(?:mm|cm|km|m|kg|g|mg|ml|mL|L|s|sec|min|hr|hrs|h|ft|in|yd|mi|lb|lbs|oz|"
    r"mph|kph|km/h|m/s|cm/s|units?|sq|cents?|dollars?|USD)(?:\^\{?[23]\}?)?"
)
#: Words that are mathematics, never units.
_MATH_WORDS = frozenset({
    "pi", "sin", "cos", "tan", "sec", "csc", "cot", "log", "ln", "exp", "sqrt",
    "and", "or", "i", "e", "infty", "inf", "infinity", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "mod", "x", "y", "z", "n", "k", "a", "b", "c", "t",
})
#: Single-letter tokens accepted as units when separated by a space (``5 m``).
_SINGLE_LETTER_UNITS = frozenset({"m", "g", "s", "h", "L", "l", "J", "N", "W", "V", "K"})


def strip_outer_wrappers(s: str) -> str:
    """Remove delimiters that wrap the *whole* answer (``$..$``, ``\\boxed{..}``...)."""
    prev = None
    while prev != s:
        prev = s
        s = s.strip()
        for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"), ("**", "**")):
            if len(s) >= len(left) + len(right) and s.startswith(left) and s.endswith(right):
                s = s[len(left):len(s) - len(right)]
                break
        for cmd in ("\\boxed{", "\\fbox{"):
            if s.startswith(cmd) and _matching_brace(s, len(cmd) - 1) == len(s) - 1:
                s = s[len(cmd):-1]
    return s


def _matching_brace(s: str, open_idx: int) -> int:
    """Index of the ``}`` matching the ``{`` at ``open_idx`` (``-1`` if unbalanced)."""
    depth = 0
    for idx in range(open_idx, len(s)):
        ch = s[idx]
        if ch == "\\":
            continue
        if ch == "{" and (idx == 0 or s[idx - 1] != "\\"):
            depth += 1
        elif ch == "}" and (idx == 0 or s[idx - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return idx
    return -1


def _unwrap_text_commands(s: str) -> str:
    """Replace ``\\text{abc}`` (and friends) by ``abc``; unbalanced ones are left."""
    out: list[str] = []
    pos = 0
    while True:
        m = _TEXT_CMD_RE.search(s, pos)
        if m is None:
            break
        close = _matching_brace(s, m.end() - 1)
        if close < 0:
            break
        out.append(s[pos:m.start()])
        out.append(" " + s[m.end():close] + " ")
        pos = close + 1
    out.append(s[pos:])
    return "".join(out)


def _strip_trailing_units(s: str) -> str:
    """Drop trailing unit/word tokens after something that ends like a number."""
    tokens = s.split(" ")
    stripped = False
    while len(tokens) > 1:
        tok = tokens[-1]
        is_unit = _UNIT_TOKEN_RE.fullmatch(tok) is not None
        base = re.match(r"[A-Za-z]*", tok).group()  # "x" of "x^{3}", "m" of "m^2", "km" of "km/h"
        if base.lower() in _MATH_WORDS or (len(base) == 1 and base not in _SINGLE_LETTER_UNITS):
            is_unit = False  # a variable ("747 x^{3}"), never a unit
        if not is_unit:
            break
        tokens.pop()
        stripped = True
    rest = " ".join(tokens)
    removed = s[len(rest):].lower().replace(".", " ").split()
    looks_numeric = rest and (rest[-1].isdigit() or rest[-1] in "}%)")
    if stripped and rest and (looks_numeric or any(w in _KNOWN_UNIT_WORDS for w in removed)):
        return rest
    m = _ATTACHED_UNIT_RE.fullmatch(s)
    if m is not None and not re.search(r"[A-Za-z\\]", m.group(1)):
        return m.group(1)
    return s


def _strip_trailing_text_units(s: str) -> str:
    """Drop ``\\text{ unit}`` endings after math; never the whole answer (``\\text{Evelyn}`` stays)."""
    for _ in range(3):
        m = _TRAILING_TEXT_UNIT_RE.search(s)
        if m is None or not s[:m.start()].strip():
            break
        s = s[:m.start()]
    return s


def _normalize_percent(s: str) -> str:
    s = s.replace("\\%", "%")
    s = _PERCENT_WORD_RE.sub("%", s)
    s = s.strip()
    if s.endswith("%"):
        s = s[:-1].rstrip() + "%"
    return s


def normalize_answer(s: str) -> str:
    """Return the canonical surface form of an answer string (see module doc)."""
    if not isinstance(s, str):
        return ""
    if len(s) > MAX_NORMALIZE_CHARS:
        return s.strip()
    s = strip_outer_wrappers(s)
    for uni, rep in _UNICODE.items():
        if uni in s:
            s = s.replace(uni, rep)
    s = _DOUBLED_BACKSLASH_RE.sub(r"\\", s) if "\\begin" not in s else s
    s = _BRACED_COMMA_RE.sub(",", s)
    s = _DIGIT_SPACE_RE.sub("", s)
    s = _NEG_SPACE_RE.sub("", s)
    s = _LAYOUT_RE.sub(" ", s)
    s = _ANGLE_RE.sub(lambda m: _ANGLES[m.group()], s)
    s = _REALS_RE.sub(r"(-\\infty, \\infty)", s)
    s = _strip_trailing_text_units(s)
    s = _FRAC_RE.sub(r"\\frac", s)
    s = _DEGREE_RE.sub(" ", s)
    s = s.replace("\\$", " ").replace("$", " ")
    s = _unwrap_text_commands(s)
    s = s.replace("~", " ")
    s = _WS_RE.sub(" ", s).strip()
    s = _APPROX_PREFIX_RE.sub("", s)
    s = s.replace(" ^", "^")
    s = strip_outer_wrappers(s)
    s = _normalize_percent(s)
    s = _ELLIPSIS_RE.sub(r"\1", s)
    s = _DOTS_RE.sub(r"\\ldots", s)
    s = s.rstrip(".,;: ").strip()
    s = _strip_trailing_units(s)
    s = _normalize_percent(s)
    s = s.rstrip(".,;: ").strip()
    if THOUSANDS_RE.fullmatch(s) or (s.endswith("%") and THOUSANDS_RE.fullmatch(s[:-1])):
        s = s.replace(",", "")
    if _SPACE_THOUSANDS_RE.fullmatch(s):
        s = s.replace(" ", "")
    s = re.sub(r"(?<=\d)\s*%$", "%", s)
    s = _BASE_TEN_RE.sub("", s)
    return s
