"""Clients of the reward-model service (``reward-service serve-rm``): ``RewardModelClient``
(blocking) and ``AsyncRewardModelClient`` (asyncio).

    with RewardModelClient("rm-host:50052", timeout_s=30) as rm:
        reply = rm.score([("What is 2+2?", "4"), ("What is 2+2?", "5")])
        rewards = [r.normalized_score for r in reply.results]       # request order
        steps = rm.score_steps([("What is 2+2?", ["2+2 = 4.", "The answer is 4."])])   # a PRM server

Answers are the dataclasses of :mod:`reward_core.rm_contract`. Items travel with positional
ids; an answer whose results are missing or out of order raises
:class:`~reward_core.rm_contract.RewardModelReplyError`. A failed call raises the clients' own
exceptions (:mod:`reward_core.clients.errors`), each also a ``grpc.RpcError`` whose ``code()`` and
``details()`` are the server's: :class:`~reward_core.clients.errors.CallRejected` for a refusal
(INVALID_ARGUMENT for too many items, RESOURCE_EXHAUSTED, FAILED_PRECONDITION for ``score`` on a PRM
server or ``score_steps`` on a Bradley-Terry one), :class:`~reward_core.clients.errors.CallTimedOut` for
DEADLINE_EXCEEDED (naming ``timeout_s``), :class:`~reward_core.clients.errors.CallFailed` for other codes.
UNAVAILABLE (loading or draining) is retried by the channel's own retry policy (``ChannelConfig``), up to
``max_attempts``, then raised as :class:`~reward_core.clients.errors.ServerUnavailable`. Once connected, a
call made while no replica is ready fails within the retries' backoffs instead of waiting out ``timeout_s``.
The server merges concurrent calls into batches, so small calls cost little.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from reward.v1 import reward_model_pb2 as pb
from reward.v1 import reward_model_pb2_grpc
from reward_core.channel_config import REWARD_MODEL_SERVICE, ChannelConfig
from reward_core.clients import connection
from reward_core.clients.errors import typed_errors
from reward_core.rm_contract import (
    PairScore,
    ReloadReply,
    RewardModelInfo,
    RewardModelReplyError,
    ScoreReply,
    ScoreStepsReply,
    StepScores,
)

__all__ = ["AsyncRewardModelClient", "RewardModelClient"]

#: (prompt, completion)
Pair = tuple[str, str]
#: (prompt, the completion's steps in order)
StepsItem = tuple[str, Sequence[str]]

#: What to change, besides ``timeout_s``, when a call runs out of time.
_TIMEOUT_ADVICE = "send fewer items per call"


def _score_request(pairs: Sequence[Pair]) -> pb.RewardModelRequest:
    return pb.RewardModelRequest(items=[pb.RewardModelItem(id=str(i), prompt=prompt, completion=completion)
                                        for i, (prompt, completion) in enumerate(pairs)])


def _steps_request(items: Sequence[StepsItem]) -> pb.StepScoreRequest:
    return pb.StepScoreRequest(items=[pb.StepScoreItem(id=str(i), prompt=prompt, steps=list(steps))
                                      for i, (prompt, steps) in enumerate(items)])


def _check_order(endpoint: str, ids: Sequence[str], sent: int) -> None:
    if list(ids) != [str(i) for i in range(sent)]:
        raise RewardModelReplyError(f"reward model at {endpoint} answered {len(ids)} results out of order or "
                                    f"missing for {sent} items")


def _score_reply(endpoint: str, msg: pb.RewardModelResponse, sent: int) -> ScoreReply:
    _check_order(endpoint, [r.id for r in msg.results], sent)
    return ScoreReply(tuple(PairScore(r.score, r.normalized_score, r.truncated, r.num_tokens) for r in msg.results),
                      msg.checkpoint)


def _steps_reply(endpoint: str, msg: pb.StepScoreResponse, sent: int) -> ScoreStepsReply:
    _check_order(endpoint, [r.id for r in msg.results], sent)
    return ScoreStepsReply(tuple(StepScores(tuple(r.step_scores), tuple(r.scored), r.num_tokens) for r in msg.results),
                           msg.checkpoint)


def _info_reply(msg: pb.InfoResponse) -> RewardModelInfo:
    return RewardModelInfo(msg.checkpoint, msg.max_length, msg.truncation, msg.device, msg.dtype, msg.reward_mean,
                           msg.reward_std, msg.max_batch_tokens, msg.max_wait_ms)


def _reload_reply(msg: pb.ReloadResponse) -> ReloadReply:
    return ReloadReply(msg.checkpoint, msg.previous_checkpoint, msg.load_seconds)


class _Base:
    def __init__(self, endpoint: str, timeout_s: float, channel: ChannelConfig | None, client_id: str,
                 connect_timeout_s: float | None) -> None:
        if not endpoint:
            raise ValueError("endpoint is empty: give the host:port of a `reward-service serve-rm` server")
        self._init_connect(connect_timeout_s, "reward-model service")  # from the channel owner
        self.endpoint = endpoint
        self.timeout_s = connection.check_timeout(timeout_s)
        self.channel_config = connection.channel_for(REWARD_MODEL_SERVICE, channel)
        self.client_id = client_id
        self._metadata = connection.call_metadata(client_id)

    def _deadline(self, timeout_s: float | None) -> float:
        return self.timeout_s if timeout_s is None else connection.check_timeout(timeout_s)

    def _call_options(self, timeout_s: float | None = None) -> dict[str, Any]:
        """A call's deadline (``timeout_s`` None: the client's), metadata and ``wait_for_ready`` (False once
        connected: fail fast)."""
        return {"timeout": timeout_s or self.timeout_s, "metadata": self._metadata,
                "wait_for_ready": self._wait_for_ready}

    def _typed_errors(self, timeout_s: float | None = None) -> contextlib.AbstractContextManager[None]:
        """A failed call as the clients' own exception (UNAVAILABLE as ServerUnavailable)."""
        return typed_errors(self.endpoint, timeout_s or self.timeout_s, "reward-model service", _TIMEOUT_ADVICE)


