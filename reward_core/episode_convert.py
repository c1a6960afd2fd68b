"""Conversion between ``reward.v1.environment_pb2`` messages and the episode dataclasses: the one place.

Only the EnvironmentService servicer and :mod:`reward_core.clients.environment` touch these
protobufs; both go through here.

Free-form values (a task row, tool arguments, chat messages, metadata, a parameter schema) travel as
JSON text, as the sandbox's FUNCTION_CALL values do, rather than as ``google.protobuf.Struct``: a
Struct holds every number as a double (an id ``12345678901234567`` or the int ``3`` would come back
as ``1.2345678901234568e16`` / ``3.0``, and a tool's arguments must reach it as the policy wrote
them), and it cannot hold a top-level array (a prompt's messages). An empty string means "none".
Text that does not parse raises :class:`InvalidEpisodeMessage` naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from reward.v1 import environment_pb2 as pb
from reward_core.episode_contract import (
    EnvironmentInfo,
    EpisodeError,
    EpisodeOutcome,
    EpisodeSpec,
    EpisodeSpecError,
    EpisodeStart,
    EpisodeState,
    EpisodeStatus,
    ToolCall,
    ToolResult,
    ToolSpec,
    Trajectory,
    TrajectoryScore,
)
from reward_core.sandbox_convert import utf8_safe

_PREFIX = "EPISODE_STATUS_"
_DEFAULT_PARAMETERS: Mapping[str, Any] = ToolSpec("").parameters


class InvalidEpisodeMessage(ValueError):
    """A message whose JSON text does not parse (or is not of the shape the field needs)."""


# --- JSON and enums -------------------------------------------------------------------------


def dumps(value: Any, what: str) -> str:
    """``value`` as JSON text (UTF-8 safe); raises InvalidEpisodeMessage when it is not JSON-serializable."""
    try:
        return utf8_safe(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidEpisodeMessage(f"{what} is not JSON-serializable: {exc}") from None


def loads(text: str, what: str, kind: type | None, empty: Any) -> Any:
    """JSON ``text`` ("" -> ``empty``); ``kind`` (dict or list) is the shape it must have."""
    if text == "":
        return empty
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidEpisodeMessage(f"{what} is not valid JSON ({exc}): {text[:80]!r}") from None
    if kind is not None and not isinstance(value, kind):
        shape = "object" if kind is dict else "array"
        raise InvalidEpisodeMessage(f"{what} must be a JSON {shape}, got {type(value).__name__}")
    return value


def _mapping_json(value: Mapping[str, Any], what: str) -> str:
    return dumps(dict(value), what) if value else ""


def status_to_proto(status: EpisodeStatus) -> int:
    return pb.EpisodeStatus.Value(_PREFIX + status.name)


def status_from_proto(value: int) -> EpisodeStatus:
    """The status of a wire value; one this version does not know (a newer peer's) reads as ERROR."""
    try:
        return EpisodeStatus[pb.EpisodeStatus.Name(value).removeprefix(_PREFIX)]
    except (ValueError, KeyError):
        return EpisodeStatus.ERROR


def _optional(msg: Any, name: str) -> Any:
    return getattr(msg, name) if msg.HasField(name) else None


def _steps_to_proto(steps: Sequence[float | None]) -> list[pb.StepReward]:
    return [pb.StepReward() if r is None else pb.StepReward(reward=r) for r in steps]


def _steps_from_proto(steps: Sequence[pb.StepReward]) -> tuple[float | None, ...]:
    return tuple(_optional(s, "reward") for s in steps)


# --- environments and tools -----------------------------------------------------------------


def tool_spec_to_proto(spec: ToolSpec) -> pb.ToolSpec:
    params = "" if spec.parameters == _DEFAULT_PARAMETERS else dumps(dict(spec.parameters),
                                                                     f"tool {spec.name!r} parameters")
    return pb.ToolSpec(name=spec.name, description=utf8_safe(spec.description), parameters_json=params)


def tool_spec_from_proto(msg: pb.ToolSpec) -> ToolSpec:
    params = loads(msg.parameters_json, f"tool {msg.name!r} parameters_json", dict, None)
    return ToolSpec(msg.name, msg.description) if params is None else ToolSpec(msg.name, msg.description, params)


def environment_to_proto(info: EnvironmentInfo) -> pb.EnvironmentInfo:
    return pb.EnvironmentInfo(name=info.name, description=utf8_safe(info.description),
                              tools=[tool_spec_to_proto(t) for t in info.tools],
                              splits=[pb.Split(name=k, rows=v) for k, v in info.splits.items()],
                              version=info.version)


def environment_from_proto(msg: pb.EnvironmentInfo) -> EnvironmentInfo:
    return EnvironmentInfo(name=msg.name, description=msg.description,
                           tools=tuple(tool_spec_from_proto(t) for t in msg.tools),
                           splits={s.name: s.rows for s in msg.splits}, version=msg.version)


# --- the episode stream ---------------------------------------------------------------------


def spec_to_proto(spec: EpisodeSpec) -> pb.EpisodeSpec:
    msg = pb.EpisodeSpec(environment=spec.environment, split=spec.split, seed=spec.seed,
                         deadline_s=spec.deadline_s, client_id=spec.client_id,
                         row_json="" if spec.row is None else dumps(dict(spec.row), "the episode's row"))
    if spec.index >= 0:
        msg.index = spec.index
    return msg


def spec_from_proto(msg: pb.EpisodeSpec) -> EpisodeSpec:
    index = _optional(msg, "index")
    return EpisodeSpec(environment=msg.environment, row=loads(msg.row_json, "open.row_json", dict, None),
                       split=msg.split, index=-1 if index is None else index, seed=msg.seed,
                       deadline_s=msg.deadline_s, client_id=msg.client_id)


def start_to_proto(start: EpisodeStart) -> pb.EpisodeStart:
    return pb.EpisodeStart(session_id=start.session_id, environment=start.environment,
                           messages_json=dumps([dict(m) for m in start.messages], "the prompt's messages"),
                           tools=[tool_spec_to_proto(t) for t in start.tools], max_turns=start.max_turns,
                           deadline_s=start.deadline_s, metadata_json=_mapping_json(start.metadata, "metadata"))


def start_from_proto(msg: pb.EpisodeStart) -> EpisodeStart:
    return EpisodeStart(session_id=msg.session_id, environment=msg.environment,
                        messages=tuple(loads(msg.messages_json, "started.messages_json", list, [])),
                        tools=tuple(tool_spec_from_proto(t) for t in msg.tools), max_turns=msg.max_turns,
                        deadline_s=msg.deadline_s, metadata=loads(msg.metadata_json, "started.metadata_json",
                                                                  dict, {}))


def tool_call_to_proto(call: ToolCall) -> pb.ToolCall:
    return pb.ToolCall(name=call.name, call_id=call.call_id,
                       arguments_json=_mapping_json(call.arguments, f"arguments of tool call {call.name!r}"))


def tool_call_from_proto(msg: pb.ToolCall) -> ToolCall:
    return ToolCall(name=msg.name, call_id=msg.call_id,
                    arguments=loads(msg.arguments_json, f"arguments_json of tool call {msg.name!r}", dict, {}))


def outcome_to_proto(outcome: EpisodeOutcome) -> pb.EpisodeOutcome:
    msg = pb.EpisodeOutcome(session_id=outcome.session_id, status=status_to_proto(outcome.status),
                            step_rewards=_steps_to_proto(outcome.step_rewards), components=dict(outcome.components),
                            detail=utf8_safe(outcome.detail), error=utf8_safe(outcome.error), turns=outcome.turns,
                            elapsed_ms=outcome.elapsed_ms)
    if outcome.reward is not None:
        msg.reward = outcome.reward
    return msg


def outcome_from_proto(msg: pb.EpisodeOutcome) -> EpisodeOutcome:
    return EpisodeOutcome(session_id=msg.session_id, status=status_from_proto(msg.status),
                          reward=_optional(msg, "reward"), step_rewards=_steps_from_proto(msg.step_rewards),
                          components=dict(msg.components), detail=msg.detail, error=msg.error, turns=msg.turns,
                          elapsed_ms=msg.elapsed_ms)


def tool_result_to_proto(result: ToolResult) -> pb.ToolResult:
    msg = pb.ToolResult(call_id=result.call_id, output=utf8_safe(result.output),
                        status=status_to_proto(result.status), finished=result.finished,
                        error=utf8_safe(result.error), elapsed_ms=result.elapsed_ms,
                        metadata_json=_mapping_json(result.metadata, "the tool result's metadata"))
    if result.reward is not None:
        msg.reward = result.reward
    if result.outcome is not None:
        msg.outcome.CopyFrom(outcome_to_proto(result.outcome))
    return msg


def tool_result_from_proto(msg: pb.ToolResult) -> ToolResult:
    return ToolResult(call_id=msg.call_id, output=msg.output, status=status_from_proto(msg.status),
                      reward=_optional(msg, "reward"), finished=msg.finished, error=msg.error,
                      metadata=loads(msg.metadata_json, "tool_result.metadata_json", dict, {}),
                      elapsed_ms=msg.elapsed_ms,
                      outcome=outcome_from_proto(msg.outcome) if msg.HasField("outcome") else None)


def state_to_proto(state: EpisodeState) -> pb.EpisodeState:
    msg = pb.EpisodeState(session_id=state.session_id, environment=state.environment,
                          status=status_to_proto(state.status), turns=state.turns,
                          step_rewards=_steps_to_proto(state.step_rewards))
    if state.outcome is not None:
        msg.outcome.CopyFrom(outcome_to_proto(state.outcome))
    return msg


def state_from_proto(msg: pb.EpisodeState) -> EpisodeState:
    return EpisodeState(session_id=msg.session_id, environment=msg.environment, status=status_from_proto(msg.status),
                        turns=msg.turns, step_rewards=_steps_from_proto(msg.step_rewards),
                        outcome=outcome_from_proto(msg.outcome) if msg.HasField("outcome") else None)


def error_to_proto(error: EpisodeError) -> pb.EpisodeErrorReply:
    msg = pb.EpisodeErrorReply(status=status_to_proto(error.status), message=utf8_safe(str(error)),
                               invalid_request=isinstance(error, EpisodeSpecError))
    if error.retry_after_s is not None:
        msg.retry_after_s = error.retry_after_s
    return msg


def error_from_proto(msg: pb.EpisodeErrorReply) -> EpisodeError:
    """An :class:`EpisodeSpecError` for a request the server found unusable, else an EpisodeError."""
    if msg.invalid_request:
        return EpisodeSpecError(msg.message)
    return EpisodeError(status_from_proto(msg.status), msg.message, retry_after_s=_optional(msg, "retry_after_s"))


# --- trajectories ---------------------------------------------------------------------------


def trajectory_to_proto(trajectory: Trajectory) -> pb.Trajectory:
    msg = pb.Trajectory(environment=trajectory.environment, id=trajectory.id, seed=trajectory.seed,
                        split=trajectory.split, row_json=_mapping_json(trajectory.row, "the trajectory's row"),
                        messages_json=dumps([dict(m) for m in trajectory.messages], "the trajectory's messages"))
    if trajectory.index >= 0:
        msg.index = trajectory.index
    return msg


def trajectory_from_proto(msg: pb.Trajectory) -> Trajectory:
    index = _optional(msg, "index")
    return Trajectory(environment=msg.environment, id=msg.id, seed=msg.seed,
                      row=loads(msg.row_json, "trajectory.row_json", dict, {}),
                      messages=tuple(loads(msg.messages_json, "trajectory.messages_json", list, [])),
                      split=msg.split, index=-1 if index is None else index)


def trajectory_score_to_proto(score: TrajectoryScore) -> pb.TrajectoryScore:
    msg = pb.TrajectoryScore(id=score.id, status=status_to_proto(score.status),
                             turn_rewards=dict(score.turn_rewards), components=dict(score.components),
                             detail=utf8_safe(score.detail), error=utf8_safe(score.error))
    if score.reward is not None:
        msg.reward = score.reward
    return msg


def trajectory_score_from_proto(msg: pb.TrajectoryScore) -> TrajectoryScore:
    return TrajectoryScore(id=msg.id, status=status_from_proto(msg.status), reward=_optional(msg, "reward"),
                           turn_rewards=dict(msg.turn_rewards), components=dict(msg.components),
                           detail=msg.detail, error=msg.error)
