"""Clients of the environment service: ``EnvironmentClient`` (asyncio, an :class:`EpisodeHost`) and
``BlockingEnvironmentClient`` (the same calls, blocking).

A door or a trainer runs episodes on a remote server exactly as on the in-process session manager::

    async with EnvironmentClient("env-host:50051") as host:
        start = await host.open(EpisodeSpec("arithmetic_tools", split="train", index=0, seed=1))
        result = await host.call_tool(start.session_id, ToolCall("calculator", {"expression": "6*7"}))
        outcome = await host.finish(start.session_id)      # outcome.reward is None unless FINISHED
        await host.close(start.session_id)

Each session is one ``Episode`` stream (proto/reward/v1/environment.proto): the stream pins the
session to the replica that opened it, so calls on a session reach the replica that holds it with
no routing of ours. Calls on one session are answered in order (the client sends the next once the
last is answered); calls on different sessions run concurrently.

Errors, as the :class:`EpisodeHost` protocol says, are :class:`EpisodeError` with a typed status:
the server's own answers (an unknown or ended session, REFUSED by admission with a retry hint),
and SESSION_LOST when the stream breaks (the replica died, the connection dropped, the server shut
down): the session is gone, and every later call on it raises SESSION_LOST too. A call that gets
no answer within ``timeout_s`` cancels the stream (the server releases the session) and raises
DEADLINE_EXCEEDED. Connecting is as for every client of the suite: the first call waits at most
``connect_timeout_s`` and raises :class:`~reward_core.clients.errors.EndpointUnreachable` naming the
address and why; an ``open`` that no replica takes (every one draining) raises
:class:`~reward_core.clients.errors.ServerUnavailable` within seconds, after the channel's retries.
``list_environments`` raises the clients' own exceptions as every client's calls do
(:mod:`reward_core.clients.errors`: ServerUnavailable, CallTimedOut, CallRejected, CallFailed).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, Self, TypeVar

import grpc
import grpc.aio

from reward.v1 import environment_pb2 as pb
from reward.v1 import environment_pb2_grpc
from reward_core import episode_convert as convert
from reward_core.channel_config import ENVIRONMENT_SERVICE, ChannelConfig
from reward_core.clients import connection
from reward_core.clients.errors import ServerUnavailable, typed_errors
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
    Trajectory,
    TrajectoryScore,
)
from reward_core.grpc_common import RETRY_PUSHBACK_KEY

__all__ = ["BlockingEnvironmentClient", "EnvironmentClient"]

T = TypeVar("T")

_SERVICE_LABEL = "environment service"


class _Session:
    """One session's stream: requests written one at a time, each answered by the next response."""

    def __init__(self, call: grpc.aio.StreamStreamCall) -> None:
        self.call = call
        self.lock = asyncio.Lock()
        self.closed = False  # closed by this client while a call was in flight


def _rpc_detail(exc: grpc.RpcError) -> str:
    code = exc.code() if callable(getattr(exc, "code", None)) else None
    details = exc.details() if callable(getattr(exc, "details", None)) else ""
    return f"{code.name if code else 'error'}: {details or exc}"


