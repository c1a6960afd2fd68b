from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EpisodeStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EPISODE_STATUS_UNSPECIFIED: _ClassVar[EpisodeStatus]
    EPISODE_STATUS_RUNNING: _ClassVar[EpisodeStatus]
    EPISODE_STATUS_FINISHED: _ClassVar[EpisodeStatus]
    EPISODE_STATUS_TOOL_FAILED: _ClassVar[EpisodeStatus]
    EPISODE_STATUS_SANDBOX_FAILED: _ClassVar[EpisodeStatus]
    EPISODE_STATUS_SESSION_LOST: _ClassVar[EpisodeStatus]
    EPISODE_STATUS_DEADLINE_EXCEEDED: _ClassVar[EpisodeStatus]
    EPISODE_STATUS_CLOSED: _ClassVar[EpisodeStatus]
    EPISODE_STATUS_ERROR: _ClassVar[EpisodeStatus]
    EPISODE_STATUS_REFUSED: _ClassVar[EpisodeStatus]
EPISODE_STATUS_UNSPECIFIED: EpisodeStatus
EPISODE_STATUS_RUNNING: EpisodeStatus
EPISODE_STATUS_FINISHED: EpisodeStatus
EPISODE_STATUS_TOOL_FAILED: EpisodeStatus
EPISODE_STATUS_SANDBOX_FAILED: EpisodeStatus
EPISODE_STATUS_SESSION_LOST: EpisodeStatus
EPISODE_STATUS_DEADLINE_EXCEEDED: EpisodeStatus
EPISODE_STATUS_CLOSED: EpisodeStatus
EPISODE_STATUS_ERROR: EpisodeStatus
EPISODE_STATUS_REFUSED: EpisodeStatus

