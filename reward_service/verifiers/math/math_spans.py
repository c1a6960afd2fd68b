"""Math-delimited spans of a text: ``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``.

Models often give the final answer in math delimiters without ``\\boxed``
("so the point is $(7, 1)$.").  :func:`math_spans` finds those spans in one
left-to-right pass (linear time); :func:`mask_spans` blanks them out so that a
plain-text search (the last-number fallback) can never take a number from
*inside* a delimited expression.

Rules:

* ``\\$`` is an escaped dollar (currency), never a delimiter.
* Inline spans (``$…$``, ``\\(…\\)``) end at a line break: an unclosed ``$``
  (``It costs $5.``) is currency, not the start of math.
* Display spans (``$$…$$``, ``\\[…\\]``) may cover several lines.
* Empty spans are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MathSpan", "math_spans", "mask_spans"]

_DELIM_RE = re.compile(r"\\\$|\$\$|\$|\\\(|\\\)|\\\[|\\\]|\n")
_CLOSERS = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}
_INLINE = frozenset({"$", "\\("})


@dataclass(frozen=True)
class MathSpan:
    """One delimited span: ``text[start:end]`` including delimiters; ``content`` without them."""

    start: int
    end: int
    content: str


def math_spans(text: str) -> list[MathSpan]:
    """All non-empty math spans of ``text``, in order (see the module doc for the rules)."""
    spans: list[MathSpan] = []
    opener: str | None = None
    open_start = open_end = 0
    for m in _DELIM_RE.finditer(text):
        tok = m.group()
        if tok == "\\$":
            continue
        if opener is None:
            if tok in _CLOSERS:
                opener, open_start, open_end = tok, m.start(), m.end()
            continue
        if tok == "\n":
            if opener in _INLINE:
                opener = None
            continue
        if tok == _CLOSERS[opener]:
            content = text[open_end:m.start()].strip()
            if content:
                spans.append(MathSpan(open_start, m.end(), content))
            opener = None
        elif opener in _INLINE and tok in _CLOSERS and tok != "$":
            # "\[" inside an unclosed "$" run: the "$" was currency; restart here.
            opener, open_start, open_end = tok, m.start(), m.end()
    return spans


def mask_spans(text: str, spans: list[MathSpan]) -> str:
    """``text`` with every span replaced by spaces of the same length (positions are kept)."""
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for span in spans:
        parts.append(text[pos:span.start])
        parts.append(" " * (span.end - span.start))
        pos = span.end
    parts.append(text[pos:])
    return "".join(parts)
