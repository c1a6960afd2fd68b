"""The episode contract: multi-turn, tool-using sessions with an environment, as plain dataclasses.

An *episode* is one session of a policy with an environment for one task row: it opens (seeded, with
the row's reference kept server-side), gives a prompt and the tools it offers, answers tool calls
(name + JSON arguments) with tool output and an optional per-step reward, and ends with a final
verification. Every door speaks this one model: our gRPC stream (one bidirectional stream per
episode), the Open Reward Standard, NeMo Gym's seed/verify and reset/step, OpenEnv's reset/step/state.

Semantics (the same as single rollouts): a wrong or missing final answer is a *scored* outcome
(reward 0); a failure of ours or of the infrastructure (a tool's call timed out, the sandbox died,
the session was lost, the episode ran past its deadline) is *unscored*, typed, and never 0.
A program the model wrote that runs past its time limit inside the ``python`` tool is the model's
doing: the tool answers normally with output saying so, and the episode goes on.

Only ``episode_convert`` (beside the generated stubs) touches protobuf; everything else uses these.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class EpisodeStatus(enum.IntEnum):
    """Where an episode stands, or how it ended (values match the proto enum)."""

    UNSPECIFIED = 0
    RUNNING = 1  # open: tool calls are answered
    FINISHED = 2  # ended and verified: ``EpisodeOutcome.reward`` is a real reward (0 for a wrong answer)
    TOOL_FAILED = 3  # a tool's call failed on our side (its deadline passed, it crashed): unscored
    SANDBOX_FAILED = 4  # the sandbox behind a tool died or is unreachable: unscored
    SESSION_LOST = 5  # the session is gone (replica lost, reaped while idle, unknown id): unscored
    DEADLINE_EXCEEDED = 6  # the episode ran past its deadline: unscored
    CLOSED = 7  # closed by the client before it finished: unscored, nothing to score
    ERROR = 8  # an internal error (the environment's code raised): unscored
    REFUSED = 9  # admission: too many sessions and the queue timeout passed (retry later): unscored

    @property
    def scored(self) -> bool:
        """Whether the episode's reward is real (only a FINISHED episode is scored)."""
        return self is EpisodeStatus.FINISHED

    @property
    def ended(self) -> bool:
        """Whether no more tool calls will be answered."""
        return self not in (EpisodeStatus.UNSPECIFIED, EpisodeStatus.RUNNING)


