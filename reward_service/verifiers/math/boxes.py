"""``\\boxed{…}`` / ``\\fbox{…}`` answers of a text, with their positions.

:func:`find_boxes` returns the balanced boxes of a text, last first, scanning
from the end with ``str.rfind`` (nested braces allowed; an unbalanced box is
skipped; at most 64 are tried); the brace-less ``\\boxed 5`` counts too.
:func:`listed_run` keeps the last box and the boxes *listed* right before it:
"$\\boxed{2}$ and $\\boxed{3}$", "\\boxed{1}, \\boxed{2}", "\\boxed{1}\\boxed{2}",
"$x=\\boxed{2}$ or $x=\\boxed{3}$" are one answer in several boxes, while
"\\boxed{1} no no no \\boxed{2}" or two boxes in two sentences are an earlier box
and the final one.

Brace matching is bounded by the caller's ``limit``: a longer box raises
:class:`CandidateTooLong`, so padding a huge box cannot steer extraction elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .math_spans import MathSpan, math_spans

__all__ = ["Box", "CandidateTooLong", "find_boxes", "listed_run"]

MAX_BOXED_TRIES = 64
_BRACE_RE = re.compile(r"\\.|[{}]", re.DOTALL)
_COMMANDS = ("\\boxed", "\\fbox")
#: Layout and wrappers between listed boxes: delimiters, spacing, ``\text{ and }``, a label "x =".
_GAP_NOISE_RE = re.compile(
    r"\$|\\[()\[\]]|\\q?quad(?![A-Za-z])|\\[,;:! ]|\\text(?:bf|rm)?\s*\{([^{}]*)\}|\\(?:hspace|hskip)\{[^{}]*\}"
    r"|(?<![A-Za-z])[A-Za-z](?:_\{?\w+\}?)?\s*=")
#: A gap that lists: nothing, or a connector after at most two words ("papers and", ", ", "or", ", and").
_LIST_GAP_RE = re.compile(r"(?:(?:[A-Za-z]+\s+){0,2}(?:,|;|&|\\\\|and|or|as well as)(?:\s*(?:and|or))?)?",
                          re.IGNORECASE)
_MAX_GAP_CHARS = 80


class CandidateTooLong(Exception):
    """Internal signal: a candidate answer exceeds the caller's ``max_answer_chars``."""


@dataclass(frozen=True)
class Box:
    """One balanced box: its content (stripped) and where the command starts and the box ends."""

    content: str
    start: int
    end: int


def _group(text: str, start: int, limit: int) -> tuple[str, int] | None:
    """Content and end of the balanced ``{...}`` opening at ``start`` (``None`` if unbalanced)."""
    depth = 0
    end = min(len(text), start + limit + 2)
    for m in _BRACE_RE.finditer(text, start, end):
        tok = m.group()
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1: m.start()], m.end()
    if end < len(text):
        raise CandidateTooLong
    return None


def _box_at(text: str, idx: int, cmd: str, limit: int) -> tuple[str, int] | None:
    pos = idx + len(cmd)
    if pos < len(text) and text[pos].isalpha():
        return None  # e.g. \boxedx is another command
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos < len(text) and text[pos] == "{":
        return _group(text, pos, limit)
    if pos > idx + len(cmd):  # "\boxed 5": one token up to whitespace or "$"
        m = re.match(r"[^\s$]+", text[pos: pos + limit + 1])
        if m is None:
            return None
        if len(m.group(0)) > limit:
            raise CandidateTooLong
        return m.group(0).rstrip(".,;"), pos + m.end()
    return None


def find_boxes(text: str, limit: int) -> list[Box]:
    """Non-empty balanced boxes of ``text``, last first; none when the last balanced box is empty."""
    ends = dict.fromkeys(_COMMANDS, len(text))
    found: list[Box] = []
    first = True
    for _ in range(MAX_BOXED_TRIES):
        starts = {cmd: text.rfind(cmd, 0, ends[cmd]) for cmd in ends}
        cmd = max(starts, key=lambda c: starts[c])
        idx = starts[cmd]
        if idx < 0:
            break
        box = _box_at(text, idx, cmd, limit)
        if box is not None:
            content = box[0].strip()
            if first and not content:
                return []  # an empty last box is no boxed answer
            first = False
            if content:
                found.append(Box(content, idx, box[1]))
        ends[cmd] = idx
    return found


def _is_list_gap(gap: str) -> bool:
    if len(gap) > _MAX_GAP_CHARS:
        return False
    gap = _GAP_NOISE_RE.sub(lambda m: f" {m.group(1)} " if m.group(1) else " ", gap)
    return _LIST_GAP_RE.fullmatch(" ".join(gap.split())) is not None


def _same_span(spans: list[MathSpan], a: Box, b: Box) -> bool:
    return any(s.start <= a.start and b.end <= s.end for s in spans)


def listed_run(text: str, boxes: list[Box]) -> list[Box]:
    """The last box (``boxes[0]``) and the boxes listed right before it, in text order: joined by a
    connector, or parts of one formula (``$x = \\boxed{2},\\ y = \\boxed{3}$``)."""
    run = boxes[:1]
    spans: list[MathSpan] | None = None
    for box in boxes[1:]:
        if not _is_list_gap(text[box.end: run[0].start]):
            spans = math_spans(text) if spans is None else spans
            if not _same_span(spans, box, run[0]):
                break
        run.insert(0, box)
    return run
