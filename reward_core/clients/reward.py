"""Clients of the reward service: ``RewardClient`` (blocking) and ``AsyncRewardClient`` (asyncio).

Any trainer can use them::

    with RewardClient("localhost:50051", timeout_s=60) as client:
        groups = client.score_groups([[{"id": "p0-0", "task": "gsm8k", "completion": c, "reference": "72"}
                                        for c in completions]])
        rewards = groups[0].rewards          # None where unscored: mask, never treat as 0

Every call carries a deadline (``timeout_s``); large batches are split into
chunks (never splitting a group); results come back in input order; only
UNAVAILABLE is retried, by gRPC's own retry policy (see reward_core/channel_config.py). Rollouts a
server handed back unverified while shutting down (status UNAVAILABLE, per rollout) are
sent again, up to the channel's ``max_attempts`` (to any replica). Every call names its
client (``client_id``, default host and pid): servers queue and limit work per client.
For many replicas use a ``dns:///name:port`` target (round-robin over its addresses).
TLS and a bearer token: ``ChannelConfig(security=ClientSecurity(auth_token=..., tls_ca=...))``,
or the ``REWARD_SUITE_AUTH_TOKEN`` / ``REWARD_SUITE_TLS_CA`` environment variables.
A front end that relays requests as they are (the HTTP door) uses ``score_once``: one Score
call, no chunking and no resending.

The first call waits at most ``connect_timeout_s`` (default 10 s) for a connection; when nothing
answers it raises :class:`~reward_core.clients.errors.EndpointUnreachable` saying why (connection
refused, a name that does not resolve, no answer, not a gRPC port) instead of waiting out the
call's deadline. ``connect_timeout_s=None`` waits for the server as long as the deadline allows
(for a server that is still starting).

Once connected, ``timeout_s`` is one deadline for each request the client sends (a chunk of at most
``chunk_size`` rollouts) together with its resends. A server that goes away (draining on SIGTERM,
shut down) while no other replica is ready does not hold calls until their deadline: a call
started then raises :class:`~reward_core.clients.errors.ServerUnavailable` within seconds (after
the channel's few UNAVAILABLE retries), and rollouts a draining server handed back unverified that
no replica took stay unscored UNAVAILABLE, their ``error`` saying so. Other failed calls raise the
clients' own exceptions (:mod:`reward_core.clients.errors`), in our words: DEADLINE_EXCEEDED is
:class:`~reward_core.clients.errors.CallTimedOut` (naming ``timeout_s`` and what to change), a refusal
(INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAUTHENTICATED, ...) :class:`~reward_core.clients.errors.CallRejected`
(with what the server said), any other code :class:`~reward_core.clients.errors.CallFailed`. Each is also a
``grpc.RpcError`` whose ``code()`` and ``details()`` are the server's, and so is ServerUnavailable (``code()``
UNAVAILABLE).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import os
import socket
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence

import grpc

from reward.v1 import reward_pb2 as pb
from reward.v1 import reward_pb2_grpc
from reward_core import convert
from reward_core.channel_config import SERVICE, ChannelConfig
from reward_core.clients import connection
from reward_core.clients.batching import (
    GroupResult,
    RolloutLike,
    as_groups,
    as_rollouts,
    merge_batches,
    plan_chunks,
    split_groups,
)
from reward_core.clients.errors import rpc_details, typed_errors, unavailable_message
from reward_core.contract import Rollout, RolloutResult, ScoreBatchResult, TaskInfo, group_stats

__all__ = ["RewardClient", "AsyncRewardClient", "GroupResult"]


def default_client_id() -> str:
    """``host-pid``: one trainer process is one client for the server's fair sharing."""
    return f"{socket.gethostname()}-{os.getpid()}"


def retry_request(request: pb.ScoreRequest, batch: ScoreBatchResult, attempt: int) -> pb.ScoreRequest | None:
    """A request with the rollouts of ``request`` that ``batch`` answered retryable, or None."""
    again = {r.id for r in batch.results if r.status.retryable}
    if not again:
        return None
    return pb.ScoreRequest(request_id=f"{request.request_id}/retry{attempt}", item_timeout_s=request.item_timeout_s,
                           rollouts=[m for m in request.rollouts if m.id in again])


