"""OpenAI chat messages (our episode contract) <-> ORS messages of content blocks, as pure functions.

ORS (``openreward.environments.types``) carries a turn as ``{"role", "blocks", "detail"}`` with
blocks ``text``, ``image`` (base64 ``data`` + ``mimeType``), ``reasoning``, ``tool_call``
(``id``, ``name``, ``input``) and ``tool_result`` (``tool_call_id``, ``blocks``, ``is_error``), in
Anthropic placement: tool results ride in *user* turns (there is no ``tool`` role). Our contract
uses OpenAI chat messages: ``tool_calls`` on assistant messages, ``role: "tool"`` for results,
``reasoning_content`` for reasoning (the vLLM/DeepSeek field, as ORS's own converter writes it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

ROLES = ("system", "user", "assistant")


class BadMessages(ValueError):
    """Messages that are not ORS messages (answered 422, as ORS's pydantic validation would)."""


def text_block(text: str, detail: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An ORS ``TextBlock``."""
    return {"text": text, "detail": dict(detail) if detail else None, "type": "text"}


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    """Chat ``content`` (text or parts) as ORS blocks: text parts, and images given as data URLs."""
    if content is None:
        return []
    if isinstance(content, str):
        return [text_block(content)] if content else []
    blocks = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in ("text", "input_text", "output_text"):
            blocks.append(text_block(str(part.get("text", ""))))
        elif kind == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            head, _, data = url.partition(",")
            if head.startswith("data:") and head.endswith(";base64"):
                blocks.append({"data": data, "mimeType": head[5:-7], "detail": None, "type": "image"})
    return blocks


def chat_to_ors(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as ORS messages (a ``tool`` message becomes a user turn with a ``tool_result``)."""
    out = []
    for message in messages:
        role = str(message.get("role", "user"))
        if role == "tool":
            result = {"tool_call_id": str(message.get("tool_call_id", "")),
                      "blocks": _content_blocks(message.get("content")), "is_error": False, "detail": None,
                      "type": "tool_result"}
            out.append({"role": "user", "blocks": [result], "detail": None})
            continue
        role = role if role in ROLES else "system"  # "developer" is OpenAI's newer name for system
        blocks = []
        if role == "assistant" and message.get("reasoning_content"):
            blocks.append({"text": str(message["reasoning_content"]), "signature": None, "detail": None,
                           "type": "reasoning"})
        blocks += _content_blocks(message.get("content"))
        for call in (message.get("tool_calls") or ()) if role == "assistant" else ():
            function = call.get("function") or {}
            arguments = function.get("arguments") or "{}"
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
            except ValueError:
                parsed = {"_raw": arguments}
            blocks.append({"id": str(call.get("id", "")), "name": str(function.get("name", "")),
                           "input": parsed if isinstance(parsed, dict) else {"_value": parsed}, "detail": None,
                           "type": "tool_call"})
        out.append({"role": role, "blocks": blocks, "detail": None})
    return out


def flatten(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """ORS messages as ``/prompt`` blocks: one plain user turn verbatim, else a ``[role]`` header before
    each turn's blocks (rich blocks rendered as text), as ORS's ``flatten_messages`` renders them."""
    if len(messages) == 1 and messages[0]["role"] == "user" and all(
            b["type"] in ("text", "image") for b in messages[0]["blocks"]):
        return list(messages[0]["blocks"])
    out = []
    for message in messages:
        out.append(text_block(f"[{message['role']}]", {"role": message["role"]}))
        for block in message["blocks"]:
            out.extend(_flat_block(block))
    return out


def _flat_block(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind = block["type"]
    if kind == "reasoning":
        return [text_block(f"<think>{block['text']}</think>")]
    if kind == "tool_call":
        return [text_block(f"[tool_call {block['name']}] {json.dumps(block['input'])}")]
    if kind == "tool_result":
        return [text_block("[tool_result]")] + [dict(b) for b in block["blocks"]]
    return [dict(block)]


def ors_to_chat(messages: Any) -> list[dict[str, Any]]:
    """ORS messages (a ``score_group`` candidate) as chat messages; raises :class:`BadMessages`."""
    if not isinstance(messages, list):
        raise BadMessages("'messages' must be a list of {role, blocks} objects")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ROLES \
                or not isinstance(message.get("blocks"), list):
            raise BadMessages(f"messages[{i}] must be {{'role': one of {list(ROLES)}, 'blocks': [...]}}")
        role, texts, calls, reasoning, results = message["role"], [], [], [], 0
        for block in message["blocks"]:
            kind = block.get("type", "text") if isinstance(block, Mapping) else None
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "reasoning" and role == "assistant":
                reasoning.append(str(block.get("text", "")))
            elif kind == "tool_call" and role == "assistant":
                calls.append({"id": str(block.get("id", "")), "type": "function",
                              "function": {"name": str(block.get("name", "")),
                                           "arguments": json.dumps(block.get("input") or {})}})
            elif kind == "tool_result" and role == "user":
                inner, results = block.get("blocks") or [], results + 1
                out.append({"role": "tool", "tool_call_id": str(block.get("tool_call_id", "")),
                            "content": "\n".join(str(b.get("text", "")) for b in inner
                                                 if isinstance(b, Mapping) and b.get("type", "text") == "text")})
            elif kind != "image":
                raise BadMessages(f"messages[{i}]: a {kind!r} block is not valid in a {role!r} message")
        if results and not texts:
            continue  # a turn of tool results only
        chat: dict[str, Any] = {"role": role, "content": "\n".join(texts)}
        if calls:
            chat["tool_calls"] = calls
        if reasoning:
            chat["reasoning_content"] = "\n".join(reasoning)
        out.append(chat)
    return out
