"""NeMo Gym's rows and Responses API items <-> our episode model, as pure functions.

A Gym dataset row carries the prompt in ``responses_create_params.input`` (a string, or input items
``{"role", "content"}`` whose content is text or ``input_text`` parts) and the task's fields beside it
(``expected_answer``, ``verifier_metadata``...). A model turn is a Responses API ``response`` whose
``output`` holds ``message`` items (``output_text`` parts), ``function_call`` items (``name``,
``arguments`` as a JSON string, ``call_id``), ``function_call_output`` items (``call_id``, ``output``)
and ``reasoning`` items (``nemo_gym/openai_utils.py``; how ``simple_agent`` builds them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from reward_core.episode_contract import ToolSpec
from reward_service.http_door.nemo_gym import BadRow, reference_of

#: Chat roles of Gym input items we keep (``developer`` is OpenAI's newer name for ``system``).
INPUT_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
#: A row's field Gym's gymnasium servers read their task data from (``GymnasiumServer.reset``'s metadata).
VERIFIER_METADATA = "verifier_metadata"


def _text(content: Any) -> str:
    """Text of a message's content: a string, or the text of its ``input_text``/``output_text``/``text`` parts."""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content or []
                   if isinstance(part, Mapping) and part.get("type") in ("input_text", "output_text", "text"))


def prompt_messages(params: Any) -> list[dict[str, Any]]:
    """``responses_create_params.input`` as chat messages (a bare string is one user message)."""
    if not isinstance(params, Mapping) or "input" not in params:
        raise BadRow("'responses_create_params' must be an object with an 'input'")
    items = params["input"]
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise BadRow("'responses_create_params.input' must be a string or a list of items")
    return [{"role": INPUT_ROLES[item["role"]], "content": _text(item.get("content"))} for item in items
            if isinstance(item, Mapping) and item.get("role") in INPUT_ROLES
            and item.get("type", "message") == "message"]


def episode_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A Gym row as an environment row: ``prompt`` (chat messages) and ``reference`` (the task's fields,
    as the single-turn adapter reads them, with ``verifier_metadata``'s entries merged in)."""
    reference = reference_of(row)
    metadata = reference.pop(VERIFIER_METADATA, None)
    if isinstance(metadata, Mapping):
        reference = {**metadata, **reference}
    reference.pop("seed", None)
    return {"prompt": prompt_messages(row.get("responses_create_params")), "reference": reference}


def row_seed(row: Mapping[str, Any]) -> int:
    """The row's ``seed`` when it has an integer one, else 0."""
    seed = row.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 else 0


def output_items(response: Any) -> list[Mapping[str, Any]]:
    """``response.output``; raises BadRow when the response has none."""
    if not isinstance(response, Mapping) or not isinstance(response.get("output"), list):
        raise BadRow("'response' must be a Responses API response object with an 'output' list")
    return [item for item in response["output"] if isinstance(item, Mapping)]


def function_calls(response: Any) -> list[Mapping[str, Any]]:
    """The ``function_call`` items of a response, in order."""
    return [item for item in output_items(response) if item.get("type") == "function_call"]


def parse_arguments(arguments: Any) -> dict[str, Any] | None:
    """A call's ``arguments`` (a JSON string of an object, as the Responses API sends them); None when they
    are not one (the model's mistake: the door answers the call with a message, not a tool run)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def chat_messages(params: Any, response: Any) -> list[dict[str, Any]]:
    """A finished Gym conversation (the prompt and ``response.output``) as OpenAI chat messages.

    Consecutive ``message``/``function_call`` items form one assistant turn (its text and its
    ``tool_calls``); a ``function_call_output`` becomes a ``tool`` message; reasoning is left out.
    """
    messages = prompt_messages(params)
    turn: dict[str, Any] | None = None
    for item in output_items(response):
        kind = item.get("type")
        if kind in ("message", "function_call") and item.get("role", "assistant") == "assistant":
            if turn is None:
                turn = {"role": "assistant", "content": ""}
                messages.append(turn)
            if kind == "message":
                turn["content"] += _text(item.get("content"))
            else:
                turn.setdefault("tool_calls", []).append({
                    "id": str(item.get("call_id", "")), "type": "function",
                    "function": {"name": str(item.get("name", "")), "arguments": str(item.get("arguments") or "{}")}})
        elif kind == "function_call_output":
            turn = None
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id", "")),
                             "content": _text(item.get("output"))})
        elif kind == "message" and item.get("role") in INPUT_ROLES:
            turn = None
            messages.append({"role": INPUT_ROLES[item["role"]], "content": _text(item.get("content"))})
    return messages


def responses_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Our tools as Responses API function tools (what a row's ``responses_create_params.tools`` lists)."""
    return [{"type": "function", "name": t.name, "description": t.description, "parameters": dict(t.parameters),
             "strict": False} for t in tools]


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the last user message (the environment's prompt as one observation)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""
