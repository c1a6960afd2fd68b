"""The RewardModelService servicer (``grpc.aio``): validates requests, encodes pairs, awaits the batcher.

Whole-request problems answer with a status code (see ``proto/reward/v1/reward_model.proto``):
INVALID_ARGUMENT (malformed, over a limit, empty or duplicate ids: see ``request_limits``),
UNAVAILABLE (loading, draining), RESOURCE_EXHAUSTED (the batching queue is full: back off),
DEADLINE_EXCEEDED / CANCELLED (the call ended first; its queued pairs are dropped, never run),
INTERNAL (a failed forward pass); PERMISSION_DENIED for a Reload outside the checkpoint root.

The servicer's coroutines, named like the RPCs, are registered on the server shell
(``reward_core.server_shell``), which decodes each request (a malformed one is answered
INVALID_ARGUMENT there). Each coroutine records its call's status and latency in the metrics
before the status is sent. Nothing here holds a thread while it waits: a Score call awaits the
batcher's completion (which wakes the loop), tokenization and Reload's load run on the loop's
thread pool, so health checks and other calls are answered meanwhile.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import grpc
import grpc.aio
from google.protobuf.message import Message

from reward.v1 import reward_model_pb2 as pb
from reward_core.grpc_common import RequestRejected, WaitBudget, unexpected_as_internal, wait_budget
from reward_core.micro_batch import MicroBatcher
from reward_core.rm_inputs import EncodedPair
from reward_core.server_shell import run_blocking
from reward_service.rm.checkpoint import CheckpointError, LoadedRewardModel
from reward_service.rm.dynamic_batcher import (
    BatcherClosed,
    BatcherConfig,
    DynamicBatcher,
    ForwardPassError,
    PendingScores,
    QueueFull,
)
from reward_service.rm.model_holder import ModelHolder, ModelNotReady, ReloadInProgress
from reward_service.rm.prm_checkpoint import LoadedPrm
from reward_service.rm.request_limits import (
    RequestLimits,
    check_message_size,
    validate_score_request,
    validate_step_request,
)
from reward_service.rm.rm_metrics import RewardModelMetrics

logger = logging.getLogger(__name__)

SERVICE = pb.DESCRIPTOR.services_by_name["RewardModelService"]
SERVICE_NAME = SERVICE.full_name

#: grpc.aio cancels a handler both when its client cancels and when the call's deadline passes
#: (the client's copy of the deadline, which started before the request was sent, ends first and
#: resets the stream); a call cancelled with less than this left of its deadline is counted
#: DEADLINE_EXCEEDED, any other CANCELLED.
DEADLINE_SLACK_S = 1.0

#: The ``grpc-retry-pushback-ms`` hint sent with RESOURCE_EXHAUSTED (batching queue full).
QUEUE_FULL_RETRY_MS = 500

Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)
def checkpoint_under_root(path: str, root: Path) -> Path:
    """``path`` resolved (symlinks, ``..``); raises RequestRejected (PERMISSION_DENIED) when it is not
    ``root`` itself or inside it. ``root`` must already be resolved."""
    try:
        resolved = Path(path).resolve()
    except (ValueError, OSError, RuntimeError) as exc:  # a NUL byte, a symlink loop
        raise RequestRejected(grpc.StatusCode.INVALID_ARGUMENT,
                              f"checkpoint_path {path!r} is unusable: {exc}") from None
    if resolved != root and root not in resolved.parents:
        raise RequestRejected(grpc.StatusCode.PERMISSION_DENIED,
                              f"{path} is outside this server's checkpoint root {root}; Reload loads only "
                              "checkpoints under it (start the server with --checkpoint-root to allow another)")
    return resolved


class RewardModelServicer:
    """Score, Reload and Info over a ModelHolder and a DynamicBatcher; Reload loads only under ``checkpoint_root``.

    Coroutines on the server's loop; each answers a RequestRejected raised inside it with its status.
    """

    def __init__(self, holder: ModelHolder, batcher: DynamicBatcher, limits: RequestLimits,
                 checkpoint_root: Path, metrics: RewardModelMetrics | None = None) -> None:
        self._holder = holder
        self._checkpoint_root = checkpoint_root.resolve()
        self._batcher = batcher
        self._limits = limits
        self._metrics = metrics or RewardModelMetrics()
        self.draining = threading.Event()
        # step scoring: concurrent ScoreSteps calls merged into shared forward passes
        self._step_batcher: MicroBatcher = MicroBatcher(_score_steps_batch, max_items=64, max_wait_s=0.005)

    # --- the RPCs -------------------------------------------------------------------------------

    def on_malformed(self, method: str) -> None:
        """Counts a request the server shell rejected (malformed or too large) before it got here."""
        self._metrics.observe_call(method, grpc.StatusCode.INVALID_ARGUMENT.name, 0.0)

    async def Score(self, request: pb.RewardModelRequest, context: grpc.aio.ServicerContext) -> pb.RewardModelResponse:
        return await self._observed("Score", self._score, request, context)

    async def Reload(self, request: pb.ReloadRequest, context: grpc.aio.ServicerContext) -> pb.ReloadResponse:
        return await self._observed("Reload", self._reload, request, context)

    async def Info(self, request: pb.InfoRequest, context: grpc.aio.ServicerContext) -> pb.InfoResponse:
        return await self._observed("Info", self._info, request, context)

    async def ScoreSteps(self, request: pb.StepScoreRequest,
                         context: grpc.aio.ServicerContext) -> pb.StepScoreResponse:
        return await self._observed("ScoreSteps", self._score_steps, request, context)

    async def _observed(self, name: str, method: Callable[[Req, grpc.aio.ServicerContext], Awaitable[Resp]],
                        request: Req, context: grpc.aio.ServicerContext) -> Resp:
        """Runs ``method``, answers its RequestRejected, and records the call's status and latency
        (before the status is sent: a caller that has its answer sees it counted)."""
        start = time.perf_counter()
        try:
            with unexpected_as_internal(name):
                check_message_size(request, self._limits)
                response = await method(request, context)
        except RequestRejected as exc:
            self._metrics.observe_call(name, exc.code.name, time.perf_counter() - start)
            await context.abort(exc.code, str(exc), trailing_metadata=exc.trailing_metadata())
            raise AssertionError("unreachable: context.abort raises") from None
        except asyncio.CancelledError:  # the client cancelled, its deadline passed, or the server stopped
            self._metrics.observe_call(name, _ended_code(context).name, time.perf_counter() - start)
            raise
        self._metrics.observe_call(name, grpc.StatusCode.OK.name, time.perf_counter() - start)
        return response

    # --- Score ----------------------------------------------------------------------------------

    def _model(self) -> LoadedRewardModel:
        if self.draining.is_set():
            raise RequestRejected(grpc.StatusCode.UNAVAILABLE, "server is draining; retry on another replica")
        try:
            return self._holder.current()
        except ModelNotReady as exc:
            raise RequestRejected(grpc.StatusCode.UNAVAILABLE, str(exc)) from None

    async def _score(self, request: pb.RewardModelRequest,
                     context: grpc.aio.ServicerContext) -> pb.RewardModelResponse:
        validate_score_request(request, self._limits)
        model = self._model()
        if isinstance(model, LoadedPrm):
            raise RequestRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                  f"this server holds a process reward model ({model.path}): call ScoreSteps "
                                  "with the completion's steps, or serve a Bradley-Terry checkpoint for Score")
        pairs = await run_blocking(_encode_all, model, request.items)  # CPU work: off the loop
        scores = await self._wait(self._submit(model, pairs), context)
        meta = model.metadata
        results = [pb.RewardModelResult(id=item.id, score=s, normalized_score=meta.normalize(s),
                                        truncated=pair.truncated, num_tokens=len(pair.input_ids))
                   for item, pair, s in zip(request.items, pairs, scores)]
        self._metrics.observe_scored(len(results), sum(1 for pair in pairs if pair.truncated))
        return pb.RewardModelResponse(results=results, checkpoint=model.path)

    def _submit(self, model: LoadedRewardModel, pairs: list[EncodedPair]) -> PendingScores:
        try:
            return self._batcher.submit(model, pairs)
        except QueueFull as exc:
            raise RequestRejected(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc),
                                  retry_after_ms=QUEUE_FULL_RETRY_MS) from None
        except BatcherClosed as exc:
            raise RequestRejected(grpc.StatusCode.UNAVAILABLE, str(exc)) from None

    async def _wait(self, pending: PendingScores, context: grpc.aio.ServicerContext) -> list[float]:
        """Awaits ``pending`` (no thread held) within the call's budget; a call that ends first --
        cancelled, expired, or the server stopping -- drops its queued pairs before re-raising."""
        budget = wait_budget(context, self._limits.max_call_s)
        done = _done_on_loop(pending)
        try:
            finished, _ = await asyncio.wait({done}, timeout=budget.seconds)
        except asyncio.CancelledError:
            pending.cancel()
            raise
        if not finished:
            pending.cancel()
            raise _expired(budget)
        try:
            return pending.result(0)
        except ForwardPassError as exc:
            raise RequestRejected(grpc.StatusCode.INTERNAL, f"reward model forward pass failed: {exc}") from None
        except BatcherClosed as exc:
            raise RequestRejected(grpc.StatusCode.UNAVAILABLE, str(exc)) from None
        except concurrent.futures.CancelledError:  # cancelled by someone else than this call: not expected
            raise RequestRejected(grpc.StatusCode.CANCELLED, "the call's pairs were dropped") from None

    # --- Reload and Info ------------------------------------------------------------------------

    async def _reload(self, request: pb.ReloadRequest, context: grpc.aio.ServicerContext) -> pb.ReloadResponse:
        path, outcome = request.checkpoint_path, "refused"
        try:
            if not path:
                raise RequestRejected(grpc.StatusCode.INVALID_ARGUMENT, "checkpoint_path is empty")
            if self.draining.is_set():
                raise RequestRejected(grpc.StatusCode.UNAVAILABLE, "server is draining; reload refused")
            resolved = checkpoint_under_root(path, self._checkpoint_root)
            try:  # a load takes seconds: on the loop's thread pool, so health and Score go on answering
                new, previous = await run_blocking(self._holder.reload, str(resolved))
            except ReloadInProgress as exc:
                raise RequestRejected(grpc.StatusCode.ABORTED, str(exc)) from None
            except CheckpointError as exc:
                outcome = "failed"
                serving = "no model" if not self._holder.loaded else self._holder.current().path
                raise RequestRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                      f"could not load {path}: {exc}; still serving {serving}") from None
        except RequestRejected as exc:
            self._metrics.observe_reload(outcome)
            logger.warning("Reload(%s) refused: %s", path, exc)
            raise
        self._metrics.observe_reload("ok")
        return pb.ReloadResponse(checkpoint=new.path, previous_checkpoint=previous.path if previous else "",
                                 load_seconds=new.load_seconds)

    async def _score_steps(self, request: pb.StepScoreRequest,
                           context: grpc.aio.ServicerContext) -> pb.StepScoreResponse:
        """Step scores from a PRM; concurrent calls share forward passes (micro-batched off the loop)."""
        validate_step_request(request, self._limits)
        model = self._model()
        if not isinstance(model, LoadedPrm):
            raise RequestRejected(grpc.StatusCode.FAILED_PRECONDITION,
                                  f"this server holds a Bradley-Terry reward model ({model.path}): ScoreSteps needs "
                                  "a process reward model checkpoint (trainer-client train-prm); use Score")
        items = [(model, item.prompt, list(item.steps)) for item in request.items]
        scores = await self._step_batcher.submit(items)
        tokens = await run_blocking(lambda: [model.num_tokens(item.prompt, list(item.steps)) for item in request.items])
        results = [pb.StepScoreResult(id=item.id, step_scores=[0.0 if s is None else s for s in row],
                                      scored=[s is not None for s in row], num_tokens=n)
                   for item, row, n in zip(request.items, scores, tokens)]
        self._metrics.observe_scored(len(results), sum(1 for row in scores if any(s is None for s in row)))
        return pb.StepScoreResponse(results=results, checkpoint=model.path)

    async def _info(self, request: pb.InfoRequest, context: grpc.aio.ServicerContext) -> pb.InfoResponse:
        try:
            model = self._holder.current()
        except ModelNotReady as exc:
            raise RequestRejected(grpc.StatusCode.UNAVAILABLE, str(exc)) from None
        if isinstance(model, LoadedPrm):
            return pb.InfoResponse(checkpoint=model.path, max_length=model.max_length,
                                   truncation=model.spec.truncation, device=model.device, dtype=model.dtype)
        config: BatcherConfig = self._batcher.config
        return pb.InfoResponse(
            checkpoint=model.path, max_length=model.max_length, truncation=model.metadata.truncation,
            device=model.device, dtype=model.dtype, reward_mean=model.metadata.mean,
            reward_std=model.metadata.std, max_batch_tokens=config.max_batch_tokens,
            max_wait_ms=config.max_wait_ms)


def _encode_all(model: LoadedRewardModel, items: Sequence[pb.RewardModelItem]) -> list[EncodedPair]:
    return [model.encode(item.prompt, item.completion) for item in items]


def _done_on_loop(pending: PendingScores) -> asyncio.Future:
    """An asyncio future of the running loop, resolved once ``pending`` is done (the batching
    thread hands the completion over with ``call_soon_threadsafe``)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def resolve() -> None:
        if not done.done():
            done.set_result(None)

    def wake(_: PendingScores) -> None:
        try:
            loop.call_soon_threadsafe(resolve)
        except RuntimeError:  # the loop is closed: the server stopped and nobody waits any more
            logger.debug("scores of a call that ended with the server dropped")

    pending.add_done_callback(wake)
    return done


