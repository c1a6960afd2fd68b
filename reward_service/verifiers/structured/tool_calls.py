"""Function calls in a completion, and how many of them match the expected calls.

Read from the text: Hermes-style ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
blocks (the last may be left open); without such blocks, JSON in the OpenAI shape
(``{"tool_calls": [{"type": "function", "function": {"name": ..., "arguments": "<JSON>"}}]}``),
a list of calls, or one call ``{"name": ..., "arguments": ...}`` (``parameters`` is read as
``arguments``), as the whole text, in fenced blocks, or embedded in prose. A block or call that
is not valid JSON counts as a call that matches nothing.

Matching is order-insensitive: the most pairs (a maximum bipartite matching) of a predicted and an
expected call with the same name and equal arguments, compared as JSON values (``1 == 1.0``,
``true`` only equals ``true``); ``extra_arguments="allow"`` lets a predicted call carry arguments
the expected one does not list (NeMo Gym's ``xlam_fc`` rule).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reward_service.verifiers.structured.json_text import json_equal

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FENCE = re.compile(r"```[ \t]*[A-Za-z]*[ \t]*\r?\n(.*?)```", re.S)
_MALFORMED = object()


class BadCalls(ValueError):
    """Expected calls that cannot be read (a reference problem)."""


@dataclass(frozen=True)
class ToolCall:
    """A call: the function's name and its arguments (a parsed JSON value; ``ok`` False: unreadable)."""

    name: str
    arguments: Any = None
    ok: bool = True

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments if self.ok else "<malformed>"}


def call_from_object(obj: Any) -> ToolCall | None:
    """A call from ``{"name", "arguments"|"parameters"}`` or ``{"function": {...}}``; None if not a call."""
    if not isinstance(obj, Mapping):
        return None
    if isinstance(obj.get("function"), Mapping):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return ToolCall(name, None, ok=False)
    return ToolCall(name, arguments)


def calls_from_value(value: Any) -> list[ToolCall] | None:
    """The calls a parsed JSON value holds (None when it holds no call at all)."""
    if isinstance(value, Mapping) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    calls = [call_from_object(item) for item in items]
    return [c for c in calls if c is not None] or None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _MALFORMED


def _embedded_values(text: str) -> list[Any]:
    """JSON objects and arrays found in prose, left to right, each outermost one once."""
    decoder, values, index = json.JSONDecoder(), [], 0
    while True:
        starts = [i for i in (text.find("{", index), text.find("[", index)) if i >= 0]
        if not starts:
            return values
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            index = start + 1
            continue
        values.append(value)
        index = end


def parse_calls(text: str) -> list[ToolCall]:
    """Every call in ``text`` (see the module docstring), in order; never raises."""
    blocks = _HERMES.findall(text)
    if blocks:
        calls: list[ToolCall] = []
        for block in blocks:
            value = _loads(block)
            found = None if value is _MALFORMED else calls_from_value(value)
            calls += found or [ToolCall("", None, ok=False)]
        return calls
    for candidate in [text.strip(), *(m.group(1) for m in _FENCE.finditer(text))]:
        value = _loads(candidate)
        if value is not _MALFORMED:
            found = calls_from_value(value)
            if found:
                return found
    return [call for value in _embedded_values(text) for call in calls_from_value(value) or []]


def expected_calls(value: Any) -> list[ToolCall]:
    """The expected calls of a reference: a list, one call, ``{"tool_calls": [...]}`` or a JSON string
    of any of them; raises BadCalls when a call lacks a name or its arguments are not JSON."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise BadCalls(f"the expected calls are not JSON: {exc}") from None
    if isinstance(value, Mapping) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    calls = []
    for i, item in enumerate(items):
        call = call_from_object(item)
        if call is None or not call.ok:
            raise BadCalls(f"expected call {i} needs a 'name' and JSON 'arguments': {json.dumps(item)[:120]}")
        calls.append(call)
    return calls


def arguments_match(predicted: Any, expected: Any, extra_arguments: str = "forbid") -> bool:
    if extra_arguments == "allow" and isinstance(predicted, dict) and isinstance(expected, dict):
        return all(key in predicted and json_equal(predicted[key], value) for key, value in expected.items())
    return json_equal(predicted, expected)


def max_matching(left: Sequence[Any], right: Sequence[Any], fits: Callable[[Any, Any], bool]) -> int:
    """The size of a maximum matching of ``left`` with ``right`` under ``fits`` (augmenting paths)."""
    edges = [[j for j, r in enumerate(right) if fits(item, r)] for item in left]
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(augment(i, set()) for i in range(len(left)))


@dataclass(frozen=True)
class CallMatch:
    """How the predicted calls meet the expected ones."""

    predicted: int
    expected: int
    matched: int  # same name and arguments
    names_matched: int  # same name, whatever the arguments
    malformed: int

    @property
    def exact(self) -> bool:
        return self.matched == self.expected == self.predicted

    @property
    def fraction(self) -> float:
        most = max(self.predicted, self.expected)
        return 1.0 if most == 0 else self.matched / most


def match_calls(predicted: Sequence[ToolCall], expected: Sequence[ToolCall],
                extra_arguments: str = "forbid") -> CallMatch:
    def same(p: ToolCall, e: ToolCall) -> bool:
        return p.ok and p.name == e.name and arguments_match(p.arguments, e.arguments, extra_arguments)

    return CallMatch(len(predicted), len(expected), max_matching(predicted, expected, same),
                     max_matching(predicted, expected, lambda p, e: p.name == e.name),
                     sum(not p.ok for p in predicted))
