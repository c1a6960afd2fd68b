"""Conversion between protobuf messages and the contract dataclasses: the one place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2

from reward.v1 import reward_pb2 as pb
from reward_core.contract import (
    GroupStats,
    InvalidRollout,
    Rollout,
    RolloutResult,
    RolloutStatus,
    ScoreBatchResult,
    StepScore,
    TaskChecks,
    TaskInfo,
)


def _plain(value: Any) -> Any:
    """Struct numbers are doubles: turn integral ones back into ints (72.0 -> 72)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def reference_to_struct(reference: Mapping[str, Any]) -> struct_pb2.Struct:
    """A reference dict as a protobuf Struct; raises InvalidRollout if not JSON-like."""
    struct = struct_pb2.Struct()
    try:
        struct.update(dict(reference))
    except (ValueError, TypeError) as exc:
        raise InvalidRollout(f"reference is not JSON-serializable: {exc}") from None
    return struct


def rollout_to_proto(rollout: Rollout) -> pb.Rollout:
    return pb.Rollout(
        id=rollout.id,
        task=rollout.task,
        prompt=rollout.prompt,
        completion=rollout.completion,
        reference=reference_to_struct(rollout.reference),
        metadata=dict(rollout.metadata),
        group_id=rollout.group_id,
    )


def rollout_from_proto(msg: pb.Rollout) -> Rollout:
    reference = _plain(json_format.MessageToDict(msg.reference)) if msg.HasField("reference") else {}
    return Rollout(
        id=msg.id,
        task=msg.task,
        completion=msg.completion,
        reference=reference,
        prompt=msg.prompt,
        metadata=dict(msg.metadata),
        group_id=msg.group_id,
    )


def score_request_to_proto(
    rollouts: Iterable[Rollout], request_id: str = "", item_timeout_s: float = 0.0
) -> pb.ScoreRequest:
    return pb.ScoreRequest(
        request_id=request_id,
        rollouts=[rollout_to_proto(r) for r in rollouts],
        item_timeout_s=item_timeout_s,
    )


def result_to_proto(result: RolloutResult) -> pb.RolloutResult:
    return pb.RolloutResult(
        id=result.id,
        score=result.score,
        components=dict(result.components),
        status=int(result.status),
        scored=result.scored,
        extracted=result.extracted,
        error=result.error,
        elapsed_ms=result.elapsed_ms,
        task=result.task,
        group_id=result.group_id,
        steps=[pb.StepScore(start=st.start, end=st.end, score=st.score, scored=st.scored, label=st.label)
               for st in result.steps],
        explanation=result.explanation,
        verifier_version=result.verifier_version,
    )


def result_from_proto(msg: pb.RolloutResult) -> RolloutResult:
    error, explanation = msg.error, msg.explanation
    try:
        status = RolloutStatus(msg.status)
    except ValueError:  # a status from a newer server: unscored, and say so
        status = RolloutStatus.ERROR
        error = error or f"unknown rollout status {msg.status} (newer server?)"
        explanation = f"unknown rollout status {msg.status} (newer server?); {explanation or error}"
    return RolloutResult(
        id=msg.id,
        status=status,
        score=msg.score,
        components=dict(msg.components),
        extracted=msg.extracted,
        error=error,
        elapsed_ms=msg.elapsed_ms,
        task=msg.task,
        group_id=msg.group_id,
        steps=tuple(StepScore(st.start, st.end, st.score, st.scored, st.label) for st in msg.steps),
        explanation=explanation,
        verifier_version=msg.verifier_version,
    )


def group_to_proto(stats: GroupStats) -> pb.GroupStats:
    return pb.GroupStats(
        group_id=stats.group_id,
        size=stats.size,
        scored=stats.scored,
        mean=stats.mean,
        std=stats.std,
        zero_variance=stats.zero_variance,
    )


def group_from_proto(msg: pb.GroupStats) -> GroupStats:
    return GroupStats(msg.group_id, msg.size, msg.scored, msg.mean, msg.std, msg.zero_variance)


def batch_to_proto(batch: ScoreBatchResult) -> pb.ScoreResponse:
    return pb.ScoreResponse(
        request_id=batch.request_id,
        results=[result_to_proto(r) for r in batch.results],
        groups=[group_to_proto(g) for g in batch.groups],
        elapsed_ms=batch.elapsed_ms,
    )


def batch_from_proto(msg: pb.ScoreResponse) -> ScoreBatchResult:
    return ScoreBatchResult(
        request_id=msg.request_id,
        results=[result_from_proto(r) for r in msg.results],
        groups=[group_from_proto(g) for g in msg.groups],
        elapsed_ms=msg.elapsed_ms,
    )


def task_info_to_proto(info: TaskInfo) -> pb.TaskInfo:
    return pb.TaskInfo(
        name=info.name,
        description=info.description,
        reference_fields=list(info.reference_fields),
        required_reference_fields=list(info.required_reference_fields),
        kind=info.kind,
        weights=dict(info.weights),
        produces_steps=info.produces_steps,
        verifier_version=info.verifier_version,
        checks=_checks_to_proto(info.checks) if info.checks is not None else None,
        groupwise=info.groupwise,
    )


def _checks_to_proto(checks: TaskChecks) -> pb.TaskChecks:
    return pb.TaskChecks(done=checks.done, self_check_failures=list(checks.self_check_failures),
                         canaries_declared=checks.canaries_declared, canaries_passed=checks.canaries_passed,
                         canaries_failed=checks.canaries_failed, failed_canaries=list(checks.failed_canaries),
                         canaries_skipped=checks.canaries_skipped)


def _checks_from_proto(msg: pb.TaskChecks) -> TaskChecks:
    return TaskChecks(msg.done, tuple(msg.self_check_failures), msg.canaries_declared, msg.canaries_passed,
                      msg.canaries_failed, tuple(msg.failed_canaries), msg.canaries_skipped)


def task_info_from_proto(msg: pb.TaskInfo) -> TaskInfo:
    return TaskInfo(
        name=msg.name,
        description=msg.description,
        reference_fields=tuple(msg.reference_fields),
        required_reference_fields=tuple(msg.required_reference_fields),
        kind=msg.kind,
        weights=dict(msg.weights),
        produces_steps=msg.produces_steps,
        verifier_version=msg.verifier_version,
        checks=_checks_from_proto(msg.checks) if msg.HasField("checks") else None,
        groupwise=msg.groupwise,
    )
