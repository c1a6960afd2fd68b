"""The RewardService servicer (``grpc.aio``): validates requests, hands rollouts to the Scorer.

Whole-request problems abort with a status code; per-rollout problems are answered in that
rollout's result (see proto/reward/v1/reward.proto). Handlers are coroutines: a call
waiting for its rollouts, or an idle stream, holds no thread.

- Admission: each call is queued under its client id (``reward-client-id`` metadata); past
  the server's or the client's pending limit it is refused ``RESOURCE_EXHAUSTED`` with a
  retry hint (message and ``grpc-retry-pushback-ms`` trailer). Open streams are capped
  (``max_streams``); health checks are served whatever the load.
- Flow control: a stream reads its next request only while fewer than
  ``max_stream_pending`` of its requests are being scored or waiting to be sent, so a
  client that sends and never reads is pushed back by HTTP/2 instead of buffered.
- Shutdown: once draining, new calls get ``UNAVAILABLE``; when the grace period is nearly
  spent, :meth:`RewardServicer.flush` makes every waiting call answer now: what is verified
  with its score, the rest ``UNAVAILABLE`` per rollout (retryable).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import grpc
import grpc.aio

from reward.v1 import reward_pb2 as pb
from reward_core import convert
from reward_core.contract import InvalidRollout, Rollout, RolloutStatus
from reward_core.grpc_common import (
    RequestRejected,
    check_ids,
    client_id_of,
    internal_error,
    unexpected_as_internal,
    wait_budget,
)
from reward_core.log_context import request_context
from reward_service.router.config import RequestLimits
from reward_service.router.metrics import RewardMetrics
from reward_service.router.scoring import PendingBatch, QueueFullError, Scorer

logger = logging.getLogger(__name__)

#: A rollout whose verification took more than this share of its item limit is logged as slow.
SLOW_ITEM_SHARE = 0.5

#: Why a rollout was not verified when the server handed its call back on shutdown.
SHUTDOWN_REASON = "not verified: the server is shutting down; send this rollout again (any replica)"


def parse_request(request: pb.ScoreRequest, limits: RequestLimits) -> tuple[list[Rollout], dict[int, str]]:
    """Validates a request and converts its rollouts; raises RequestRejected for what spoils the whole
    request (too many rollouts, a bad item timeout, duplicate ids). A rollout that is unusable on its
    own (a completion over the limit, a field that does not convert) comes back in the second value,
    index -> why, to be answered INVALID_ROLLOUT while the rest are scored."""
    bad = grpc.StatusCode.INVALID_ARGUMENT
    n = len(request.rollouts)
    if n > limits.max_rollouts_per_request:
        raise RequestRejected(bad, f"request {request.request_id!r} has {n} rollouts; the limit is "
                                   f"{limits.max_rollouts_per_request} (--max-rollouts-per-request): split it "
                                   "(RewardClient's chunk_size does)")
    t = request.item_timeout_s
    if not math.isfinite(t) or t < 0 or t > limits.max_item_timeout_s:
        raise RequestRejected(bad, f"item_timeout_s must be in [0, {limits.max_item_timeout_s}] "
                                   f"(0 = server default; --max-item-timeout-s raises it), got {t}")
    check_ids((m.id for m in request.rollouts), "rollout")
    rollouts: list[Rollout] = []
    invalid: dict[int, str] = {}
    for i, m in enumerate(request.rollouts):
        if len(m.completion) > limits.max_completion_chars:
            invalid[i] = (f"rollout {m.id!r} has a completion of {len(m.completion)} characters; the limit is "
                          f"{limits.max_completion_chars} (--max-completion-chars)")
            rollouts.append(Rollout(id=m.id, task=m.task, completion="", group_id=m.group_id))
            continue
        try:
            rollouts.append(convert.rollout_from_proto(m))
        except (InvalidRollout, ValueError) as exc:
            invalid[i] = f"rollout {m.id!r}: {exc}"
            rollouts.append(Rollout(id=m.id, task=m.task, completion="", group_id=m.group_id))
    return rollouts, invalid


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    """Runs ``fn(*args)`` on ``loop`` from a pool thread; once the loop is closed nobody waits: drop it."""
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the server stopped while this batch was finishing
        logger.debug("result of a call that ended with the server dropped")


def log_slow_items(results, limit_s: float) -> None:
    """One warning per rollout that timed out or took more than SLOW_ITEM_SHARE of its limit."""
    for r in results:
        if r.status == RolloutStatus.TIMEOUT or r.elapsed_ms > SLOW_ITEM_SHARE * limit_s * 1000.0:
            logger.warning("slow item: task %s rollout %r took %.0f ms (limit %.1f s), status %s",
                           r.task, r.id, r.elapsed_ms, limit_s, r.status.name)


def _client_id(context: grpc.aio.ServicerContext) -> str:
    return client_id_of(context.invocation_metadata() or (), context.peer() or "")


class RewardServicer:
    """Score, ScoreStream and ListTasks over one Scorer (coroutines on the server's loop)."""

    def __init__(self, scorer: Scorer, limits: RequestLimits, metrics: RewardMetrics) -> None:
        self._scorer = scorer
        self._limits = limits
        self._metrics = metrics
        self.draining = False
        self.active_calls = 0
        self.open_streams = 0
        self._flush = asyncio.Event()

    # --- shutdown -------------------------------------------------------------------------
    def begin_drain(self) -> None:
        """New calls are refused UNAVAILABLE from now on; calls in flight go on."""
        self.draining = True

    def flush(self) -> None:
        """Every waiting call answers now (verified rollouts scored, the rest UNAVAILABLE)."""
        self._flush.set()
        dropped = self._scorer.drop_queued()
        logger.info("handing back %d call(s) in flight; %d queued job(s) dropped", self.active_calls, dropped)

    def on_malformed(self, method: str) -> None:
        """Counts a request the server shell rejected before it reached this servicer."""
        self._metrics.observe_error(method, grpc.StatusCode.INVALID_ARGUMENT.name)

    # --- shared steps ---------------------------------------------------------------------
    def _submit(self, request: pb.ScoreRequest, client: str) -> PendingBatch:
        if self.draining:
            raise RequestRejected(grpc.StatusCode.UNAVAILABLE, "server is draining; retry on another replica")
        rollouts, invalid = parse_request(request, self._limits)
        try:
            return self._scorer.submit(rollouts, request.request_id, request.item_timeout_s, client, invalid=invalid)
        except QueueFullError as exc:
            raise RequestRejected(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc), exc.retry_after_ms) from None

    async def _abort(self, context: grpc.aio.ServicerContext, method: str, exc: RequestRejected) -> None:
        self._metrics.observe_error(method, exc.code.name)
        await context.abort(exc.code, str(exc), trailing_metadata=exc.trailing_metadata())

    def _answer(self, method: str, batch: PendingBatch, unfinished: str = "") -> pb.ScoreResponse:
        if self._flush.is_set():  # handing back: whatever was dropped is retryable, not an error
            unfinished = unfinished or SHUTDOWN_REASON
        result = batch.result(unfinished)
        self._metrics.observe_batch(method, result)
        with request_context(batch.request_id, batch.client_id):
            log_slow_items(result.results, batch.timeout_s)
        return convert.batch_to_proto(result)

    @staticmethod
    def _done_future(batch: PendingBatch) -> asyncio.Future:
        """An asyncio future that resolves (on this loop) once every item of ``batch`` is done."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def resolve(_: PendingBatch) -> None:
            if not done.done():
                done.set_result(None)
        batch.add_done_callback(lambda b: _call_soon(loop, resolve, b))
        return done

    async def _wait(self, done: asyncio.Future, seconds: float) -> Literal["done", "flush", "timeout"]:
        flush = asyncio.ensure_future(self._flush.wait())
        try:
            finished, _ = await asyncio.wait({done, flush}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            flush.cancel()
        if done in finished:
            return "done"
        return "flush" if flush in finished else "timeout"

    # --- Score ----------------------------------------------------------------------------
    async def Score(self, request: pb.ScoreRequest, context: grpc.aio.ServicerContext) -> pb.ScoreResponse:
        self.active_calls += 1
        try:
            with request_context(request.request_id, _client_id(context)), \
                    unexpected_as_internal(f"request {request.request_id!r}"):
                return await self._score(request, context)
        except RequestRejected as exc:
            await self._abort(context, "Score", exc)
        finally:
            self.active_calls -= 1

    async def _score(self, request: pb.ScoreRequest, context: grpc.aio.ServicerContext) -> pb.ScoreResponse:
        batch = self._submit(request, _client_id(context))
        budget = wait_budget(context, self._limits.max_call_s)
        try:
            how = await self._wait(self._done_future(batch), budget.seconds)
        except asyncio.CancelledError:  # the client cancelled or its deadline passed
            batch.cancel()
            raise
        if how == "timeout":
            batch.cancel()
            raise budget.expired(f"rollouts of request {request.request_id!r} still being verified",
                                 "send smaller batches")
        return self._answer("Score", batch, SHUTDOWN_REASON if how == "flush" else "")

    # --- ScoreStream ----------------------------------------------------------------------
    async def ScoreStream(self, requests: AsyncIterator[pb.ScoreRequest],
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.ScoreResponse]:
        """Answers each request as soon as its rollouts are done (not in request order).

        A rejected request, or a failure of the server itself, cancels what is pending and
        ends the stream with that status: the stream never ends OK with a request unanswered.
        """
        if self.open_streams >= self._limits.max_streams:
            await self._abort(context, "ScoreStream", RequestRejected(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.open_streams} streams are open; the limit is {self._limits.max_streams} (--max-streams): "
                "share a stream between calls, or retry later", retry_after_ms=1000))
            return
        self.open_streams += 1
        self.active_calls += 1
        self._metrics.stream_opened()
        stream = _StreamState(self._limits.max_stream_pending)
        reader = asyncio.create_task(self._read_stream(requests, stream, _client_id(context)))
        try:
            async for response in self._stream_responses(stream):
                yield response
        except RequestRejected as exc:
            await self._abort(context, "ScoreStream", exc)
        finally:
            reader.cancel()
            for batch in list(stream.pending):
                batch.cancel()
            self.open_streams -= 1
            self.active_calls -= 1
            self._metrics.stream_closed()

    async def _stream_responses(self, stream: _StreamState) -> AsyncIterator[pb.ScoreResponse]:
        outstanding, reading = 0, True
        flush = asyncio.ensure_future(self._flush.wait())
        try:
            while reading or outstanding:
                get = asyncio.ensure_future(stream.events.get())
                finished, _ = await asyncio.wait({get, flush}, return_when=asyncio.FIRST_COMPLETED)
                if get not in finished:
                    get.cancel()
                    for batch in list(stream.pending):
                        stream.pending.discard(batch)
                        yield self._answer("ScoreStream", batch, SHUTDOWN_REASON)
                    if reading:
                        raise RequestRejected(grpc.StatusCode.UNAVAILABLE,
                                              "server is shutting down: every request read so far is answered; "
                                              "send the rest again (any replica)")
                    return
                kind, value = get.result()
                if kind == "submitted":
                    outstanding += 1
                elif kind == "done":
                    outstanding -= 1
                    if value in stream.pending:
                        stream.pending.discard(value)
                        with unexpected_as_internal(f"request {value.request_id!r}"):
                            response = self._answer("ScoreStream", value)
                        yield response
                    stream.slots.release()
                elif kind == "rejected":
                    raise value
                else:  # "eof"
                    reading = False
        finally:
            flush.cancel()

    async def _read_stream(self, requests: AsyncIterator[pb.ScoreRequest], stream: _StreamState,
                           client: str) -> None:
        """Submits each request as it arrives, reading the next only when a slot is free."""
        loop = asyncio.get_running_loop()
        last = None
        try:
            while True:
                await stream.slots.acquire()
                try:
                    request = await anext(requests)
                except StopAsyncIteration:
                    break
                last = request.request_id
                with request_context(request.request_id, client), \
                        unexpected_as_internal(f"request {request.request_id!r}"):
                    batch = self._submit(request, client)
                stream.pending.add(batch)
                stream.events.put_nowait(("submitted", batch))
                batch.add_done_callback(lambda b: _call_soon(loop, stream.events.put_nowait, ("done", b)))
        except RequestRejected as exc:
            stream.events.put_nowait(("rejected", exc))
        except asyncio.CancelledError:
            raise
        except grpc.aio.AioRpcError:  # the client cancelled or the stream broke
            logger.debug("score stream ended by the client")
        except Exception as exc:  # noqa: BLE001 -- reading the stream failed: end it loudly
            where = "the first request" if last is None else f"the request after {last!r}"
            stream.events.put_nowait(("rejected", internal_error(f"reading {where}", exc)))
        stream.events.put_nowait(("eof", None))

    # --- ListTasks ------------------------------------------------------------------------
    async def ListTasks(self, request: pb.ListTasksRequest,
                        context: grpc.aio.ServicerContext) -> pb.ListTasksResponse:
        # Off the event loop: the first call hashes every task's code and data (its verifier version).
        infos = await asyncio.to_thread(self._scorer.list_tasks)
        return pb.ListTasksResponse(tasks=[convert.task_info_to_proto(t) for t in infos])


class _StreamState:
    """One stream's requests being scored, their completion events, and its flow-control slots."""

    def __init__(self, max_pending: int) -> None:
        self.pending: set[PendingBatch] = set()
        self.events: asyncio.Queue = asyncio.Queue()
        self.slots = asyncio.Semaphore(max_pending)
