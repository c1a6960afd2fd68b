"""Where the answer sits in a completion: the last ``\\boxed{...}``, the line after an answer
marker, an ``<answer>`` tag, the last line; shared by the QA, string and choice verifiers."""

from __future__ import annotations

import re

BOXED_MARKERS = ("\\boxed{", "\\fbox{")
TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|texttt|emph)\{\s*(.*?)\s*\}", re.S)
#: "Final answer: X" / "Answer: X" (full-width colon too), the payload running to the end of its line.
ANSWER_COLON = re.compile(r"(?i)(?:final\s+answer|answer)\s*[:：]\s*([^\n]+)")
#: "the answer is X", "the correct option is X", "final answer would be X"...
ANSWER_IS = re.compile(r"(?i)\b(?:answer|option|choice)\s+(?:is|would\s+be|will\s+be|should\s+be)\s*[:：]?\s*([^\n]+)")
ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)
THINK_END = "</think>"

EXTRACT_MODES = ("auto", "full", "final_answer", "boxed", "last_line")


def last_boxed(text: str, markers: tuple[str, ...] = BOXED_MARKERS) -> tuple[str, int] | None:
    """The content of the last ``\\boxed{...}`` (braces counted) and its start, or None (also when
    that box is never closed)."""
    start, marker = max(((text.rfind(m), m) for m in markers), key=lambda pair: pair[0])
    if start < 0:
        return None
    depth, begin = 1, start + len(marker)
    for index in range(begin, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[begin:index], start
    return None


def strip_text_wrappers(text: str) -> str:
    """``\\text{X}`` (and its kin) wrapping the whole string, repeatedly, down to X."""
    text = text.strip()
    while True:
        match = TEXT_WRAPPER.fullmatch(text)
        if not match:
            return text
        text = match.group(1).strip()


def after_thinking(text: str) -> str:
    """The completion after its last ``</think>`` (all of it when there is none)."""
    cut = text.rfind(THINK_END)
    return text if cut < 0 else text[cut + len(THINK_END):]


def last_marker_payload(text: str) -> tuple[str, int] | None:
    """The rest of the line after the last answer marker ("Answer:", "the answer is"), with its start."""
    found = [(m.start(), m.group(1)) for pattern in (ANSWER_COLON, ANSWER_IS) for m in pattern.finditer(text)]
    if not found:
        return None
    start, payload = max(found)
    return payload.strip(), start


#: What may stand between boxes that list answers ("\\boxed{A} or \\boxed{C}", "$\\boxed{1}$, $\\boxed{2}$").
BOX_GAP = re.compile(r"(?:\s|[$,;/|&]|\\[()\[\]]|\*\*|\b(?:or|and)\b)*", re.I)
MAX_RUN = 16


def box_run(text: str) -> list[str]:
    """The contents of the last box and of the boxes listed right before it (nothing but blanks or
    connectors between), in text order: several answers given as one."""
    run: list[str] = []
    end, previous_start = len(text), -1
    while len(run) < MAX_RUN:
        found = last_boxed(text[:end])
        if found is None:
            break
        content, start = found
        marker = next(m for m in BOXED_MARKERS if text.startswith(m, start))
        if previous_start >= 0 and not BOX_GAP.fullmatch(text, start + len(marker) + len(content) + 1, previous_start):
            break
        run.insert(0, content)
        previous_start = end = start
    return run


def marker_run(text: str) -> list[str]:
    """The payloads of the last answer-marker line and of the marker lines right before it, in text order
    ("Answer: Paris" on one line, "Answer: Rome" on the next: several answers given as one)."""
    lines = [line for line in text.splitlines() if line.strip()]
    run: list[str] = []
    for line in reversed(lines[-MAX_RUN:]):
        found = last_marker_payload(line)
        if found is None:
            if run:
                break
            continue
        run.insert(0, _trim_final(found[0]))
    return run


def last_line(text: str) -> str | None:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return None


def _trim_final(payload: str) -> str:
    payload = payload.strip()
    return payload[:-1].rstrip() if payload.endswith(".") and len(payload) > 1 else payload


def extract_answer(completion: str, mode: str = "auto") -> str | None:
    """The answer span of ``completion`` under ``mode`` (see :data:`EXTRACT_MODES`); None if absent.

    ``full``: the whole completion. ``boxed``: the last ``\\boxed{}``. ``final_answer``: the line after
    the last "Final answer:"/"Answer:", else the last box. ``last_line``: the last non-empty line.
    ``auto``: after any ``</think>``, the last ``<answer>`` tag, else the last box, else the line after
    the last answer marker ("Answer:", "the answer is"), else the whole text.
    """
    if mode == "full":
        return completion.strip() or None
    if mode == "last_line":
        return last_line(completion)
    boxed = last_boxed(completion)
    if mode == "boxed":
        return strip_text_wrappers(boxed[0]) if boxed else None
    if mode == "final_answer":
        colon = [m.group(1) for m in ANSWER_COLON.finditer(completion)]
        if colon:
            return _trim_final(colon[-1]) or None
        return strip_text_wrappers(boxed[0]) if boxed else None
    if mode != "auto":
        raise ValueError(f"unknown extract mode {mode!r}; use one of {EXTRACT_MODES}")
    text = after_thinking(completion)
    tags = ANSWER_TAG.findall(text)
    if tags:
        return tags[-1].strip() or None
    boxed = last_boxed(text)
    if boxed:
        return strip_text_wrappers(boxed[0]) or None
    marker = last_marker_payload(text)
    if marker:
        return _trim_final(marker[0]) or None
    return text.strip() or None