def _ended_code(context: grpc.aio.ServicerContext) -> grpc.StatusCode:
    """How a call that grpc cancelled ended: at (or within DEADLINE_SLACK_S of) its deadline, or not."""
    remaining = context.time_remaining()
    if remaining is not None and remaining <= DEADLINE_SLACK_S:
        return grpc.StatusCode.DEADLINE_EXCEEDED
    return grpc.StatusCode.CANCELLED


def _expired(budget: WaitBudget) -> RequestRejected:
    return budget.expired("pairs not yet scored (dropped from the batching queue)", "send fewer pairs per call")


async def _score_steps_batch(items: list[tuple[LoadedPrm, str, list[str]]]) -> list[list[float | None]]:
    """One merged batch of ``(model, prompt, steps)``: each model's items in one call, off the loop."""
    def run() -> list[list[float | None]]:
        out: list[list[float | None] | None] = [None] * len(items)
        by_model: dict[int, list[int]] = {}
        for i, (model, _, _) in enumerate(items):
            by_model.setdefault(id(model), []).append(i)
        for indices in by_model.values():
            model = items[indices[0]][0]  # a reload may leave calls on the old model: each keeps its own
            for i, row in zip(indices, model.score_steps([(items[i][1], items[i][2]) for i in indices])):
                out[i] = row
        return [row or [] for row in out]
    return await run_blocking(run)
