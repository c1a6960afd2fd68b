"""The EnvironmentService servicer (``grpc.aio``): one episode per ``Episode`` stream, over an EpisodeHost.

The stream's protocol is in proto/reward/v1/environment.proto: ``open`` first, then one response per
request in request order; a call the session cannot answer is an ``error`` response with its typed
status (the host's :class:`~reward_core.episode_contract.EpisodeError`), never a broken stream.

- Nothing leaks: whatever ends a stream (``close``, the client half-closing, cancelling or going
  away, a rejected request, the server stopping) releases its session on the host, once.
- Shutdown: once draining, new streams are refused ``UNAVAILABLE`` (the client's retry policy sends
  them to another replica); episodes already running go on. When the grace period is nearly spent,
  :meth:`EnvironmentServicer.flush` ends each of them: the request in progress (or the next one) is
  answered ``error`` SESSION_LOST, the session released, and the stream ends.

Conversion to and from protobuf is :mod:`reward_core.episode_convert`'s.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import grpc
import grpc.aio

from reward.v1 import environment_pb2 as pb
from reward_core import episode_convert as convert
from reward_core.episode_contract import EpisodeError, EpisodeHost, EpisodeSpecError, EpisodeStatus
from reward_core.grpc_common import RequestRejected, client_id_of, unexpected_as_internal

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: What a running episode is told when the server ends it on shutdown.
SHUTDOWN_REASON = ("the server is shutting down: this episode's session was ended before it finished; "
                   "open the episode again (any replica)")


#: How long :meth:`EnvironmentServicer.hand_back` waits for the flushed streams to end.
HAND_BACK_S = 1.0


class _Flushed(Exception):
    """The server is handing back every running episode (shutdown)."""


class _Stream:
    """One Episode stream's session: released on the host exactly once, whatever ends the stream."""

    def __init__(self, servicer: EnvironmentServicer) -> None:
        self._servicer = servicer
        self.session_id = ""
        self.released = False

    def release(self) -> asyncio.Task | None:
        """Closes the session on the host (in a task of its own, so a cancelled stream still closes it)."""
        if self.released or not self.session_id:
            return None
        self.released = True
        return self._servicer.close_later(self.session_id)

    async def release_now(self) -> None:
        """Releases the session and waits until the host has (even if this stream is cancelled meanwhile)."""
        task = self.release()
        if task is not None:
            await asyncio.shield(task)


