"""The reward contract as plain dataclasses.

Everything inside the server and the client library works with these types;
only ``convert.py`` touches protobuf. The fields mirror ``proto/reward/v1/reward.proto``.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson


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
    JUDGE_FAILED = 9
    JUDGE_UNPARSEABLE = 10
    JUDGE_RATE_LIMITED = 11

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


#: How an unscored rollout's ``error`` carries a retry hint (JUDGE_RATE_LIMITED): "...; retry after 2.5 s".
_RETRY_HINT = re.compile(r"retry after (\d+(?:\.\d+)?) s\b")


def retry_hint(seconds: float) -> str:
    """The retry hint an unscored rollout's ``error`` ends with (read back by :func:`retry_after_hint`)."""
    return f"retry after {max(seconds, 0.0):.1f} s"


def retry_after_hint(error: str) -> float | None:
    """The seconds a rollout's ``error`` asks the caller to wait before sending it again, or None."""
    found = _RETRY_HINT.search(error or "")
    return float(found.group(1)) if found else None


class InvalidRollout(ValueError):
    """A rollout (e.g. a JSONL line) is malformed: missing or mistyped fields."""


def normalize_reference(reference: Any) -> dict[str, Any]:
    """Turns a reference into a dict: a bare string or number becomes ``{"answer": ...}``."""
    if reference is None:
        return {}
    if type(reference) is dict or isinstance(reference, Mapping):
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
        if type(data) is not dict and not isinstance(data, Mapping):  # (the exact-type test first: it is cheap)
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
        if type(metadata) is not dict and not isinstance(metadata, Mapping):
            raise InvalidRollout(f"rollout {rid!r}: 'metadata' must be an object")
        prompt, group_id = data.get("prompt") or "", data.get("group_id") or ""
        return cls(  # (the common types tested first: a re-score builds 100,000s of rollouts)
            str(rid) if type(rid) is not str else rid,
            task,
            completion,
            normalize_reference(data.get("reference")),
            prompt if type(prompt) is str else str(prompt),
            {str(k): str(v) for k, v in metadata.items()} if metadata else {},
            group_id if type(group_id) is str else str(group_id),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSONL input line ``from_dict`` reads (empty prompt, metadata and group id left out)."""
        line = {"id": self.id, "task": self.task, "completion": self.completion, "reference": dict(self.reference)}
        if self.prompt:
            line["prompt"] = self.prompt
        if self.metadata:
            line["metadata"] = dict(self.metadata)
        if self.group_id:
            line["group_id"] = self.group_id
        return line

    def dedup_key(self) -> tuple[str, str, str, str, str]:
        """Identical (task, completion, reference, prompt, metadata) items are verified once.

        Metadata is part of the key because tasks may read it (``TaskInput.metadata``).
        """
        meta = canonical_json(self.metadata) if self.metadata else ""
        return (self.task, self.completion, canonical_json(self.reference), self.prompt, meta)


_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def canonical_json(value: Mapping[str, Any]) -> str:
    """``value`` as sorted-key JSON: equal JSON values give equal strings, different ones different strings.

    orjson's compact form, except where it could not tell values apart (it writes NaN and infinities as
    ``null``) or cannot write them (integers past 64 bits): those take ``json.dumps`` with its spaced
    separators, a form the compact one never takes for a non-empty object, so the two never collide.
    """
    return canonical_json_bytes(value).decode("utf-8", "surrogatepass")


def canonical_json_bytes(value: Mapping[str, Any]) -> bytes:
    """``canonical_json(value)`` in UTF-8 (lone surrogates kept), without the round trip through a str."""
    if type(value) is not dict:  # orjson writes a dict, not any Mapping
        value = dict(value)
    try:
        data = orjson.dumps(value, default=str, option=_CANONICAL)
    except TypeError:
        data = b"null"
    if b"null" in data:
        return json.dumps(value, sort_keys=True, default=str).encode("utf-8", "surrogatepass")
    return data


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
        line = {"id": self.id, "score": self.score, "status": self.status.name, "scored": self.scored,
                "components": dict(self.components), "extracted": self.extracted, "error": self.error,
                "explanation": self.explanation, "elapsed_ms": round(self.elapsed_ms, 3)}
        if self.steps:
            line["steps"] = [step.to_dict() for step in self.steps]
        if self.task:
            line["task"] = self.task
        if self.group_id:
            line["group_id"] = self.group_id
        if self.verifier_version:
            line["verifier_version"] = self.verifier_version
        return line


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
class TaskChecks:
    """One task's start-up checks as ListTasks reports them (proto ``TaskChecks``): its self-check's failed
    cases and its canaries (declared, passed, failed; ``canaries_skipped``: why none ran). ``done`` is
    False until the server's background run has reached the task."""

    done: bool = False
    self_check_failures: tuple[str, ...] = ()
    canaries_declared: int = 0
    canaries_passed: int = 0
    canaries_failed: int = 0
    failed_canaries: tuple[str, ...] = ()
    canaries_skipped: str = ""


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
    #: What the start-up checks found (None: the task is not checked at start-up).
    checks: TaskChecks | None = None
    #: The task scores each completion against its group (its rollouts need a ``group_id``).
    groupwise: bool = False


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
