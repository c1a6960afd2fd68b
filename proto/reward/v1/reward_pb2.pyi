from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RolloutStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLLOUT_STATUS_UNSPECIFIED: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_OK: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_NO_ANSWER: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_TIMEOUT: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_ERROR: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_UNKNOWN_TASK: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_INVALID_REFERENCE: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_UNAVAILABLE: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_INVALID_ROLLOUT: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_JUDGE_FAILED: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_JUDGE_UNPARSEABLE: _ClassVar[RolloutStatus]
    ROLLOUT_STATUS_JUDGE_RATE_LIMITED: _ClassVar[RolloutStatus]
ROLLOUT_STATUS_UNSPECIFIED: RolloutStatus
ROLLOUT_STATUS_OK: RolloutStatus
ROLLOUT_STATUS_NO_ANSWER: RolloutStatus
ROLLOUT_STATUS_TIMEOUT: RolloutStatus
ROLLOUT_STATUS_ERROR: RolloutStatus
ROLLOUT_STATUS_UNKNOWN_TASK: RolloutStatus
ROLLOUT_STATUS_INVALID_REFERENCE: RolloutStatus
ROLLOUT_STATUS_UNAVAILABLE: RolloutStatus
ROLLOUT_STATUS_INVALID_ROLLOUT: RolloutStatus
ROLLOUT_STATUS_JUDGE_FAILED: RolloutStatus
ROLLOUT_STATUS_JUDGE_UNPARSEABLE: RolloutStatus
ROLLOUT_STATUS_JUDGE_RATE_LIMITED: RolloutStatus

class Rollout(_message.Message):
    __slots__ = ("id", "task", "prompt", "completion", "reference", "metadata", "group_id")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    task: str
    prompt: str
    completion: str
    reference: _struct_pb2.Struct
    metadata: _containers.ScalarMap[str, str]
    group_id: str
    def __init__(self, id: _Optional[str] = ..., task: _Optional[str] = ..., prompt: _Optional[str] = ..., completion: _Optional[str] = ..., reference: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., group_id: _Optional[str] = ...) -> None: ...

class ScoreRequest(_message.Message):
    __slots__ = ("request_id", "rollouts", "item_timeout_s")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ROLLOUTS_FIELD_NUMBER: _ClassVar[int]
    ITEM_TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    rollouts: _containers.RepeatedCompositeFieldContainer[Rollout]
    item_timeout_s: float
    def __init__(self, request_id: _Optional[str] = ..., rollouts: _Optional[_Iterable[_Union[Rollout, _Mapping]]] = ..., item_timeout_s: _Optional[float] = ...) -> None: ...

class RolloutResult(_message.Message):
    __slots__ = ("id", "score", "components", "status", "scored", "extracted", "error", "elapsed_ms", "task", "group_id", "steps", "explanation", "verifier_version")
    class ComponentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SCORED_FIELD_NUMBER: _ClassVar[int]
    EXTRACTED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    VERIFIER_VERSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    score: float
    components: _containers.ScalarMap[str, float]
    status: RolloutStatus
    scored: bool
    extracted: str
    error: str
    elapsed_ms: float
    task: str
    group_id: str
    steps: _containers.RepeatedCompositeFieldContainer[StepScore]
    explanation: str
    verifier_version: str
    def __init__(self, id: _Optional[str] = ..., score: _Optional[float] = ..., components: _Optional[_Mapping[str, float]] = ..., status: _Optional[_Union[RolloutStatus, str]] = ..., scored: _Optional[bool] = ..., extracted: _Optional[str] = ..., error: _Optional[str] = ..., elapsed_ms: _Optional[float] = ..., task: _Optional[str] = ..., group_id: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[StepScore, _Mapping]]] = ..., explanation: _Optional[str] = ..., verifier_version: _Optional[str] = ...) -> None: ...

