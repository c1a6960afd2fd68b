"""Tool calls in the policy's text, and the tools' description in its prompt, in one of three formats.

``episodes.tool_call_format`` names how a turn calls a tool, as the model families' chat templates do:

- ``hermes`` (Hermes, Qwen 2.5/3): ``<tool_call>{"name": "calculator", "arguments": {...}}</tool_call>``,
  one block per call; the text around the blocks is ignored; an unclosed last block runs to the end.
- ``llama3_json`` (Llama 3.1-3.3, custom tools): the turn *is* the call, a JSON object
  ``{"name": "calculator", "parameters": {...}}`` (``arguments`` is read too), optionally after the
  ``<|python_tag|>`` token; several calls are separated by ``;``. The turn ends at the model's eos
  (``<|eom_id|>``/``<|eot_id|>``).
- ``mistral`` (Mistral 7B v0.3, Nemo, Small; pre-v11 tokenizers): ``[TOOL_CALLS]`` then a JSON array
  ``[{"name": "calculator", "arguments": {...}}, ...]``; the turn ends at eos.

``<|python_tag|>`` and ``[TOOL_CALLS]`` are special tokens, which the trainer's decoding drops, so
the bare JSON is read as well. ``parse_tool_calls`` returns a turn's calls in order: each is a call
(name + arguments) or a malformed call (``error``: answered to the policy as tool output); an empty
list means no call (the turn is the policy's final message). For the two formats without tags a
turn that does not start with a call is a final message, and so is bare JSON that is not a call
object; after an explicit marker, a call that does not parse is malformed. Pure functions: no
tokenizer, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reward_core.episode_contract import ToolSpec

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
PYTHON_TAG = "<|python_tag|>"
MISTRAL_CALLS = "[TOOL_CALLS]"
_CALL = re.compile(re.escape(CALL_OPEN) + r"(.*?)(?:" + re.escape(CALL_CLOSE) + r"|$)", re.DOTALL)
_DECODER = json.JSONDecoder()
_SEPARATOR = re.compile(r"\s*;\s*")  # between llama3_json calls

#: The formats' names, and the key each writes the arguments under.
ARGUMENT_KEYS = {"hermes": "arguments", "llama3_json": "parameters", "mistral": "arguments"}
TOOL_CALL_FORMATS = tuple(ARGUMENT_KEYS)


@dataclass(frozen=True)
class ParsedCall:
    """What a turn asked for: a tool call (``name``, ``arguments``), or ``error`` for a malformed one."""

    name: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""


def _call_of(value: Any, shape: str) -> ParsedCall:
    """A decoded JSON value as a call: a string ``name`` and an object of arguments (or a JSON string of one)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return ParsedCall(error=f"the tool call must be a JSON object {shape}")
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):  # some templates write the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass
    if not isinstance(arguments, dict):
        return ParsedCall(name=value["name"], error="the tool call's arguments must be a JSON object")
    return ParsedCall(name=value["name"], arguments=arguments)


def _is_call(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("name"), str) and bool(value["name"]) and (
        "arguments" in value or "parameters" in value)


def _hermes(text: str) -> list[ParsedCall]:
    calls = []
    for match in _CALL.finditer(text):
        try:
            value = json.loads(match.group(1).strip())
        except json.JSONDecodeError as exc:
            calls.append(ParsedCall(error=f"the tool call is not valid JSON ({exc.msg} at character {exc.pos})"))
            continue
        calls.append(_call_of(value, '{"name": ..., "arguments": {...}}'))
    return calls


def _llama3_json(text: str) -> list[ParsedCall]:
    body = text.strip()
    tagged = body.startswith(PYTHON_TAG)
    body = body[len(PYTHON_TAG):].lstrip() if tagged else body
    shape = '{"name": ..., "parameters": {...}}'
    values, at = [], 0
    while True:
        try:
            value, end = _DECODER.raw_decode(body, at)
        except json.JSONDecodeError as exc:
            if not values and not tagged:
                return []  # prose, or JSON-looking text: the final message
            return [*(_call_of(v, shape) for v in values),
                    ParsedCall(error=f"the tool call is not valid JSON ({exc.msg} at character {exc.pos})")]
        if not tagged and not values and not _is_call(value):
            return []  # a JSON answer, not a call
        values.append(value)
        separator = _SEPARATOR.match(body, end)
        if separator is None:
            break  # text after the last call is ignored
        at = separator.end()
    return [_call_of(v, shape) for v in values]


