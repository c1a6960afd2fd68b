"""Split a completion into reasoning steps, each with its character span.

Three ways, tried in this order:

1. a configured ``separator`` (e.g. ``"\\n\\n"`` or ``"<step>"``): the text between separators;
2. numbered steps: a line starting ``Step 3:``, ``3.`` or ``3)`` opens a step that runs until
   the next such line (so a step may span several lines);
3. otherwise one step per non-empty line.

Spans are ``[start, end)`` in the completion with surrounding whitespace left out; empty
steps are dropped. ``split_steps`` never fails on any input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A line that opens a numbered step: "Step 2:", "step 2 -", "2.", "2)".
NUMBERED_STEP = re.compile(r"^[ \t]*(?:step[ \t]*\d+[ \t]*[:.)\-]|\d+[.)])(?=\s)", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Step:
    """One reasoning step: ``text == completion[start:end]``."""

    start: int
    end: int
    text: str


def _trimmed(completion: str, start: int, end: int) -> Step | None:
    piece = completion[start:end]
    left = len(piece) - len(piece.lstrip())
    right = len(piece.rstrip())
    if right <= left:
        return None
    return Step(start + left, start + right, piece[left:right])


def _split_at(completion: str, cuts: list[tuple[int, int]]) -> list[Step]:
    """Steps between the ``(cut_start, cut_end)`` separators (the separators themselves left out)."""
    steps, position = [], 0
    for cut_start, cut_end in cuts:
        step = _trimmed(completion, position, cut_start)
        if step is not None:
            steps.append(step)
        position = cut_end
    last = _trimmed(completion, position, len(completion))
    return steps + ([last] if last is not None else [])


def split_steps(completion: str, separator: str | None = None) -> list[Step]:
    """The steps of ``completion`` (see the module docstring for the rules)."""
    if separator:
        cuts, at = [], completion.find(separator)
        while at != -1:
            cuts.append((at, at + len(separator)))
            at = completion.find(separator, at + len(separator))
        return _split_at(completion, cuts)
    starts = [m.start() for m in NUMBERED_STEP.finditer(completion)]
    if len(starts) >= 2:
        bounds = [*starts, len(completion)]
        preamble = _trimmed(completion, 0, starts[0])
        steps = [s for s in (_trimmed(completion, a, b) for a, b in zip(bounds, bounds[1:])) if s is not None]
        return ([preamble] if preamble is not None else []) + steps
    cuts = [(m.start(), m.end()) for m in re.finditer(r"\n", completion)]
    return _split_at(completion, cuts)