class StepScore(_message.Message):
    __slots__ = ("start", "end", "score", "scored", "label")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SCORED_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    score: float
    scored: bool
    label: str
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ..., score: _Optional[float] = ..., scored: _Optional[bool] = ..., label: _Optional[str] = ...) -> None: ...

class GroupStats(_message.Message):
    __slots__ = ("group_id", "size", "scored", "mean", "std", "zero_variance")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SCORED_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    STD_FIELD_NUMBER: _ClassVar[int]
    ZERO_VARIANCE_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    size: int
    scored: int
    mean: float
    std: float
    zero_variance: bool
    def __init__(self, group_id: _Optional[str] = ..., size: _Optional[int] = ..., scored: _Optional[int] = ..., mean: _Optional[float] = ..., std: _Optional[float] = ..., zero_variance: _Optional[bool] = ...) -> None: ...

class ScoreResponse(_message.Message):
    __slots__ = ("request_id", "results", "groups", "elapsed_ms")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    results: _containers.RepeatedCompositeFieldContainer[RolloutResult]
    groups: _containers.RepeatedCompositeFieldContainer[GroupStats]
    elapsed_ms: float
    def __init__(self, request_id: _Optional[str] = ..., results: _Optional[_Iterable[_Union[RolloutResult, _Mapping]]] = ..., groups: _Optional[_Iterable[_Union[GroupStats, _Mapping]]] = ..., elapsed_ms: _Optional[float] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TaskInfo(_message.Message):
    __slots__ = ("name", "description", "reference_fields", "required_reference_fields", "kind", "weights", "produces_steps", "verifier_version", "checks", "groupwise")
    class WeightsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELDS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_REFERENCE_FIELDS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    PRODUCES_STEPS_FIELD_NUMBER: _ClassVar[int]
    VERIFIER_VERSION_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    GROUPWISE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    reference_fields: _containers.RepeatedScalarFieldContainer[str]
    required_reference_fields: _containers.RepeatedScalarFieldContainer[str]
    kind: str
    weights: _containers.ScalarMap[str, float]
    produces_steps: bool
    verifier_version: str
    checks: TaskChecks
    groupwise: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., reference_fields: _Optional[_Iterable[str]] = ..., required_reference_fields: _Optional[_Iterable[str]] = ..., kind: _Optional[str] = ..., weights: _Optional[_Mapping[str, float]] = ..., produces_steps: _Optional[bool] = ..., verifier_version: _Optional[str] = ..., checks: _Optional[_Union[TaskChecks, _Mapping]] = ..., groupwise: _Optional[bool] = ...) -> None: ...

class TaskChecks(_message.Message):
    __slots__ = ("done", "self_check_failures", "canaries_declared", "canaries_passed", "canaries_failed", "failed_canaries", "canaries_skipped")
    DONE_FIELD_NUMBER: _ClassVar[int]
    SELF_CHECK_FAILURES_FIELD_NUMBER: _ClassVar[int]
    CANARIES_DECLARED_FIELD_NUMBER: _ClassVar[int]
    CANARIES_PASSED_FIELD_NUMBER: _ClassVar[int]
    CANARIES_FAILED_FIELD_NUMBER: _ClassVar[int]
    FAILED_CANARIES_FIELD_NUMBER: _ClassVar[int]
    CANARIES_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    done: bool
    self_check_failures: _containers.RepeatedScalarFieldContainer[str]
    canaries_declared: int
    canaries_passed: int
    canaries_failed: int
    failed_canaries: _containers.RepeatedScalarFieldContainer[str]
    canaries_skipped: str
    def __init__(self, done: _Optional[bool] = ..., self_check_failures: _Optional[_Iterable[str]] = ..., canaries_declared: _Optional[int] = ..., canaries_passed: _Optional[int] = ..., canaries_failed: _Optional[int] = ..., failed_canaries: _Optional[_Iterable[str]] = ..., canaries_skipped: _Optional[str] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskInfo]
    def __init__(self, tasks: _Optional[_Iterable[_Union[TaskInfo, _Mapping]]] = ...) -> None: ...
