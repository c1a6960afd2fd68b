"""Reading a finished conversation (OpenAI chat messages with tool calls) for trajectory scoring.

Turns are counted over assistant messages only: the first assistant message is turn 0. A tool
call is paired with the tool message that answers it (``tool_call_id``); its ``arguments`` may be
a JSON string (OpenAI's wire form) or an object. The answer scored is the arguments' ``answer``
of the last ``submit_answer`` call, else the last assistant message's text. Nothing is run again:
the tools' outputs are the ones in the conversation. Per-turn rewards: :func:`turn_rewards`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reward_core.episode_contract import ToolCall


class TrajectoryError(ValueError):
    """The messages are not a chat conversation this reads (the message says where)."""


@dataclass(frozen=True)
class TurnCall:
    """One tool call of an assistant turn, with the output the conversation gives it ("" if none)."""

    turn: int
    call: ToolCall
    output: str


@dataclass(frozen=True)
class ReadTrajectory:
    """What scoring needs from a conversation."""

    turns: int
    calls: list[TurnCall] = field(default_factory=list)
    submitted: tuple[int, str] | None = None  # (turn, answer) of the last submit_answer call
    final_text: str = ""
    final_turn: int = -1


def message_text(content: Any) -> str:
    """A message's ``content`` as text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") in
                       ("text", "output_text", "input_text"))
    raise TrajectoryError(f"message content must be text or a list of parts, got {type(content).__name__}")


def _call(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise TrajectoryError(f"{where}: a tool call must be an object")
    function = raw.get("function") if isinstance(raw.get("function"), Mapping) else raw
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise TrajectoryError(f"{where}: a tool call needs a function name")
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            arguments = {"_unparsed": arguments}  # the model's malformed arguments: a call that did nothing
    if not isinstance(arguments, Mapping):
        arguments = {"_unparsed": arguments}
    return ToolCall(name, dict(arguments), str(raw.get("id") or ""))


def read_trajectory(messages: Sequence[Mapping[str, Any]]) -> ReadTrajectory:
    """The turns, tool calls (with their outputs), submitted answer and final text of ``messages``."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TrajectoryError("messages must be a list of chat messages")
    outputs: dict[str, str] = {}
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TrajectoryError(f"message {i} is not an object")
        if message.get("role") == "tool" and message.get("tool_call_id"):
            outputs[str(message["tool_call_id"])] = message_text(message.get("content"))
    turn = -1
    calls: list[TurnCall] = []
    submitted = None
    final_text, final_turn = "", -1
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        turn += 1
        text = message_text(message.get("content"))
        if text.strip():
            final_text, final_turn = text, turn
        raw_calls = message.get("tool_calls") or ()
        if not isinstance(raw_calls, Sequence) or isinstance(raw_calls, (str, bytes)):
            raise TrajectoryError(f"message {i}: tool_calls must be a list")
        for raw in raw_calls:
            call = _call(raw, f"message {i}")
            calls.append(TurnCall(turn, call, outputs.get(call.call_id, "")))
            if call.name == "submit_answer":
                answer = call.arguments.get("answer")
                submitted = (turn, answer if isinstance(answer, str) else "" if answer is None else json.dumps(answer))
    return ReadTrajectory(turn + 1, calls, submitted, final_text, final_turn)


def turn_rewards(read: ReadTrajectory, step_reward: Callable[[ToolCall, str], float | None],
                 final_reward: float) -> dict[int, float]:
    """Rewards keyed by assistant turn: each turn's tool calls' step rewards (summed; calls without one add
    nothing), plus ``final_reward`` at the turn that submitted the answer (else the turn of the last text)."""
    rewards: dict[int, float] = {}
    for turn_call in read.calls:
        if turn_call.call.name != "submit_answer":
            reward = step_reward(turn_call.call, turn_call.output)
            if reward is not None:
                rewards[turn_call.turn] = rewards.get(turn_call.turn, 0.0) + reward
    final_turn = read.submitted[0] if read.submitted else read.final_turn
    if final_turn >= 0:
        rewards[final_turn] = rewards.get(final_turn, 0.0) + final_reward
    return rewards
