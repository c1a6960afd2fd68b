"""OpenEnv's wire format <-> our episode model, as pure functions.

Shapes from the ``openenv`` package (0.10.0): ``openenv/core/env_server/types.py`` (``ResetRequest``,
``StepRequest``, ``ResetResponse``/``StepResponse``: ``{"observation", "reward", "done", "metadata"}``,
``State``: ``episode_id``, ``step_count`` and extra fields, the ``WS*`` messages) and
``env_server/mcp_types.py`` (``CallToolAction`` ``{"type": "call_tool", "tool_name", "arguments"}``,
``ListToolsAction``, ``CallToolObservation`` ``{"tool_name", "result", "error"}`` with ``ToolError``
``{"error_type", "message"}``, ``Tool`` ``{"name", "description", "input_schema"}``), as its
``MCPToolClient._parse_result`` and ``GenericEnvClient`` read them.

Actions: a tool call (``call_tool``), ``list_tools``, or the policy's final message
``{"type": "message", "content": "..."}`` (ends and verifies the episode). An unscored ending is
``done: true`` with ``reward: null`` (never 0), ``observation.error`` set (a ``ToolError``, so
``MCPToolClient.call_tool`` raises) and ``metadata.episode_status`` naming it; ``metadata.scored`` says
whether ``reward`` is a real one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reward_core.episode_contract import EpisodeOutcome, EpisodeStart, EpisodeState, EpisodeStatus, ToolResult, ToolSpec

#: OpenEnv's ``ToolErrorType`` for each unscored ending.
TOOL_ERROR_TYPES = {
    EpisodeStatus.TOOL_FAILED: "execution_error",
    EpisodeStatus.SANDBOX_FAILED: "transport_error",
    EpisodeStatus.SESSION_LOST: "transport_error",
    EpisodeStatus.DEADLINE_EXCEEDED: "timeout",
    EpisodeStatus.CLOSED: "transport_error",
    EpisodeStatus.ERROR: "execution_error",
    EpisodeStatus.REFUSED: "transport_error",
}
#: Reset parameters that choose the episode (besides OpenEnv's own ``seed`` and ``episode_id``).
RESET_FIELDS = ("split", "index", "row", "deadline_s")


class BadAction(ValueError):
    """An action or reset parameter this environment cannot read (HTTP 422, WebSocket VALIDATION_ERROR)."""


@dataclass(frozen=True)
class Action:
    """A parsed action: ``kind`` is ``call_tool``, ``list_tools`` or ``message``."""

    kind: str
    tool_name: str = ""
    arguments: Mapping[str, Any] | None = None
    content: str = ""


def parse_action(data: Any) -> Action:
    """An OpenEnv action dict as an :class:`Action`; raises :class:`BadAction`."""
    if not isinstance(data, Mapping):
        raise BadAction("the action must be a JSON object")
    kind = data.get("type")
    if kind == "list_tools":
        return Action("list_tools")
    if kind == "call_tool":
        name, arguments = data.get("tool_name"), data.get("arguments", {})
        if not isinstance(name, str) or not name or not isinstance(arguments, Mapping):
            raise BadAction("a call_tool action needs 'tool_name' (a string) and 'arguments' (an object)")
        return Action("call_tool", tool_name=name, arguments=dict(arguments))
    if kind == "message":
        content = data.get("content")
        if not isinstance(content, str):
            raise BadAction("a message action needs 'content' (the policy's final text)")
        return Action("message", content=content)
    raise BadAction(f"unknown action type {kind!r}: use 'call_tool' (tool_name, arguments), 'list_tools', "
                    "or 'message' (content: the final answer, which ends the episode)")


def reset_choice(params: Mapping[str, Any]) -> dict[str, Any]:
    """The episode a reset asks for: ``row``, or ``split`` (default ``train``) and ``index`` (default
    -1: the environment's row for the seed), ``seed`` (default 0), ``deadline_s``; raises BadAction."""
    seed = params.get("seed") if params.get("seed") is not None else 0
    split, index, row = params.get("split", "train"), params.get("index", -1), params.get("row")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise BadAction("'seed' must be a non-negative integer")
    if not isinstance(split, str) or not isinstance(index, int) or isinstance(index, bool):
        raise BadAction("'split' must be a string and 'index' an integer")
    if row is not None and not isinstance(row, Mapping):
        raise BadAction("'row' must be an object (prompt and reference)")
    deadline = params.get("deadline_s", 0.0)
    if not isinstance(deadline, (int, float)) or deadline < 0:
        raise BadAction("'deadline_s' must be a non-negative number")
    if row is not None:
        return {"row": dict(row), "seed": seed, "deadline_s": float(deadline)}
    return {"split": split, "index": index, "seed": seed, "deadline_s": float(deadline)}


def tool_dict(tool: ToolSpec) -> dict[str, Any]:
    """OpenEnv's ``Tool``."""
    return {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}


def reset_payload(start: EpisodeStart, session_id: str, episode_id: str) -> dict[str, Any]:
    """``ResetResponse``: the prompt and the tools; ``metadata.session_id`` addresses later HTTP calls."""
    metadata = {"session_id": session_id, "episode_id": episode_id, "environment": start.environment,
                "max_turns": start.max_turns, "deadline_s": start.deadline_s, "episode_status": "RUNNING"}
    observation = {"messages": [dict(m) for m in start.messages], "tools": [tool_dict(t) for t in start.tools],
                   "metadata": metadata}
    return {"observation": observation, "reward": None, "done": False, "metadata": metadata}


def _outcome_metadata(outcome: EpisodeOutcome | None) -> dict[str, Any]:
    if outcome is None:
        return {}
    return {"final_reward": outcome.reward, "reward_components": dict(outcome.components),
            "step_rewards": list(outcome.step_rewards), "detail": outcome.detail, "turns": outcome.turns}


def failure_payload(status: EpisodeStatus, message: str, session_id: str, tool_name: str = "") -> dict[str, Any]:
    """An unscored ending: ``done``, no reward, a ``ToolError`` and the status in ``metadata``."""
    metadata = {"session_id": session_id, "episode_status": status.name, "scored": False, "error": message}
    error = {"error_type": TOOL_ERROR_TYPES.get(status, "execution_error"), "message": message}
    observation = {"tool_name": tool_name, "result": None, "error": error, "metadata": metadata}
    return {"observation": observation, "reward": None, "done": True, "metadata": metadata}


def tool_payload(name: str, result: ToolResult, session_id: str) -> dict[str, Any]:
    """``StepResponse`` of a tool call (a ``CallToolObservation``); the step that ends the episode carries the
    final reward."""
    if not result.status.scored and result.status is not EpisodeStatus.RUNNING:
        return failure_payload(result.status, result.error or "the tool call failed", session_id, name)
    outcome = result.outcome
    if outcome is not None and not outcome.status.scored:
        return failure_payload(outcome.status, outcome.error, session_id, name)
    reward = outcome.reward if result.finished and outcome is not None else result.reward
    metadata = {"session_id": session_id, "episode_status": result.status.name, "call_id": result.call_id,
                "scored": result.finished, "step_reward": result.reward, "elapsed_ms": result.elapsed_ms,
                **dict(result.metadata), **_outcome_metadata(outcome if result.finished else None)}
    observation = {"tool_name": name, "result": result.output, "error": None, "metadata": metadata}
    return {"observation": observation, "reward": reward, "done": result.finished, "metadata": metadata}


def final_payload(outcome: EpisodeOutcome, content: str, session_id: str) -> dict[str, Any]:
    """``StepResponse`` of the final message: the verification's reward, or an unscored ending."""
    if not outcome.status.scored:
        return failure_payload(outcome.status, outcome.error, session_id)
    metadata = {"session_id": session_id, "episode_status": outcome.status.name, "scored": True,
                **_outcome_metadata(outcome)}
    observation = {"message": content, "metadata": metadata}
    return {"observation": observation, "reward": outcome.reward, "done": True, "metadata": metadata}


def tools_payload(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """``StepResponse`` of ``list_tools`` (a ``ListToolsObservation``)."""
    return {"observation": {"tools": [tool_dict(t) for t in tools], "metadata": {}}, "reward": None,
            "done": False}


def state_payload(state: EpisodeState | None, session_id: str, episode_id: str | None) -> dict[str, Any]:
    """OpenEnv's ``State`` (``episode_id``, ``step_count``) with ours beside it."""
    if state is None:
        return {"episode_id": episode_id, "step_count": 0, "session_id": session_id, "episode_status": None}
    return {"episode_id": episode_id, "step_count": state.turns, "session_id": session_id,
            "environment": state.environment, "episode_status": state.status.name,
            "step_rewards": list(state.step_rewards), **_outcome_metadata(state.outcome)}


ACTION_SCHEMA: dict[str, Any] = {
    "title": "Action", "description": "A tool call, list_tools, or the final message (ends the episode)",
    "oneOf": [
        {"type": "object", "required": ["type", "tool_name"], "properties": {
            "type": {"const": "call_tool"}, "tool_name": {"type": "string"}, "arguments": {"type": "object"}}},
        {"type": "object", "required": ["type"], "properties": {"type": {"const": "list_tools"}}},
        {"type": "object", "required": ["type", "content"], "properties": {
            "type": {"const": "message"}, "content": {"type": "string"}}}]}
OBSERVATION_SCHEMA: dict[str, Any] = {
    "title": "Observation", "type": "object", "description": "A CallToolObservation (tool_name, result, error), "
    "the tool list (tools), the prompt (messages, tools) or the final message (message)",
    "properties": {"tool_name": {"type": "string"}, "result": {}, "error": {"type": ["object", "null"]},
                   "tools": {"type": "array"}, "messages": {"type": "array"}, "message": {"type": "string"},
                   "done": {"type": "boolean"}, "reward": {"type": ["number", "null"]}, "metadata": {"type": "object"}}}
STATE_SCHEMA: dict[str, Any] = {
    "title": "State", "type": "object", "additionalProperties": True,
    "properties": {"episode_id": {"type": ["string", "null"]}, "step_count": {"type": "integer", "minimum": 0},
                   "session_id": {"type": "string"}, "episode_status": {"type": ["string", "null"]}}}
