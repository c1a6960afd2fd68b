"""The reward contract as plain dataclasses.

Everything inside the server and the client library works with these types;
only ``convert.py`` touches protobuf. The fields mirror ``proto/reward/v1/reward.proto``.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class RolloutStatus(enum.IntEnum):
    """The outcome of scoring one rollout (values match the proto enum)."""

    UNSPECIFIED = 0
    OK = 1
    NO_ANSWER = 2
    TIMEOUT = 3
    ERROR = 4
    UNKNOWN_TASK = 5
    INVALID_REFERENCE = 6
    UNAVAILABLE = 7
    INVALID_ROLLOUT = 8

    @property
    def scored(self) -> bool:
        """Whether the score is a real reward (a wrong answer is scored: 0)."""
        return self in (RolloutStatus.OK, RolloutStatus.NO_ANSWER)

    @property
    def retryable(self) -> bool:
        """Whether sending the rollout again (to any replica) may score it: the server was going away."""
        return self is RolloutStatus.UNAVAILABLE

    @classmethod
    def from_name(cls, name: str) -> RolloutStatus:
        """Parses ``"OK"``/``"ok"``/``"ROLLOUT_STATUS_OK"``; raises ValueError otherwise."""
        key = name.upper().removeprefix("ROLLOUT_STATUS_")
        try:
            return cls[key]
        except KeyError:
            raise ValueError(f"unknown rollout status {name!r}; expected one of {[s.name for s in cls]}") from None


class InvalidRollout(ValueError):
    """A rollout (e.g. a JSONL line) is malformed: missing or mistyped fields."""


def normalize_reference(reference: Any) -> dict[str, Any]:
    """Turns a reference into a dict: a bare string or number becomes ``{"answer": ...}``."""
    if reference is None:
        return {}
    if isinstance(reference, Mapping):
        return dict(reference)
    if isinstance(reference, bool):
        raise InvalidRollout(f"reference must be an object or a string, not a boolean ({reference!r})")
    if isinstance(reference, (str, int, float)):
        return {"answer": str(reference)}
    raise InvalidRollout(f"reference must be an object or a string, not {type(reference).__name__}")


@dataclass(frozen=True)
class Rollout:
    """One completion to score."""

    id: str
    task: str
    completion: str
    reference: Mapping[str, Any] = field(default_factory=dict)
    prompt: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    group_id: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, default_task: str = "") -> Rollout:
        """Builds a rollout from a JSONL-style dict, raising InvalidRollout on bad fields."""
        if not isinstance(data, Mapping):
            raise InvalidRollout(f"a rollout must be a JSON object, not {type(data).__name__}")
        rid = data.get("id")
        if rid is None or rid == "":
            raise InvalidRollout("missing 'id'")
        task = data.get("task") or default_task
        if not isinstance(task, str) or not task:
            raise InvalidRollout(f"rollout {rid!r}: missing 'task' (give it per line or with --task)")
        completion = data.get("completion")
        if not isinstance(completion, str):
            raise InvalidRollout(f"rollout {rid!r}: 'completion' must be a string")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise InvalidRollout(f"rollout {rid!r}: 'metadata' must be an object")
        return cls(
            id=str(rid),
            task=task,
            completion=completion,
            reference=normalize_reference(data.get("reference")),
            prompt=str(data.get("prompt") or ""),
            metadata={str(k): str(v) for k, v in metadata.items()},
            group_id=str(data.get("group_id") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSONL input line ``from_dict`` reads (empty prompt, metadata and group id left out)."""
        return {
            "id": self.id,
            "task": self.task,
            "completion": self.completion,
            "reference": dict(self.reference),
            **({"prompt": self.prompt} if self.prompt else {}),
            **({"metadata": dict(self.metadata)} if self.metadata else {}),
            **({"group_id": self.group_id} if self.group_id else {}),
        }

    def dedup_key(self) -> tuple[str, str, str, str, str]:
        """Identical (task, completion, reference, prompt, metadata) items are verified once.

        Metadata is part of the key because tasks may read it (``TaskInput.metadata``).
        """
        ref = json.dumps(self.reference, sort_keys=True, default=str)
        meta = json.dumps(dict(self.metadata), sort_keys=True) if self.metadata else ""
        return (self.task, self.completion, ref, self.prompt, meta)


