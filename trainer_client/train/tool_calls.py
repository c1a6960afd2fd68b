"""Tool calls in the policy's text, and the tools' description in its prompt (``hermes`` format).

A turn calls a tool by writing, as Hermes and Qwen chat templates do::

    <tool_call>{"name": "calculator", "arguments": {"expression": "48213 * 902137"}}</tool_call>

``parse_tool_call`` reads the first such call of a turn: a call (name + arguments), a malformed
call (the tags are there but their content is not a JSON object with a string ``name`` and an
object ``arguments``: the error is answered to the policy as tool output), or no call at all (the
turn is the policy's final message). Pure functions: no tokenizer, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reward_core.episode_contract import ToolSpec

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
_CALL = re.compile(re.escape(CALL_OPEN) + r"(.*?)(?:" + re.escape(CALL_CLOSE) + r"|$)", re.DOTALL)


@dataclass(frozen=True)
class ParsedCall:
    """What a turn asked for: a tool call (``name``, ``arguments``), or ``error`` for a malformed one."""

    name: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""


def parse_tool_call(text: str) -> ParsedCall | None:
    """The first ``<tool_call>...</tool_call>`` of ``text`` (an unclosed one runs to the end); None: no call."""
    match = _CALL.search(text)
    if match is None:
        return None
    body = match.group(1).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return ParsedCall(error=f"the tool call is not valid JSON ({exc.msg} at character {exc.pos})")
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return ParsedCall(error='the tool call must be a JSON object {"name": ..., "arguments": {...}}')
    arguments = value.get("arguments", {})
    if isinstance(arguments, str):  # some templates write the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass
    if not isinstance(arguments, dict):
        return ParsedCall(name=value["name"], error='"arguments" must be a JSON object')
    return ParsedCall(name=value["name"], arguments=arguments)


def format_tool_call(name: str, arguments: Mapping[str, Any]) -> str:
    """The text of a call in this format (for warm-up data and scripted policies)."""
    return CALL_OPEN + json.dumps({"name": name, "arguments": dict(arguments)}, separators=(", ", ": ")) + CALL_CLOSE


def tools_prompt(tools: Sequence[ToolSpec], mode: str) -> str:
    """What the system prompt says about ``tools``: ``full`` (format + JSON schemas), ``names``, ``none`` ("")."""
    if mode == "none" or not tools:
        return ""
    how = f"Call a tool with {CALL_OPEN}{{\"name\": ..., \"arguments\": {{...}}}}{CALL_CLOSE}."
    if mode == "names":
        return f"Tools: {', '.join(t.name for t in tools)}. {how}"
    specs = "\n".join(json.dumps({"name": t.name, "description": t.description, "parameters": dict(t.parameters)})
                      for t in tools)
    return f"# Tools\n<tools>\n{specs}\n</tools>\n{how}"


def with_tools_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec],
                      mode: str) -> list[dict[str, Any]]:
    """``messages`` with the tools' description added to the system message (a new one if there is none)."""
    out = [dict(m) for m in messages]
    text = tools_prompt(tools, mode)
    if not text:
        return out
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content') or ''}\n\n{text}".lstrip()
    else:
        out.insert(0, {"role": "system", "content": text})
    return out
