"""Finding and parsing the JSON in a completion, strictly (RFC 8259: no NaN or Infinity).

Where (``extract``): ``whole`` — the completion stripped; ``fenced`` — the last fenced block
tagged ``json`` (or untagged); ``auto`` — after any ``</think>``, the last fenced block if there
is one, else the whole text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from reward_service.verifiers.text.spans import after_thinking

EXTRACT_MODES = ("auto", "whole", "fenced")
_FENCE = re.compile(r"```[ \t]*(json5?|jsonc?|JSON)?[ \t]*\r?\n(.*?)```", re.S)


class _NotJson(ValueError):
    pass


def _no_constants(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON")


@dataclass(frozen=True)
class JsonParse:
    """The parsed value (when ``ok``), the text that was parsed, and why parsing failed."""

    ok: bool
    value: Any = None
    text: str = ""
    error: str = ""


def json_text(completion: str, extract: str = "auto") -> str | None:
    """The text to parse under ``extract`` (see the module docstring); None when there is none."""
    if extract not in EXTRACT_MODES:
        raise ValueError(f"unknown extract mode {extract!r}; use one of {EXTRACT_MODES}")
    if extract == "whole":
        return completion.strip() or None
    text = after_thinking(completion) if extract == "auto" else completion
    blocks = [m.group(2) for m in _FENCE.finditer(text)]
    if blocks:
        return blocks[-1].strip() or None
    return (text.strip() or None) if extract == "auto" else None


def parse_strict(text: str) -> JsonParse:
    """``text`` parsed as one JSON value; never raises."""
    try:
        return JsonParse(True, json.loads(text, parse_constant=_no_constants), text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and _NotJson are ValueErrors
        return JsonParse(False, text=text, error=f"{type(exc).__name__}: {str(exc)[:200]}")


def parse_completion(completion: str, extract: str = "auto") -> JsonParse | None:
    """The completion's JSON under ``extract``; None when there is no text to parse."""
    text = json_text(completion, extract)
    return None if text is None else parse_strict(text)


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values: numbers by value (1 == 1.0), booleans only with booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b