class RewardModelClient(_Base, connection.BlockingChannelOwner):
    """Blocking client of a RewardModelService. Thread-safe; ``close()`` closes its channel.

    ``timeout_s`` is every call's deadline (``reload`` may take its own); ``client_id``, when
    given, names the caller in each call's metadata. The first call waits at most
    ``connect_timeout_s`` for a connection, then raises EndpointUnreachable saying why (None: no check).
    """

    def __init__(self, endpoint: str, *, timeout_s: float = 30.0, channel: ChannelConfig | None = None,
                 client_id: str = "", connect_timeout_s: float | None = connection.CONNECT_TIMEOUT_S) -> None:
        super().__init__(endpoint, timeout_s, channel, client_id, connect_timeout_s)
        self._channel = self.channel_config.channel(endpoint)
        self._stub = reward_model_pb2_grpc.RewardModelServiceStub(self._channel)

    def score(self, pairs: Sequence[Pair]) -> ScoreReply:
        """The reward model's score of each (prompt, completion) pair, in order."""
        self._ensure_connected()
        with self._typed_errors():
            reply = self._stub.Score(_score_request(pairs), **self._call_options())
        return _score_reply(self.endpoint, reply, len(pairs))

    def score_steps(self, items: Sequence[StepsItem]) -> ScoreStepsReply:
        """A process reward model's P(step is correct) for each step of each (prompt, steps) item."""
        self._ensure_connected()
        with self._typed_errors():
            reply = self._stub.ScoreSteps(_steps_request(items), **self._call_options())
        return _steps_reply(self.endpoint, reply, len(items))

    def info(self) -> RewardModelInfo:
        """The checkpoint being served and the server's settings."""
        self._ensure_connected()
        with self._typed_errors():
            reply = self._stub.Info(pb.InfoRequest(), **self._call_options())
        return _info_reply(reply)

    def reload(self, checkpoint_path: str, timeout_s: float | None = None) -> ReloadReply:
        """Loads another checkpoint (a path on the server) without a restart; ``timeout_s`` None: the client's."""
        self._ensure_connected()
        deadline = self._deadline(timeout_s)
        with self._typed_errors(deadline):
            request = pb.ReloadRequest(checkpoint_path=checkpoint_path)
            reply = self._stub.Reload(request, **self._call_options(deadline))
        return _reload_reply(reply)


class AsyncRewardModelClient(_Base, connection.AsyncChannelOwner):
    """asyncio client of a RewardModelService: the methods of :class:`RewardModelClient`, awaitable.

    Create it inside the event loop that uses it.
    """

    def __init__(self, endpoint: str, *, timeout_s: float = 30.0, channel: ChannelConfig | None = None,
                 client_id: str = "", connect_timeout_s: float | None = connection.CONNECT_TIMEOUT_S) -> None:
        super().__init__(endpoint, timeout_s, channel, client_id, connect_timeout_s)
        self._channel = self.channel_config.aio_channel(endpoint)
        self._stub = reward_model_pb2_grpc.RewardModelServiceStub(self._channel)

    async def score(self, pairs: Sequence[Pair]) -> ScoreReply:
        await self._ensure_connected()
        with self._typed_errors():
            reply = await self._stub.Score(_score_request(pairs), **self._call_options())
        return _score_reply(self.endpoint, reply, len(pairs))

    async def score_steps(self, items: Sequence[StepsItem]) -> ScoreStepsReply:
        await self._ensure_connected()
        with self._typed_errors():
            reply = await self._stub.ScoreSteps(_steps_request(items), **self._call_options())
        return _steps_reply(self.endpoint, reply, len(items))

    async def info(self) -> RewardModelInfo:
        await self._ensure_connected()
        with self._typed_errors():
            reply = await self._stub.Info(pb.InfoRequest(), **self._call_options())
        return _info_reply(reply)

    async def reload(self, checkpoint_path: str, timeout_s: float | None = None) -> ReloadReply:
        await self._ensure_connected()
        deadline = self._deadline(timeout_s)
        with self._typed_errors(deadline):
            request = pb.ReloadRequest(checkpoint_path=checkpoint_path)
            reply = await self._stub.Reload(request, **self._call_options(deadline))
        return _reload_reply(reply)