def _mistral(text: str) -> list[ParsedCall]:
    body = text.strip()
    tagged = body.startswith(MISTRAL_CALLS)
    body = body[len(MISTRAL_CALLS):].lstrip() if tagged else body
    shape = '[{"name": ..., "arguments": {...}}, ...]'
    try:
        value, _ = _DECODER.raw_decode(body)
    except json.JSONDecodeError as exc:
        return [ParsedCall(error=f"the tool calls are not valid JSON ({exc.msg} at character {exc.pos})")] \
            if tagged else []
    if not tagged and not (isinstance(value, list) and value and all(_is_call(v) for v in value)):
        return []  # a JSON answer, not a call
    if isinstance(value, dict):  # one call written without its array
        value = [value]
    if not isinstance(value, list) or not value:
        return [ParsedCall(error=f"the tool calls must be a JSON array {shape}")]
    return [_call_of(v, shape) for v in value]


_PARSERS = {"hermes": _hermes, "llama3_json": _llama3_json, "mistral": _mistral}


def parse_tool_calls(text: str, fmt: str = "hermes") -> list[ParsedCall]:
    """Every call of a turn written in format ``fmt``, in order (see the module docstring); []: no call."""
    try:
        parse = _PARSERS[fmt]
    except KeyError:
        raise ValueError(f"unknown tool call format {fmt!r}; formats: {TOOL_CALL_FORMATS}") from None
    return parse(text)


def parse_tool_call(text: str, fmt: str = "hermes") -> ParsedCall | None:
    """The first call of a turn (``parse_tool_calls``); None: no call."""
    calls = parse_tool_calls(text, fmt)
    return calls[0] if calls else None


def stop_strings(fmt: str = "hermes") -> tuple[str, ...]:
    """Strings that end a turn in format ``fmt`` besides eos (hermes: the closing tag)."""
    return (CALL_CLOSE,) if fmt == "hermes" else ()


def format_tool_calls(calls: Sequence[tuple[str, Mapping[str, Any]]], fmt: str = "hermes") -> str:
    """The text of a turn making ``calls`` (name, arguments) in format ``fmt`` (warm-up data, scripted policies)."""
    key = ARGUMENT_KEYS[fmt]
    objects = [{"name": name, key: dict(arguments)} for name, arguments in calls]
    dump = [json.dumps(o, separators=(", ", ": ")) for o in objects]
    if fmt == "hermes":
        return "".join(CALL_OPEN + d + CALL_CLOSE for d in dump)
    if fmt == "llama3_json":
        return "; ".join(dump)
    return MISTRAL_CALLS + json.dumps(objects, separators=(", ", ": "))


def format_tool_call(name: str, arguments: Mapping[str, Any], fmt: str = "hermes") -> str:
    """The text of one call in format ``fmt``."""
    return format_tool_calls([(name, arguments)], fmt)


_HOW = {"hermes": f"Call a tool with {CALL_OPEN}{{\"name\": ..., \"arguments\": {{...}}}}{CALL_CLOSE}.",
        "llama3_json": "To call a tool, respond with only a JSON object {\"name\": tool name, \"parameters\": "
                       "{argument name: value}}; separate several calls with \"; \".",
        "mistral": f"To call tools, respond with {MISTRAL_CALLS}[{{\"name\": ..., \"arguments\": {{...}}}}, ...]."}


def tools_prompt(tools: Sequence[ToolSpec], mode: str, fmt: str = "hermes") -> str:
    """What the system prompt says about ``tools``: ``full`` (format + JSON schemas), ``names``, ``none`` ("")."""
    if mode == "none" or not tools:
        return ""
    how = _HOW[fmt]
    if mode == "names":
        return f"Tools: {', '.join(t.name for t in tools)}. {how}"
    specs = "\n".join(json.dumps({"name": t.name, "description": t.description, "parameters": dict(t.parameters)})
                      for t in tools)
    return f"# Tools\n<tools>\n{specs}\n</tools>\n{how}"


def with_tools_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec],
                      mode: str, fmt: str = "hermes") -> list[dict[str, Any]]:
    """``messages`` with the tools' description added to the system message (a new one if there is none)."""
    out = [dict(m) for m in messages]
    text = tools_prompt(tools, mode, fmt)
    if not text:
        return out
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content') or ''}\n\n{text}".lstrip()
    else:
        out.insert(0, {"role": "system", "content": text})
    return out
