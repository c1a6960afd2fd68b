"""The SandboxService servicer (``grpc.aio``): validates requests, runs them on the executor, answers in order.

Whole-request problems abort with a status code (see ``proto/reward/v1/sandbox.proto``):
INVALID_ARGUMENT (a malformed message -- answered by the server shell,
``reward_core/server_shell.py`` --, unknown language, no tests, a missing entry point,
bad limits or limits above this server's caps -- the message names the limit, the value
and the flag that raises the cap, see ``sandbox/request_limits.py`` --, malformed case
JSON, duplicate ids, too many programs), RESOURCE_EXHAUSTED (too many executions queued),
UNAVAILABLE (draining), DEADLINE_EXCEEDED, CANCELLED. Whatever the *code* does is a
verdict in its result, never an error of the call.

``ListLanguages`` answers what :mod:`sandbox.language_list` reports (availability from the language
table, versions from the executor), computed on the first call and cached. A request in a language
the table knows but cannot run here (:class:`~reward_core.sandbox_contract.UnsupportedLanguage`) is
INVALID_ARGUMENT whose details start with ``UNSUPPORTED_LANGUAGE:`` and say what to install.

Handlers are coroutines on the server's event loop: a call waiting for its programs holds
no thread, so health checks answer however many calls wait. Every program of every call
goes through one FIFO pool of ``concurrency`` threads (one per executor slot), so calls
share the sandbox fairly and the queue length is known. When a call ends early (the client
cancelled it or its deadline passed: grpc.aio cancels the handler; or this server's
``max_call_s`` passed) its programs not started are dropped and its running ones are
killed: the call's :class:`~reward_core.sandbox_contract.Cancellation` reaches the executor, whose
backend kills the program's sandbox. A program's limits count from when it starts, never
from when it was queued.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

import grpc
import grpc.aio

from reward.v1 import sandbox_pb2 as pb
from reward_core import sandbox_convert as convert
from reward_core.grpc_common import RequestRejected, unexpected_as_internal, wait_budget
from reward_core.sandbox_contract import (
    Cancellation,
    ExecutionRequest,
    ExecutionResult,
    Executor,
    InvalidExecutionRequest,
    LanguageInfo,
)
from reward_core.server_shell import run_blocking
from sandbox.language_list import executor_versions, language_infos
from sandbox.languages import Language, LanguageTable
from sandbox.request_limits import RequestLimits, parse_requests, validate_request
from sandbox.server_metrics import SandboxMetrics
from sandbox.verdict import sandbox_error

__all__ = ["RequestLimits", "SandboxServicer", "parse_requests", "validate_request"]

logger = logging.getLogger(__name__)

CANCELLED_ERROR = "not run: the call was cancelled or its deadline passed"


class SandboxServicer:
    """Execute and ExecuteBatch over one Executor (coroutines on the server's loop)."""

    def __init__(self, executor: Executor, languages: Mapping[str, Language], limits: RequestLimits,
                 concurrency: int, metrics: SandboxMetrics | None = None) -> None:
        self._executor = executor
        # a LanguageTable keeps its ``unavailable``: requests in those languages are UNSUPPORTED_LANGUAGE
        self._languages = languages if isinstance(languages, LanguageTable) else LanguageTable(languages.values())
        self._language_list: list[LanguageInfo] | None = None   # ListLanguages, computed once
        self._language_list_lock = threading.Lock()
        self._limits = limits
        self._pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="sandbox-exec")
        self._lock = threading.Lock()
        self._queued = 0
        self.metrics = metrics if metrics is not None else SandboxMetrics(self._languages, lambda: self._queued)
        self.draining = False
        self.active_calls = 0
        self._running_calls: set[Cancellation] = set()   # the calls with programs queued or running

    @property
    def queued(self) -> int:
        """Programs queued or running, over all calls."""
        return self._queued

    def on_malformed(self, method: str) -> None:
        """Counts a request the server shell rejected (malformed or too large) before it got here."""
        self.metrics.call(method, grpc.StatusCode.INVALID_ARGUMENT)

    def begin_drain(self) -> None:
        """New calls are refused UNAVAILABLE from now on; calls in flight go on."""
        self.draining = True

    # -- entry points ------------------------------------------------------------------------------
    async def Execute(self, request: pb.ExecutionRequest, context: grpc.aio.ServicerContext) -> pb.ExecutionResult:
        return (await self._serve("Execute", [request], context))[0]

    async def ExecuteBatch(self, request: pb.ExecuteBatchRequest,
                           context: grpc.aio.ServicerContext) -> pb.ExecuteBatchResponse:
        return pb.ExecuteBatchResponse(results=await self._serve("ExecuteBatch", request.requests, context))

    async def ListLanguages(self, request: pb.ListLanguagesRequest,
                            context: grpc.aio.ServicerContext) -> pb.ListLanguagesResponse:
        try:
            with unexpected_as_internal("listing languages"):
                infos = await run_blocking(self.language_list)  # version commands run once: off the loop
        except RequestRejected as exc:
            self.metrics.call("ListLanguages", exc.code)
            await context.abort(exc.code, str(exc))
        self.metrics.call("ListLanguages", grpc.StatusCode.OK)
        return pb.ListLanguagesResponse(languages=[convert.language_to_proto(i) for i in infos],
                                        backend=getattr(self._executor, "name", ""))

    def language_list(self) -> list[LanguageInfo]:
        """Every known language: available or why not, its toolchain's version (computed once)."""
        with self._language_list_lock:
            if self._language_list is None:
                versions = executor_versions(self._executor, self._languages)
                self._language_list = language_infos(self._languages, versions)
            return self._language_list

    async def _serve(self, method: str, msgs: Sequence[pb.ExecutionRequest],
                     context: grpc.aio.ServicerContext) -> list[pb.ExecutionResult]:
        """Runs one call's programs; records the call's status code however it ends.

        A rejection is counted before it is answered: ``context.abort`` sends the status at once,
        so a client (or a test scraping /metrics) may see it before this coroutine goes on.
        """
        self.active_calls += 1
        try:
            if self.draining:
                raise RequestRejected(grpc.StatusCode.UNAVAILABLE, "server is draining; retry on another replica")
            with unexpected_as_internal(f"running {len(msgs)} programs"):
                # validation parses check code: off the loop, so health and other calls are not held up
                requests = await run_blocking(parse_requests, msgs, self._languages, self._limits)
                results = await self._run(requests, context)
                answer = [convert.result_to_proto(r) for r in results]
        except RequestRejected as exc:
            self.metrics.call(method, exc.code)
            await context.abort(exc.code, str(exc), trailing_metadata=exc.trailing_metadata())
        except asyncio.CancelledError:   # the client cancelled, its deadline passed, or the server stopped
            self.metrics.call(method, _ended_code(context))
            raise
        finally:
            self.active_calls -= 1
        self.metrics.call(method, grpc.StatusCode.OK)
        return answer

    # -- running -----------------------------------------------------------------------------------
    async def _run(self, requests: list[ExecutionRequest],
                   context: grpc.aio.ServicerContext) -> list[ExecutionResult]:
        if not requests:
            return []
        cancel = Cancellation()
        futures = self._submit(requests, cancel)
        budget = wait_budget(context, self._limits.max_call_s)
        self._running_calls.add(cancel)
        try:
            _, not_done = await asyncio.wait([asyncio.wrap_future(fut) for fut in futures], timeout=budget.seconds)
        except asyncio.CancelledError:
            self._end(futures, cancel)
            raise
        finally:
            self._running_calls.discard(cancel)
        if not_done:
            self._end(futures, cancel)
            raise budget.expired(f"{len(not_done)} of {len(requests)} programs not finished",
                                 "send fewer programs per call")
        try:
            return [fut.result() for fut in futures]
        except CancelledError:   # a program dropped by the pool's shutdown
            raise RequestRejected(grpc.StatusCode.UNAVAILABLE,
                                  "server is shutting down; retry on another replica") from None
        except InvalidExecutionRequest as exc:  # the executor refused what validation let through
            raise RequestRejected(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None

    def _submit(self, requests: list[ExecutionRequest], cancel: Cancellation) -> list[Future]:
        """Queues a call's programs on the FIFO pool (RESOURCE_EXHAUSTED past ``max_queue``)."""
        self._reserve(len(requests))
        futures: list[Future] = []
        try:
            for request in requests:
                futures.append(self._pool.submit(self._execute_one, request, cancel))
                futures[-1].add_done_callback(lambda _: self._release(1))  # also when cancelled before starting
        except RuntimeError:  # the pool is shut down: the server is stopping
            self._release(len(requests) - len(futures))
            cancel.cancel()
            for fut in futures:
                fut.cancel()
            raise RequestRejected(grpc.StatusCode.UNAVAILABLE,
                                  "server is shutting down; retry on another replica") from None
        return futures

    def _end(self, futures: list[Future], cancel: Cancellation) -> None:
        """Ends a call early: drops its queued programs and kills its running ones."""
        queued = sum(1 for fut in futures if fut.cancel())
        running = sum(1 for fut in futures if not fut.done())
        self.metrics.cancelled_programs(queued, running)
        if not running:
            cancel.cancel()
            return
        try:  # killing a sandbox may block (the docker backend calls its API): not on the loop
            asyncio.get_running_loop().run_in_executor(None, cancel.cancel)
        except RuntimeError:  # the loop is shutting down: kill from here
            cancel.cancel()

    def _execute_one(self, request: ExecutionRequest, cancel: Cancellation) -> ExecutionResult:
        backend = getattr(self._executor, "name", "")
        if cancel.cancelled:
            return sandbox_error(request, CANCELLED_ERROR, backend)
        t0 = time.monotonic()
        try:
            result = self._executor.execute(request, cancel=cancel)
        except InvalidExecutionRequest:
            raise
        except Exception as exc:  # noqa: BLE001 -- a failing executor is a sandbox error, not a dead call
            logger.exception("executor failed on request %r", request.id)
            result = sandbox_error(request, f"executor failed: {type(exc).__name__}: {exc}", backend)
        self.metrics.executed(request, result, time.monotonic() - t0)
        return result

    def _reserve(self, n: int) -> None:
        with self._lock:
            if self._queued + n > self._limits.max_queue:
                raise RequestRejected(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                      f"{self._queued} programs already queued (limit {self._limits.max_queue}, "
                                      "--max-queue); retry later, or add sandbox replicas")
            self._queued += n

    def _release(self, n: int) -> None:
        with self._lock:
            self._queued -= n

    def close(self) -> None:
        """Drops queued programs, kills the running ones of calls still waiting, and waits for them.

        The server calls it once its calls have ended: any program still running is one nobody
        will read (its call was cancelled as the server stopped)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        for cancel in list(self._running_calls):
            cancel.cancel()
        self._pool.shutdown(wait=True)


def _ended_code(context: grpc.aio.ServicerContext) -> grpc.StatusCode:
    """Why a call ended early: its deadline passed, or it was cancelled (by the client or the server's stop)."""
    remaining = context.time_remaining()
    return grpc.StatusCode.DEADLINE_EXCEEDED if remaining is not None and remaining <= 0 \
        else grpc.StatusCode.CANCELLED