def left_unverified(batch: ScoreBatchResult, why: str) -> ScoreBatchResult:
    """``batch`` with the error of each rollout still answered retryable replaced by ``why``."""
    results = [dataclasses.replace(r, error=why) if r.status.retryable else r for r in batch.results]
    return dataclasses.replace(batch, results=results)


def with_retried(batch: ScoreBatchResult, retried: ScoreBatchResult) -> ScoreBatchResult:
    """``batch`` with the results of ``retried`` in place of the ones of the same ids."""
    by_id = {r.id: r for r in retried.results}
    results = [by_id.get(r.id, r) for r in batch.results]
    return ScoreBatchResult(batch.request_id, results, group_stats(results), batch.elapsed_ms + retried.elapsed_ms)


#: What to change, besides ``timeout_s``, when a call runs out of time.
_TIMEOUT_ADVICE = "send fewer rollouts per call (chunk_size)"


class _ClientBase:
    def __init__(self, endpoint: str, *, timeout_s: float, chunk_size: int, item_timeout_s: float,
                 channel: ChannelConfig | None, client_id: str = "",
                 connect_timeout_s: float | None = connection.CONNECT_TIMEOUT_S) -> None:
        if timeout_s <= 0 or chunk_size < 1 or item_timeout_s < 0:
            raise ValueError("need timeout_s > 0, chunk_size >= 1, item_timeout_s >= 0")
        self._init_connect(connect_timeout_s, "reward service")
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.chunk_size = chunk_size
        self.item_timeout_s = item_timeout_s
        self.channel_config = connection.channel_for(SERVICE, channel)
        # Leave headroom under the message limit for protobuf framing.
        self._max_chunk_bytes = self.channel_config.max_message_mb * 1024 * 1024 // 2
        self._ids = itertools.count()
        self.client_id = client_id or default_client_id()
        self._metadata = connection.call_metadata(self.client_id)

    def _requests(self, rollouts: Sequence[RolloutLike], request_id: str) -> list[pb.ScoreRequest]:
        chunks = plan_chunks(as_rollouts(rollouts), self.chunk_size, self._max_chunk_bytes)
        return [convert.score_request_to_proto(c, f"{request_id}/{i}", self.item_timeout_s)
                for i, c in enumerate(chunks)]

    def _new_id(self) -> str:
        return f"{uuid.uuid4().hex[:8]}-{next(self._ids)}"

    def _stream_request(self, rollouts: Sequence[RolloutLike]) -> pb.ScoreRequest:
        return convert.score_request_to_proto(as_rollouts(rollouts), self._new_id(), self.item_timeout_s)

    def _once_request(self, rollouts: Sequence[Rollout], request_id: str,
                      item_timeout_s: float | None) -> pb.ScoreRequest:
        timeout = self.item_timeout_s if item_timeout_s is None else item_timeout_s
        return convert.score_request_to_proto(rollouts, request_id or self._new_id(), timeout)

    def _typed_errors(self) -> contextlib.AbstractContextManager[None]:
        """A failed call as the clients' own exception (``typed_call_error``): UNAVAILABLE (no replica took
        the call: draining, shut down) as ServerUnavailable, DEADLINE_EXCEEDED as CallTimedOut, ..."""
        return typed_errors(self.endpoint, self.timeout_s, "reward service", _TIMEOUT_ADVICE)

    def _unverified_reason(self, exc: grpc.RpcError) -> str:
        return "not verified: " + unavailable_message(self.endpoint, rpc_details(exc), "reward service")