class ToolSpec(_message.Message):
    __slots__ = ("name", "description", "parameters_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters_json: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters_json: _Optional[str] = ...) -> None: ...

class Split(_message.Message):
    __slots__ = ("name", "rows")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    name: str
    rows: int
    def __init__(self, name: _Optional[str] = ..., rows: _Optional[int] = ...) -> None: ...

class EnvironmentInfo(_message.Message):
    __slots__ = ("name", "description", "tools", "splits", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    SPLITS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    splits: _containers.RepeatedCompositeFieldContainer[Split]
    version: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ..., splits: _Optional[_Iterable[_Union[Split, _Mapping]]] = ..., version: _Optional[str] = ...) -> None: ...

class ListEnvironmentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListEnvironmentsResponse(_message.Message):
    __slots__ = ("environments",)
    ENVIRONMENTS_FIELD_NUMBER: _ClassVar[int]
    environments: _containers.RepeatedCompositeFieldContainer[EnvironmentInfo]
    def __init__(self, environments: _Optional[_Iterable[_Union[EnvironmentInfo, _Mapping]]] = ...) -> None: ...

class EpisodeSpec(_message.Message):
    __slots__ = ("environment", "row_json", "split", "index", "seed", "deadline_s", "client_id")
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    ROW_JSON_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_S_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    environment: str
    row_json: str
    split: str
    index: int
    seed: int
    deadline_s: float
    client_id: str
    def __init__(self, environment: _Optional[str] = ..., row_json: _Optional[str] = ..., split: _Optional[str] = ..., index: _Optional[int] = ..., seed: _Optional[int] = ..., deadline_s: _Optional[float] = ..., client_id: _Optional[str] = ...) -> None: ...

class EpisodeStart(_message.Message):
    __slots__ = ("session_id", "environment", "messages_json", "tools", "max_turns", "deadline_s", "metadata_json")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_JSON_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_S_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    environment: str
    messages_json: str
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    max_turns: int
    deadline_s: float
    metadata_json: str
    def __init__(self, session_id: _Optional[str] = ..., environment: _Optional[str] = ..., messages_json: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ..., max_turns: _Optional[int] = ..., deadline_s: _Optional[float] = ..., metadata_json: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("name", "arguments_json", "call_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments_json: str
    call_id: str
    def __init__(self, name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., call_id: _Optional[str] = ...) -> None: ...

class StepReward(_message.Message):
    __slots__ = ("reward",)
    REWARD_FIELD_NUMBER: _ClassVar[int]
    reward: float
    def __init__(self, reward: _Optional[float] = ...) -> None: ...

class EpisodeOutcome(_message.Message):
    __slots__ = ("session_id", "status", "reward", "step_rewards", "components", "detail", "error", "turns", "elapsed_ms")
    class ComponentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    STEP_REWARDS_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    status: EpisodeStatus
    reward: float
    step_rewards: _containers.RepeatedCompositeFieldContainer[StepReward]
    components: _containers.ScalarMap[str, float]
    detail: str
    error: str
    turns: int
    elapsed_ms: float
    def __init__(self, session_id: _Optional[str] = ..., status: _Optional[_Union[EpisodeStatus, str]] = ..., reward: _Optional[float] = ..., step_rewards: _Optional[_Iterable[_Union[StepReward, _Mapping]]] = ..., components: _Optional[_Mapping[str, float]] = ..., detail: _Optional[str] = ..., error: _Optional[str] = ..., turns: _Optional[int] = ..., elapsed_ms: _Optional[float] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("call_id", "output", "status", "reward", "finished", "error", "metadata_json", "elapsed_ms", "outcome")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    output: str
    status: EpisodeStatus
    reward: float
    finished: bool
    error: str
    metadata_json: str
    elapsed_ms: float
    outcome: EpisodeOutcome
    def __init__(self, call_id: _Optional[str] = ..., output: _Optional[str] = ..., status: _Optional[_Union[EpisodeStatus, str]] = ..., reward: _Optional[float] = ..., finished: _Optional[bool] = ..., error: _Optional[str] = ..., metadata_json: _Optional[str] = ..., elapsed_ms: _Optional[float] = ..., outcome: _Optional[_Union[EpisodeOutcome, _Mapping]] = ...) -> None: ...

class EpisodeState(_message.Message):
    __slots__ = ("session_id", "environment", "status", "turns", "step_rewards", "outcome")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    STEP_REWARDS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    environment: str
    status: EpisodeStatus
    turns: int
    step_rewards: _containers.RepeatedCompositeFieldContainer[StepReward]
    outcome: EpisodeOutcome
    def __init__(self, session_id: _Optional[str] = ..., environment: _Optional[str] = ..., status: _Optional[_Union[EpisodeStatus, str]] = ..., turns: _Optional[int] = ..., step_rewards: _Optional[_Iterable[_Union[StepReward, _Mapping]]] = ..., outcome: _Optional[_Union[EpisodeOutcome, _Mapping]] = ...) -> None: ...

class FinishEpisode(_message.Message):
    __slots__ = ("final_message",)
    FINAL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    final_message: str
    def __init__(self, final_message: _Optional[str] = ...) -> None: ...

class StateRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CloseEpisode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EpisodeRequest(_message.Message):
    __slots__ = ("open", "tool_call", "finish", "state", "close")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    open: EpisodeSpec
    tool_call: ToolCall
    finish: FinishEpisode
    state: StateRequest
    close: CloseEpisode
    def __init__(self, open: _Optional[_Union[EpisodeSpec, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., finish: _Optional[_Union[FinishEpisode, _Mapping]] = ..., state: _Optional[_Union[StateRequest, _Mapping]] = ..., close: _Optional[_Union[CloseEpisode, _Mapping]] = ...) -> None: ...

class EpisodeErrorReply(_message.Message):
    __slots__ = ("status", "message", "retry_after_s", "invalid_request")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_S_FIELD_NUMBER: _ClassVar[int]
    INVALID_REQUEST_FIELD_NUMBER: _ClassVar[int]
    status: EpisodeStatus
    message: str
    retry_after_s: float
    invalid_request: bool
    def __init__(self, status: _Optional[_Union[EpisodeStatus, str]] = ..., message: _Optional[str] = ..., retry_after_s: _Optional[float] = ..., invalid_request: _Optional[bool] = ...) -> None: ...

class EpisodeResponse(_message.Message):
    __slots__ = ("started", "tool_result", "outcome", "state", "error")
    STARTED_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    started: EpisodeStart
    tool_result: ToolResult
    outcome: EpisodeOutcome
    state: EpisodeState
    error: EpisodeErrorReply
    def __init__(self, started: _Optional[_Union[EpisodeStart, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., outcome: _Optional[_Union[EpisodeOutcome, _Mapping]] = ..., state: _Optional[_Union[EpisodeState, _Mapping]] = ..., error: _Optional[_Union[EpisodeErrorReply, _Mapping]] = ...) -> None: ...

class Trajectory(_message.Message):
    __slots__ = ("environment", "row_json", "messages_json", "id", "seed", "split", "index")
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    ROW_JSON_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_JSON_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    environment: str
    row_json: str
    messages_json: str
    id: str
    seed: int
    split: str
    index: int
    def __init__(self, environment: _Optional[str] = ..., row_json: _Optional[str] = ..., messages_json: _Optional[str] = ..., id: _Optional[str] = ..., seed: _Optional[int] = ..., split: _Optional[str] = ..., index: _Optional[int] = ...) -> None: ...

class ScoreTrajectoryRequest(_message.Message):
    __slots__ = ("trajectory",)
    TRAJECTORY_FIELD_NUMBER: _ClassVar[int]
    trajectory: Trajectory
    def __init__(self, trajectory: _Optional[_Union[Trajectory, _Mapping]] = ...) -> None: ...

class TrajectoryScore(_message.Message):
    __slots__ = ("id", "status", "reward", "turn_rewards", "components", "detail", "error")
    class TurnRewardsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: float
        def __init__(self, key: _Optional[int] = ..., value: _Optional[float] = ...) -> None: ...
    class ComponentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    TURN_REWARDS_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: str
    status: EpisodeStatus
    reward: float
    turn_rewards: _containers.ScalarMap[int, float]
    components: _containers.ScalarMap[str, float]
    detail: str
    error: str
    def __init__(self, id: _Optional[str] = ..., status: _Optional[_Union[EpisodeStatus, str]] = ..., reward: _Optional[float] = ..., turn_rewards: _Optional[_Mapping[int, float]] = ..., components: _Optional[_Mapping[str, float]] = ..., detail: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ScoreTrajectoryResponse(_message.Message):
    __slots__ = ("score",)
    SCORE_FIELD_NUMBER: _ClassVar[int]
    score: TrajectoryScore
    def __init__(self, score: _Optional[_Union[TrajectoryScore, _Mapping]] = ...) -> None: ...