class EnvironmentServicer:
    """ListEnvironments, Episode and ScoreTrajectory over one EpisodeHost (coroutines on the server's loop)."""

    def __init__(self, host: EpisodeHost) -> None:
        self._host = host
        self.draining = False
        self.open_streams = 0
        self._flush = asyncio.Event()
        self._closing: set[asyncio.Task] = set()

    @property
    def active_calls(self) -> int:
        """Episodes running on this server (the drain waits for them within the grace period)."""
        return self.open_streams

    # --- shutdown -------------------------------------------------------------------------
    def begin_drain(self) -> None:
        """New episodes are refused UNAVAILABLE from now on; running ones go on."""
        self.draining = True

    def flush(self) -> None:
        """Every running episode ends now with SESSION_LOST (its session released)."""
        self.draining = True
        self._flush.set()
        if self.open_streams:
            logger.info("ending %d running episode(s): the server is shutting down", self.open_streams)

    async def hand_back(self, timeout_s: float = HAND_BACK_S) -> None:
        """:meth:`flush`, then waits (at most ``timeout_s``) for the streams to end and their sessions to be
        released on the host."""
        self.flush()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self.open_streams and loop.time() < deadline:
            await asyncio.sleep(0.01)
        await self.wait_released()

    async def wait_released(self) -> None:
        """Returns once every session whose stream ended has been closed on the host."""
        while self._closing:
            await asyncio.gather(*list(self._closing), return_exceptions=True)

    def close_later(self, session_id: str) -> asyncio.Task:
        """Closes ``session_id`` on the host in a task of its own (kept until done)."""
        task = asyncio.get_running_loop().create_task(self._close(session_id))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        return task

    async def _close(self, session_id: str) -> None:
        try:
            await self._host.close(session_id)
        except Exception:  # noqa: BLE001 -- a host failing to release must not hide the others: log it
            logger.exception("closing session %s failed", session_id)

    # --- unary ----------------------------------------------------------------------------
    async def ListEnvironments(self, request: pb.ListEnvironmentsRequest,
                               context: grpc.aio.ServicerContext) -> pb.ListEnvironmentsResponse:
        try:
            with unexpected_as_internal("ListEnvironments"):
                infos = await self._host.list_environments()
                return pb.ListEnvironmentsResponse(environments=[convert.environment_to_proto(i) for i in infos])
        except RequestRejected as exc:
            await context.abort(exc.code, str(exc))

    async def ScoreTrajectory(self, request: pb.ScoreTrajectoryRequest,
                              context: grpc.aio.ServicerContext) -> pb.ScoreTrajectoryResponse:
        try:
            with unexpected_as_internal(f"scoring trajectory {request.trajectory.id!r}"):
                try:
                    trajectory = convert.trajectory_from_proto(request.trajectory)
                except convert.InvalidEpisodeMessage as exc:
                    raise RequestRejected(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
                try:
                    score = await self._host.score_trajectory(trajectory)
                except EpisodeError as exc:
                    raise _rejection(exc) from None
                return pb.ScoreTrajectoryResponse(score=convert.trajectory_score_to_proto(score))
        except RequestRejected as exc:
            await context.abort(exc.code, str(exc), trailing_metadata=exc.trailing_metadata())

    # --- Episode --------------------------------------------------------------------------
    async def Episode(self, requests: AsyncIterator[pb.EpisodeRequest],
                      context: grpc.aio.ServicerContext) -> AsyncIterator[pb.EpisodeResponse]:
        if self.draining:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "server is draining; open the episode on another replica")
            return
        stream = _Stream(self)
        loop = asyncio.get_running_loop()  # a cancelled or broken stream too (whatever thread tells it)
        context.add_done_callback(lambda _: loop.call_soon_threadsafe(stream.release))
        self.open_streams += 1
        try:
            async for response in self._episode(requests, context, stream):
                yield response
        except RequestRejected as exc:
            stream.release()
            await context.abort(exc.code, str(exc))
        finally:
            self.open_streams -= 1
            stream.release()

    async def _episode(self, requests: AsyncIterator[pb.EpisodeRequest], context: grpc.aio.ServicerContext,
                       stream: _Stream) -> AsyncIterator[pb.EpisodeResponse]:
        try:
            first = await self._unless_flushed(anext(requests, None))
        except _Flushed:
            raise RequestRejected(grpc.StatusCode.UNAVAILABLE, "server is shutting down; open the episode on "
                                                               "another replica") from None
        if first is None:
            return
        if first.WhichOneof("kind") != "open":
            raise _out_of_protocol(first, "the first request of an Episode stream must be `open`")
        refusal: EpisodeError | None = None
        with unexpected_as_internal("opening an episode"):
            spec = _parse(convert.spec_from_proto, first.open)
            if not spec.client_id:
                spec = dataclasses.replace(spec, client_id=client_id_of(context.invocation_metadata() or (),
                                                                        context.peer() or ""))
            try:
                start = await self._unless_flushed(self._host.open(spec))
            except EpisodeError as exc:
                refusal = exc
            except _Flushed:  # still waiting for admission when the server hands back: another replica may take it
                raise RequestRejected(grpc.StatusCode.UNAVAILABLE, "server is shutting down; open the episode on "
                                                                   "another replica") from None
        if refusal is not None:
            yield pb.EpisodeResponse(error=convert.error_to_proto(refusal))
            return
        stream.session_id = start.session_id
        response = pb.EpisodeResponse(started=convert.start_to_proto(start))
        yield response
        try:
            while True:
                request = await self._unless_flushed(anext(requests, None))
                if request is None:  # the client half-closed without `close`: release all the same
                    return
                kind = request.WhichOneof("kind")
                if kind == "close":
                    await stream.release_now()
                    return
                with unexpected_as_internal(f"{kind or 'an empty request'} of session {stream.session_id}"):
                    response = await self._answer(request, kind, stream.session_id)
                if response is None:
                    raise _Flushed
                yield response
        except _Flushed:
            await stream.release_now()
            yield pb.EpisodeResponse(error=pb.EpisodeErrorReply(
                status=convert.status_to_proto(EpisodeStatus.SESSION_LOST), message=SHUTDOWN_REASON))

    async def _answer(self, request: pb.EpisodeRequest, kind: str | None,
                      session_id: str) -> pb.EpisodeResponse | None:
        """The response to one request after ``open`` (a host's EpisodeError is an ``error`` response);
        None when the server flushed every episode while the host was answering."""
        host = self._host
        try:
            if kind == "tool_call":
                call = _parse(convert.tool_call_from_proto, request.tool_call)
                result = await self._unless_flushed(host.call_tool(session_id, call))
                return pb.EpisodeResponse(tool_result=convert.tool_result_to_proto(result))
            if kind == "finish":
                final = request.finish.final_message if request.finish.HasField("final_message") else None
                outcome = await self._unless_flushed(host.finish(session_id, final))
                return pb.EpisodeResponse(outcome=convert.outcome_to_proto(outcome))
            if kind == "state":
                state = await self._unless_flushed(host.state(session_id))
                return pb.EpisodeResponse(state=convert.state_to_proto(state))
        except EpisodeError as exc:
            return pb.EpisodeResponse(error=convert.error_to_proto(exc))
        except _Flushed:
            return None
        if kind == "open":
            raise _out_of_protocol(request, f"a second `open` on the stream of session {session_id}: "
                                            "open one stream per episode")
        raise _out_of_protocol(request, "an empty request (none of open, tool_call, finish, state, close)")

    async def _unless_flushed(self, awaitable: Awaitable[T]) -> T:
        """``awaitable``'s result, unless the server hands every episode back first (then _Flushed)."""
        if self._flush.is_set():
            _discard(awaitable)
            raise _Flushed
        work = asyncio.ensure_future(awaitable)
        flush = asyncio.ensure_future(self._flush.wait())
        try:
            done, _ = await asyncio.wait({work, flush}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            flush.cancel()
            if not work.done():  # flushed, or this stream was cancelled while waiting
                work.cancel()
        if work not in done:
            raise _Flushed
        return work.result()


def _discard(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)  # a coroutine never awaited: close it (no warning)
    if close is not None:
        close()


def _parse(convert_fn: Any, msg: Any) -> Any:
    try:
        return convert_fn(msg)
    except convert.InvalidEpisodeMessage as exc:
        raise RequestRejected(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None


def _out_of_protocol(request: pb.EpisodeRequest, why: str) -> RequestRejected:
    return RequestRejected(grpc.StatusCode.INVALID_ARGUMENT,
                           f"{why} (got {request.WhichOneof('kind') or 'nothing'}); see "
                           "proto/reward/v1/environment.proto")


def _rejection(error: EpisodeError) -> RequestRejected:
    """The status code of a unary call the host refused (ScoreTrajectory), with its retry hint."""
    if isinstance(error, EpisodeSpecError):
        return RequestRejected(grpc.StatusCode.INVALID_ARGUMENT, str(error))
    retry_ms = None if error.retry_after_s is None else max(1, round(error.retry_after_s * 1000))
    code = {EpisodeStatus.REFUSED: grpc.StatusCode.RESOURCE_EXHAUSTED,
            EpisodeStatus.DEADLINE_EXCEEDED: grpc.StatusCode.DEADLINE_EXCEEDED}.get(error.status,
                                                                                    grpc.StatusCode.INTERNAL)
    return RequestRejected(code, str(error), retry_ms)