class RewardClient(_ClientBase, connection.BlockingChannelOwner):
    """Blocking client. Thread-safe: one instance can serve many threads."""

    def __init__(self, endpoint: str, *, timeout_s: float = 120.0, chunk_size: int = 1024,
                 item_timeout_s: float = 0.0, channel: ChannelConfig | None = None, client_id: str = "",
                 connect_timeout_s: float | None = connection.CONNECT_TIMEOUT_S) -> None:
        super().__init__(endpoint, timeout_s=timeout_s, chunk_size=chunk_size, item_timeout_s=item_timeout_s,
                         channel=channel, client_id=client_id, connect_timeout_s=connect_timeout_s)
        self._channel = self.channel_config.channel(endpoint)
        self._stub = reward_pb2_grpc.RewardServiceStub(self._channel)

    def _score(self, request: pb.ScoreRequest, timeout_s: float) -> ScoreBatchResult:
        return convert.batch_from_proto(self._stub.Score(request, timeout=timeout_s, metadata=self._metadata,
                                                         wait_for_ready=self._wait_for_ready))

    def _call(self, request: pb.ScoreRequest) -> ScoreBatchResult:
        """One Score call and the resends of what a draining server handed back, under one deadline."""
        self._ensure_connected()
        deadline = time.monotonic() + self.timeout_s
        with self._typed_errors():
            batch = self._score(request, self.timeout_s)
        for attempt in range(1, self.channel_config.max_attempts):
            again = retry_request(request, batch, attempt)
            left = deadline - time.monotonic()
            if again is None or left <= 0:
                break
            try:
                retried = self._score(again, left)
            except grpc.RpcError as exc:  # no replica took them: they stay answered UNAVAILABLE (unscored)
                return left_unverified(batch, self._unverified_reason(exc))
            batch = with_retried(batch, retried)
        return batch

    def score_batch(self, rollouts: Sequence[RolloutLike], request_id: str = "") -> ScoreBatchResult:
        """Scores rollouts (chunked); results in input order, with group statistics."""
        request_id = request_id or self._new_id()
        batches = [self._call(req) for req in self._requests(rollouts, request_id)]
        return merge_batches(request_id, batches)

    def score(self, rollouts: Sequence[RolloutLike]) -> list[RolloutResult]:
        """One result per rollout, in input order."""
        return self.score_batch(rollouts).results

    def score_groups(self, groups: Sequence[Sequence[RolloutLike]]) -> list[GroupResult]:
        """Scores groups (e.g. the G completions of each prompt); one GroupResult per group."""
        return split_groups(self.score_batch(as_groups(groups)))

    def stream(self, requests: Iterable[Sequence[RolloutLike]]) -> Iterator[ScoreBatchResult]:
        """Sends each item (e.g. a group) as it is produced; yields results as they are ready.

        Results may arrive in a different order than sent; match them by
        ``request_id`` or rollout ids. The whole stream has the ``timeout_s`` deadline.
        """
        self._ensure_connected()
        responses = self._stub.ScoreStream((self._stream_request(r) for r in requests), timeout=self.timeout_s,
                                           metadata=self._metadata, wait_for_ready=self._wait_for_ready)
        with self._typed_errors():
            for response in responses:
                yield convert.batch_from_proto(response)

    def score_once(self, rollouts: Sequence[Rollout], request_id: str = "",
                   item_timeout_s: float | None = None) -> ScoreBatchResult:
        """Exactly one Score call with ``rollouts`` as they are: no chunking, no duplicate-id check
        (the server answers INVALID_ARGUMENT), no resending of rollouts handed back unverified.

        For front ends that relay a request; ``item_timeout_s`` None: the client's. A failed call raises
        the clients' own exception (UNAVAILABLE: ServerUnavailable), each a ``grpc.RpcError`` with the
        server's ``code()`` and ``details()``, for the relay to answer with that code.
        """
        self._ensure_connected()
        request = self._once_request(rollouts, request_id, item_timeout_s)
        with self._typed_errors():
            return self._score(request, self.timeout_s)

    def list_tasks(self) -> list[TaskInfo]:
        """The server's tasks and composite rewards."""
        self._ensure_connected()
        with self._typed_errors():
            response = self._stub.ListTasks(pb.ListTasksRequest(), timeout=self.timeout_s, metadata=self._metadata,
                                            wait_for_ready=self._wait_for_ready)
        return [convert.task_info_from_proto(t) for t in response.tasks]


