"""An episode's unscored ending as an HTTP answer: one table for the Gym and OpenEnv doors.

An episode that ended without a reward (``EpisodeStatus`` other than FINISHED) is never answered as
reward 0. Over plain HTTP it is an error whose status says what a caller should do: 5xx for a failure
of ours (retry the rollout), 429 with ``Retry-After`` for an admission refusal, 499 for a session the
client closed; 409 for a call on an episode that already finished (scored: no failure). The body is
the door's usual ``google.rpc.Status`` JSON plus ``episode_status`` (our status name) and, for NeMo
Gym, ``failure_kind``/``failure_reason`` from Gym's shared vocabulary (``nemo_gym/failure_kinds.py``).
"""

from __future__ import annotations

import math

import grpc
from starlette.responses import JSONResponse

from reward_core.episode_contract import EpisodeError, EpisodeSpecError, EpisodeStatus
from reward_service.http_door.errors import bad_request, error_response

#: The gRPC code (hence the HTTP status, by transcoding's table) of each unscored ending.
STATUS_CODES = {
    EpisodeStatus.TOOL_FAILED: grpc.StatusCode.INTERNAL,
    EpisodeStatus.SANDBOX_FAILED: grpc.StatusCode.UNAVAILABLE,
    EpisodeStatus.SESSION_LOST: grpc.StatusCode.UNAVAILABLE,  # a replica died or the session was reaped: retry
    EpisodeStatus.DEADLINE_EXCEEDED: grpc.StatusCode.DEADLINE_EXCEEDED,
    EpisodeStatus.CLOSED: grpc.StatusCode.CANCELLED,
    EpisodeStatus.ERROR: grpc.StatusCode.INTERNAL,
    EpisodeStatus.REFUSED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    EpisodeStatus.FINISHED: grpc.StatusCode.ABORTED,  # a call on an episode that already ended (409): not a failure
}
#: Gym's ``failure_kind`` (its shared vocabulary, ``nemo_gym/failure_kinds.py``) of each unscored ending.
GYM_FAILURE_KINDS = {
    EpisodeStatus.TOOL_FAILED: "environment_server_failed",
    EpisodeStatus.SANDBOX_FAILED: "provider_unavailable",
    EpisodeStatus.SESSION_LOST: "session_lost",
    EpisodeStatus.DEADLINE_EXCEEDED: "session_expired",
    EpisodeStatus.CLOSED: "cancelled",
    EpisodeStatus.ERROR: "environment_server_failed",
    EpisodeStatus.REFUSED: "environment_server_failed",
    EpisodeStatus.UNSPECIFIED: "environment_server_failed",
}
#: Most characters of a failure's reason (Gym's ``judge_failsafe`` keeps 2000).
REASON_CHARS = 2000


def failure_reason(status: EpisodeStatus, message: str) -> str:
    """``episode unscored (TOOL_FAILED): <why>``, cut to :data:`REASON_CHARS`."""
    return f"episode unscored ({status.name}): {message or 'no detail'}"[:REASON_CHARS]


def episode_error_response(status: EpisodeStatus, message: str, *, retry_after_s: float | None = None,
                           gym: bool = False) -> JSONResponse:
    """The HTTP error for an episode that ended (or a call that failed) with ``status`` (never FINISHED)."""
    reason = failure_reason(status, message)
    headers = {"Retry-After": str(max(1, math.ceil(retry_after_s)))} if retry_after_s else {}
    response = error_response(STATUS_CODES.get(status, grpc.StatusCode.INTERNAL), reason, headers)
    body = {"code": STATUS_CODES.get(status, grpc.StatusCode.INTERNAL).value[0], "message": reason, "details": [],
            "episode_status": status.name}
    if gym and status is not EpisodeStatus.FINISHED:
        body.update(failure_kind=GYM_FAILURE_KINDS.get(status, "environment_server_failed"), failure_reason=reason)
    return JSONResponse(body, status_code=response.status_code, headers={
        k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")})


def from_episode_error(exc: EpisodeError, *, gym: bool = False) -> JSONResponse:
    """:func:`episode_error_response` for a host's :class:`EpisodeError`; 400 for an
    :class:`EpisodeSpecError` (the caller asked for an environment, split or row that does not exist)."""
    if isinstance(exc, EpisodeSpecError):
        return bad_request(str(exc))
    return episode_error_response(exc.status, str(exc), retry_after_s=exc.retry_after_s, gym=gym)