@dataclass(frozen=True)
class StepScore:
    """The score of one reasoning step: its characters ``[start, end)`` in the completion.

    ``scored`` is False for a neutral step (nothing to check) or one that could not be
    checked: step statistics leave it out, never count it as 0.
    """

    start: int
    end: int
    score: float = 0.0
    scored: bool = True
    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "score": self.score, "scored": self.scored,
                "label": self.label}


@dataclass(frozen=True)
class RolloutResult:
    """The answer for one rollout: a score, or an explicit unscored status."""

    id: str
    status: RolloutStatus
    score: float = 0.0
    components: Mapping[str, float] = field(default_factory=dict)
    extracted: str = ""
    error: str = ""
    elapsed_ms: float = 0.0
    task: str = ""
    group_id: str = ""
    steps: tuple[StepScore, ...] = ()
    #: Why the verdict, in a line or two (``reward_service.tasks.explanation``): what was extracted, which rule
    #: matched or why nothing did, which test failed; for an unscored rollout, why.
    explanation: str = ""
    #: The version hash of the verifier that decided it (``TaskInfo.verifier_version``); "" when no task did.
    verifier_version: str = ""

    @property
    def scored(self) -> bool:
        return self.status.scored

    @property
    def reward(self) -> float | None:
        """The score, or None for an unscored rollout (mask it; never use it as 0)."""
        return self.score if self.scored else None

    def to_dict(self) -> dict[str, Any]:
        """The JSONL output line: id, score, status, components, extracted, error, explanation."""
        return {
            "id": self.id,
            "score": self.score,
            "status": self.status.name,
            "scored": self.scored,
            "components": dict(self.components),
            "extracted": self.extracted,
            "error": self.error,
            "explanation": self.explanation,
            "elapsed_ms": round(self.elapsed_ms, 3),
            **({"steps": [step.to_dict() for step in self.steps]} if self.steps else {}),
            **({"task": self.task} if self.task else {}),
            **({"group_id": self.group_id} if self.group_id else {}),
            **({"verifier_version": self.verifier_version} if self.verifier_version else {}),
        }


@dataclass(frozen=True)
class GroupStats:
    """Statistics over the scored rollouts of one group."""

    group_id: str
    size: int
    scored: int
    mean: float
    std: float
    zero_variance: bool


@dataclass(frozen=True)
class ScoreBatchResult:
    """All results of one request, in request order, plus per-group statistics."""

    request_id: str
    results: list[RolloutResult]
    groups: list[GroupStats]
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class TaskInfo:
    """What ListTasks reports about one task or composite reward."""

    name: str
    description: str
    reference_fields: tuple[str, ...] = ()
    required_reference_fields: tuple[str, ...] = ()
    kind: str = "task"
    weights: Mapping[str, float] = field(default_factory=dict)
    produces_steps: bool = False
    #: The task's verifier version hash (code + options + data files; ``reward_service.router.versioning``).
    verifier_version: str = ""


def group_stats(results: list[RolloutResult]) -> list[GroupStats]:
    """Per-group mean / population std over scored rewards, in order of first appearance.

    A group is zero-variance when it has at least one scored rollout and all
    scored rewards are equal: GRPO advantages are then all zero.
    """
    order: list[str] = []
    members: dict[str, list[RolloutResult]] = {}
    for r in results:
        if not r.group_id:
            continue
        if r.group_id not in members:
            order.append(r.group_id)
            members[r.group_id] = []
        members[r.group_id].append(r)
    stats = []
    for gid in order:
        scores = [r.score for r in members[gid] if r.scored]
        n = len(scores)
        mean = sum(scores) / n if n else 0.0
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / n) if n else 0.0
        zero_var = n > 0 and max(scores) == min(scores)
        stats.append(GroupStats(gid, len(members[gid]), n, mean, std, zero_var))
    return stats