class EnvironmentClient(connection.AsyncChannelOwner):
    """asyncio client of an EnvironmentService; implements :class:`~reward_core.episode_contract.EpisodeHost`.

    ``timeout_s`` bounds each call's wait for its answer (a tool call, the final verification);
    ``client_id`` (default: the spec's, else none) names the caller for the server's fair admission.
    Create it inside the event loop that uses it. ``close_client()`` (or leaving ``async with``)
    closes every session it still holds, then its channel.
    """

    def __init__(self, endpoint: str, *, timeout_s: float = 300.0, channel: ChannelConfig | None = None,
                 client_id: str = "", connect_timeout_s: float | None = connection.CONNECT_TIMEOUT_S) -> None:
        if not endpoint:
            raise ValueError("endpoint is empty: give the host:port of a `reward-service serve` server")
        self._init_connect(connect_timeout_s, _SERVICE_LABEL)
        self.endpoint = endpoint
        self.timeout_s = connection.check_timeout(timeout_s)
        self.channel_config = connection.channel_for(ENVIRONMENT_SERVICE, channel)
        self.client_id = client_id
        self._metadata = connection.call_metadata(client_id)
        self._channel = self.channel_config.aio_channel(endpoint)
        self._stub = environment_pb2_grpc.EnvironmentServiceStub(self._channel)
        self._sessions: dict[str, _Session] = {}

    @property
    def session_ids(self) -> list[str]:
        """The sessions this client holds open."""
        return list(self._sessions)

    # --- unary ----------------------------------------------------------------------------
    async def list_environments(self) -> list[EnvironmentInfo]:
        """The environments the server runs."""
        await self._ensure_connected()
        with self._typed_errors():
            reply = await self._stub.ListEnvironments(pb.ListEnvironmentsRequest(), timeout=self.timeout_s,
                                                      metadata=self._metadata, wait_for_ready=self._wait_for_ready)
        return [convert.environment_from_proto(m) for m in reply.environments]

    async def score_trajectory(self, trajectory: Trajectory) -> TrajectoryScore:
        """Scores a finished conversation (no session). A refusal raises EpisodeError as the host's would:
        EpisodeSpecError for an unusable trajectory, REFUSED (with the retry hint) for admission."""
        request = pb.ScoreTrajectoryRequest(trajectory=convert.trajectory_to_proto(trajectory))
        await self._ensure_connected()
        with self._typed_errors():
            try:
                reply = await self._stub.ScoreTrajectory(request, timeout=self.timeout_s, metadata=self._metadata,
                                                         wait_for_ready=self._wait_for_ready)
            except grpc.aio.AioRpcError as exc:
                if exc.code() is grpc.StatusCode.UNAVAILABLE:
                    raise
                raise _refusal(exc, self.endpoint) from None
        return convert.trajectory_score_from_proto(reply.score)

    # --- episodes -------------------------------------------------------------------------
    async def open(self, spec: EpisodeSpec) -> EpisodeStart:
        """Opens a session on one stream (the server waits for admission up to its queue timeout)."""
        request = pb.EpisodeRequest(open=convert.spec_to_proto(spec))
        await self._ensure_connected()
        call = self._stub.Episode(metadata=self._metadata, wait_for_ready=self._wait_for_ready)
        try:
            await call.write(request)
            response = await asyncio.wait_for(call.read(), self.timeout_s)
        except TimeoutError:
            call.cancel()
            raise EpisodeError(EpisodeStatus.DEADLINE_EXCEEDED,
                               f"the {_SERVICE_LABEL} at {self.endpoint} did not open the episode within "
                               f"{self.timeout_s:g} s (timeout_s)") from None
        except grpc.RpcError as exc:
            call.cancel()
            if exc.code() is grpc.StatusCode.UNAVAILABLE:
                raise ServerUnavailable(self.endpoint, exc.details() or "", _SERVICE_LABEL, exc) from None
            raise EpisodeError(EpisodeStatus.ERROR, f"opening the episode at {self.endpoint} failed "
                                                    f"({_rpc_detail(exc)})") from None
        except BaseException:
            call.cancel()
            raise
        kind = response.WhichOneof("kind") if response is not grpc.aio.EOF else None
        if kind != "started":
            call.cancel()
            if kind == "error":
                raise convert.error_from_proto(response.error)
            raise EpisodeError(EpisodeStatus.ERROR, f"the {_SERVICE_LABEL} at {self.endpoint} answered `open` "
                                                    f"with {kind or 'the end of the stream'}")
        start = convert.start_from_proto(response.started)
        self._sessions[start.session_id] = _Session(call)
        return start

    async def call_tool(self, session_id: str, call: ToolCall) -> ToolResult:
        """Runs one tool call in the session."""
        request = pb.EpisodeRequest(tool_call=convert.tool_call_to_proto(call))
        response = await self._request(session_id, request, "tool_result")
        return convert.tool_result_from_proto(response.tool_result)

    async def finish(self, session_id: str, final_message: str | None = None) -> EpisodeOutcome:
        """Ends the episode and verifies it."""
        finish = pb.FinishEpisode() if final_message is None else pb.FinishEpisode(final_message=final_message)
        response = await self._request(session_id, pb.EpisodeRequest(finish=finish), "outcome")
        return convert.outcome_from_proto(response.outcome)

    async def state(self, session_id: str) -> EpisodeState:
        """The session's state (also once ended, until closed)."""
        response = await self._request(session_id, pb.EpisodeRequest(state=pb.StateRequest()), "state")
        return convert.state_from_proto(response.state)

    async def close(self, session_id: str) -> None:  # type: ignore[override]  # EpisodeHost's close
        """Releases the session on the server (idempotent). Returns once the server has released it, except
        while a call on the session is in flight: then its stream is cancelled (the server stops the call
        and releases the session) and that call raises SESSION_LOST."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        if session.lock.locked():  # a call is in flight: cancelling the stream makes the server stop it and release
            session.closed = True
            session.call.cancel()
            return
        async with session.lock:
            try:
                await session.call.write(pb.EpisodeRequest(close=pb.CloseEpisode()))
                await session.call.done_writing()
                # The stream's end is the server's answer: the session is released by then.
                await asyncio.wait_for(_drain(session.call), self.timeout_s)
            except (grpc.RpcError, TimeoutError, asyncio.InvalidStateError):
                session.call.cancel()  # broken or slow: cancelling makes the server release it

    async def close_client(self) -> None:
        """Closes every session this client holds, then its channel."""
        await asyncio.gather(*(self.close(sid) for sid in list(self._sessions)))
        await self._channel.close()

    async def __aexit__(self, *exc: object) -> None:
        await self.close_client()

    async def _request(self, session_id: str, request: pb.EpisodeRequest, expected: str) -> pb.EpisodeResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise EpisodeError(EpisodeStatus.SESSION_LOST, f"no session {session_id!r} open through this client "
                                                           f"(closed, lost, or never opened at {self.endpoint})")
        async with session.lock:
            try:
                await session.call.write(request)
                response = await asyncio.wait_for(session.call.read(), self.timeout_s)
            except TimeoutError:
                self._lose(session_id)
                raise EpisodeError(EpisodeStatus.DEADLINE_EXCEEDED,
                                   f"no answer to {request.WhichOneof('kind')} of session {session_id} within "
                                   f"{self.timeout_s:g} s (timeout_s): the session was closed") from None
            except (grpc.RpcError, asyncio.InvalidStateError) as exc:
                self._lose(session_id)
                detail = _rpc_detail(exc) if isinstance(exc, grpc.RpcError) else "the stream had ended"
                raise EpisodeError(EpisodeStatus.SESSION_LOST, _lost(session_id, self.endpoint, detail)) from None
            except asyncio.CancelledError:
                self._lose(session_id)
                if session.closed:  # the stream was cancelled by close(), not this call's caller
                    why = f"session {session_id} was closed while its {request.WhichOneof('kind')} was in flight"
                    raise EpisodeError(EpisodeStatus.SESSION_LOST, why) from None
                raise
            except BaseException:  # the stream is out of step: end it
                self._lose(session_id)
                raise
        if response is grpc.aio.EOF:
            self._lose(session_id)
            raise EpisodeError(EpisodeStatus.SESSION_LOST,
                               _lost(session_id, self.endpoint, "the server ended the stream"))
        kind = response.WhichOneof("kind")
        if kind == "error":
            raise convert.error_from_proto(response.error)
        if kind != expected:
            self._lose(session_id)
            raise EpisodeError(EpisodeStatus.ERROR, f"session {session_id}: the server answered {kind} to "
                                                    f"{request.WhichOneof('kind')}; the session was closed")
        return response

    def _lose(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.call.cancel()

    def _typed_errors(self) -> contextlib.AbstractContextManager[None]:
        """A unary call's failure as the clients' own exception: UNAVAILABLE (no replica took the call:
        draining, shut down) as ServerUnavailable, DEADLINE_EXCEEDED as CallTimedOut, ..."""
        return typed_errors(self.endpoint, self.timeout_s, _SERVICE_LABEL)


def _refusal(exc: grpc.aio.AioRpcError, endpoint: str) -> EpisodeError:
    """The EpisodeError of a unary call's status (environment.proto: ScoreTrajectory)."""
    details = exc.details() or ""
    code = exc.code()
    if code is grpc.StatusCode.INVALID_ARGUMENT:
        return EpisodeSpecError(details)
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
        pushback = dict(exc.trailing_metadata() or ()).get(RETRY_PUSHBACK_KEY)
        retry = int(pushback) / 1000 if pushback and str(pushback).isdigit() else None
        return EpisodeError(EpisodeStatus.REFUSED, details, retry_after_s=retry)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return EpisodeError(EpisodeStatus.DEADLINE_EXCEEDED, f"no answer from {endpoint} in time ({details})")
    return EpisodeError(EpisodeStatus.ERROR, f"the {_SERVICE_LABEL} at {endpoint} failed: {_rpc_detail(exc)}")