class EpisodeError(RuntimeError):
    """A call on an episode could not be answered; ``status`` says how it failed (never FINISHED).

    Hosts raise it for a session that is unknown or ended, admission refusals and deadlines; a
    door maps ``status`` to its protocol (gRPC code, HTTP status, a typed failure field).
    """

    def __init__(self, status: EpisodeStatus, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status, self.retry_after_s = status, retry_after_s


class EpisodeSpecError(EpisodeError):
    """The request itself is unusable (an unknown environment, a split or index it lacks, a malformed row,
    a deadline above the maximum): the caller's mistake, status ERROR. Doors answer it as a bad request
    (gRPC INVALID_ARGUMENT, HTTP 400/404), never as a failure of the server."""

    def __init__(self, message: str) -> None:
        super().__init__(EpisodeStatus.ERROR, message)


@dataclass(frozen=True)
class ToolSpec:
    """A tool an environment offers: its name, what it does, and its arguments as a JSON schema."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class ToolCall:
    """A call of one tool with JSON arguments; ``call_id`` is the caller's (echoed in the result)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    call_id: str = ""


@dataclass(frozen=True)
class ToolResult:
    """The answer to one tool call.

    ``output`` is what the policy sees next (text). ``reward`` is this step's reward, or None when the
    environment gives none per step. ``finished``: the episode ended with this call (e.g. the answer
    was submitted); then ``outcome`` carries the final verification. ``status`` is RUNNING or
    FINISHED for a normal answer; an unscored status when the call failed on our side (``error`` says
    why; the episode then ends with that status).
    """

    call_id: str
    output: str
    status: EpisodeStatus = EpisodeStatus.RUNNING
    reward: float | None = None
    finished: bool = False
    error: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    elapsed_ms: float = 0.0
    outcome: EpisodeOutcome | None = None


@dataclass(frozen=True)
class EpisodeSpec:
    """What to open a session for: an environment and one task row (or a split and index of its rows).

    ``row`` is a task row as the environment reads it (prompt, reference, options); the reference is
    kept server-side and never shown to the policy. ``seed`` makes the episode reproducible (row
    generation, sampling inside tools). ``deadline_s`` bounds the whole episode (0: the server's
    default); ``client_id`` is for fair admission and metrics.
    """

    environment: str
    row: Mapping[str, Any] | None = None
    split: str = ""
    index: int = -1
    seed: int = 0
    deadline_s: float = 0.0
    client_id: str = ""


@dataclass(frozen=True)
class EpisodeStart:
    """An opened session: its id, the prompt (chat messages), the tools and the limits."""

    session_id: str
    environment: str
    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[ToolSpec]
    max_turns: int = 0  # 0: no limit besides the deadline
    deadline_s: float = 0.0
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EpisodeOutcome:
    """How an episode ended: a final reward (FINISHED) or an unscored status with the reason.

    ``step_rewards`` are the per-step rewards in call order (None where a step had none);
    ``components`` the final verification's named parts; ``detail`` why the verdict (what was
    extracted, which check decided); ``error`` why it is unscored.
    """

    session_id: str
    status: EpisodeStatus
    reward: float | None = None
    step_rewards: Sequence[float | None] = ()
    components: Mapping[str, float] = field(default_factory=dict)
    detail: str = ""
    error: str = ""
    turns: int = 0
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class EpisodeState:
    """A running or ended session as the host holds it (OpenEnv's ``state``)."""

    session_id: str
    environment: str
    status: EpisodeStatus
    turns: int
    step_rewards: Sequence[float | None] = ()
    outcome: EpisodeOutcome | None = None


@dataclass(frozen=True)
class EnvironmentInfo:
    """An environment this server runs: its tools and its rows per split (ORS lists both)."""

    name: str
    description: str = ""
    tools: Sequence[ToolSpec] = ()
    splits: Mapping[str, int] = field(default_factory=dict)  # split name -> number of rows
    version: str = ""


@dataclass(frozen=True)
class Trajectory:
    """A finished conversation a trainer ran itself, to be scored without a session.

    ``messages`` are OpenAI chat messages (assistant messages may carry ``tool_calls``; tool
    messages ``tool_call_id``). Gym's Responses output items are converted to this form by its door.
    ``split``/``index`` name one of the environment's rows instead of ``row`` (as in :class:`EpisodeSpec`):
    a door that opened its session by index (ORS ``score_group``) holds no row to send.
    """

    environment: str
    row: Mapping[str, Any]
    messages: Sequence[Mapping[str, Any]]
    id: str = ""
    seed: int = 0
    split: str = ""
    index: int = -1


@dataclass(frozen=True)
class TrajectoryScore:
    """A trajectory's rewards: per turn (keyed by the index of the assistant turn) and final."""

    id: str
    status: EpisodeStatus
    reward: float | None = None
    turn_rewards: Mapping[int, float] = field(default_factory=dict)
    components: Mapping[str, float] = field(default_factory=dict)
    detail: str = ""
    error: str = ""


@runtime_checkable
class EpisodeHost(Protocol):
    """What runs episodes: the in-process session manager and the gRPC client both implement it,
    so the doors (ORS, Gym, OpenEnv) and the trainer work with either.

    Calls on an unknown or ended session raise :class:`EpisodeError` (SESSION_LOST, or the status it
    ended with); admission refusals raise it with REFUSED and a retry hint.
    """

    async def list_environments(self) -> list[EnvironmentInfo]:
        """The environments served here."""
        ...

    async def open(self, spec: EpisodeSpec) -> EpisodeStart:
        """Opens a session (waits for admission up to the queue timeout)."""
        ...

    async def call_tool(self, session_id: str, call: ToolCall) -> ToolResult:
        """Runs one tool call in the session."""
        ...

    async def finish(self, session_id: str, final_message: str | None = None) -> EpisodeOutcome:
        """Ends the episode and verifies it (``final_message``: the policy's last text, if any)."""
        ...

    async def state(self, session_id: str) -> EpisodeState:
        """The session's state (also for an ended session, until it is closed or reaped)."""
        ...

    async def close(self, session_id: str) -> None:
        """Releases the session and everything it holds (idempotent)."""
        ...

    async def score_trajectory(self, trajectory: Trajectory) -> TrajectoryScore:
        """Scores a finished conversation without a session."""
        ...