class AsyncRewardClient(_ClientBase, connection.AsyncChannelOwner):
    """asyncio client: chunks of one call are sent concurrently (up to ``max_concurrency``)."""

    def __init__(self, endpoint: str, *, timeout_s: float = 120.0, chunk_size: int = 1024,
                 item_timeout_s: float = 0.0, max_concurrency: int = 8,
                 channel: ChannelConfig | None = None, client_id: str = "",
                 connect_timeout_s: float | None = connection.CONNECT_TIMEOUT_S) -> None:
        super().__init__(endpoint, timeout_s=timeout_s, chunk_size=chunk_size, item_timeout_s=item_timeout_s,
                         channel=channel, client_id=client_id, connect_timeout_s=connect_timeout_s)
        self._channel = self.channel_config.aio_channel(endpoint)
        self._stub = reward_pb2_grpc.RewardServiceStub(self._channel)
        self._limit = asyncio.Semaphore(max_concurrency)

    async def _score(self, request: pb.ScoreRequest, timeout_s: float) -> ScoreBatchResult:
        return convert.batch_from_proto(await self._stub.Score(request, timeout=timeout_s, metadata=self._metadata,
                                                               wait_for_ready=self._wait_for_ready))

    async def _call(self, request: pb.ScoreRequest) -> ScoreBatchResult:
        await self._ensure_connected()
        async with self._limit:
            deadline = time.monotonic() + self.timeout_s
            with self._typed_errors():
                batch = await self._score(request, self.timeout_s)
            for attempt in range(1, self.channel_config.max_attempts):
                again = retry_request(request, batch, attempt)
                left = deadline - time.monotonic()
                if again is None or left <= 0:
                    break
                try:
                    retried = await self._score(again, left)
                except grpc.RpcError as exc:  # no replica took them: they stay answered UNAVAILABLE (unscored)
                    return left_unverified(batch, self._unverified_reason(exc))
                batch = with_retried(batch, retried)
            return batch

    async def score_batch(self, rollouts: Sequence[RolloutLike], request_id: str = "") -> ScoreBatchResult:
        request_id = request_id or self._new_id()
        batches = await asyncio.gather(*(self._call(r) for r in self._requests(rollouts, request_id)))
        return merge_batches(request_id, batches)

    async def score(self, rollouts: Sequence[RolloutLike]) -> list[RolloutResult]:
        return (await self.score_batch(rollouts)).results

    async def score_groups(self, groups: Sequence[Sequence[RolloutLike]]) -> list[GroupResult]:
        return split_groups(await self.score_batch(as_groups(groups)))

    async def stream(self, requests: AsyncIterable[Sequence[RolloutLike]]) -> AsyncIterator[ScoreBatchResult]:
        """Async counterpart of RewardClient.stream."""

        async def outgoing() -> AsyncIterator[pb.ScoreRequest]:
            async for rollouts in requests:
                yield self._stream_request(rollouts)

        await self._ensure_connected()
        call = self._stub.ScoreStream(outgoing(), timeout=self.timeout_s, metadata=self._metadata,
                                      wait_for_ready=self._wait_for_ready)
        with self._typed_errors():
            async for response in call:
                yield convert.batch_from_proto(response)

    async def score_once(self, rollouts: Sequence[Rollout], request_id: str = "",
                         item_timeout_s: float | None = None) -> ScoreBatchResult:
        """Async counterpart of RewardClient.score_once (not bounded by ``max_concurrency``)."""
        await self._ensure_connected()
        request = self._once_request(rollouts, request_id, item_timeout_s)
        with self._typed_errors():
            return await self._score(request, self.timeout_s)

    async def list_tasks(self) -> list[TaskInfo]:
        await self._ensure_connected()
        with self._typed_errors():
            response = await self._stub.ListTasks(pb.ListTasksRequest(), timeout=self.timeout_s,
                                                  metadata=self._metadata, wait_for_ready=self._wait_for_ready)
        return [convert.task_info_from_proto(t) for t in response.tasks]