def _lost(session_id: str, endpoint: str, detail: str) -> str:
    return (f"session {session_id} is lost: its stream to the {_SERVICE_LABEL} at {endpoint} broke ({detail}); "
            "open the episode again")


async def _drain(call: grpc.aio.StreamStreamCall) -> None:
    while await call.read() is not grpc.aio.EOF:
        pass


class BlockingEnvironmentClient:
    """The calls of :class:`EnvironmentClient`, blocking, for code without an event loop (a thread-based
    trainer loop). Thread-safe: the async client runs on a private event-loop thread.
    """

    def __init__(self, endpoint: str, *, timeout_s: float = 300.0, channel: ChannelConfig | None = None,
                 client_id: str = "", connect_timeout_s: float | None = connection.CONNECT_TIMEOUT_S) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="environment-client", daemon=True)
        self._thread.start()

        async def build() -> EnvironmentClient:
            return EnvironmentClient(endpoint, timeout_s=timeout_s, channel=channel, client_id=client_id,
                                     connect_timeout_s=connect_timeout_s)
        try:
            self._client = self._run(build())
        except BaseException:
            self._stop_loop()
            raise
        self.endpoint = endpoint

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    @property
    def session_ids(self) -> list[str]:
        return self._client.session_ids

    def check_connection(self, timeout_s: float | None = None) -> None:
        """Waits for a connection; raises EndpointUnreachable saying why none came."""
        self._run(self._client.check_connection(timeout_s))

    def list_environments(self) -> list[EnvironmentInfo]:
        return self._run(self._client.list_environments())

    def open(self, spec: EpisodeSpec) -> EpisodeStart:
        return self._run(self._client.open(spec))

    def call_tool(self, session_id: str, call: ToolCall) -> ToolResult:
        return self._run(self._client.call_tool(session_id, call))

    def finish(self, session_id: str, final_message: str | None = None) -> EpisodeOutcome:
        return self._run(self._client.finish(session_id, final_message))

    def state(self, session_id: str) -> EpisodeState:
        return self._run(self._client.state(session_id))

    def score_trajectory(self, trajectory: Trajectory) -> TrajectoryScore:
        return self._run(self._client.score_trajectory(trajectory))

    def close(self, session_id: str) -> None:
        """Releases the session on the server (idempotent)."""
        self._run(self._client.close(session_id))

    def close_client(self) -> None:
        """Closes every session this client holds, its channel and its loop thread."""
        if self._thread.is_alive():
            self._run(self._client.close_client())
        self._stop_loop()

    def _stop_loop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_client()
