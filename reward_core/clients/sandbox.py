"""Clients of the sandbox service (``python -m sandbox serve``, or a reward server's own):
``SandboxClient`` (blocking) and ``AsyncSandboxClient`` (asyncio).

    with SandboxClient("sandbox-host:50053", timeout_s=300) as sandbox:
        result = sandbox.execute(ExecutionRequest(code=..., style=TestStyle.STDIO, cases=(...)))
        results = sandbox.execute_batch(requests)          # one call, results in request order
        languages = sandbox.list_languages()               # what it can run, with versions

They speak the dataclasses of :mod:`reward_core.sandbox_contract`, converted by
:mod:`reward_core.sandbox_convert`. Whatever a program does is a result (its ``verdict``), never
an error. A failed call raises the clients' own exceptions (:mod:`reward_core.clients.errors`), each
also a ``grpc.RpcError`` whose ``code()`` and ``details()`` are the server's:
:class:`~reward_core.clients.errors.CallRejected` for INVALID_ARGUMENT, a request the sandbox refuses as
unusable (unknown language, no tests, limits above its caps; a known language whose toolchain it lacks:
details starting ``UNSUPPORTED_LANGUAGE:``), and RESOURCE_EXHAUSTED, its queue full;
:class:`~reward_core.clients.errors.CallTimedOut` for DEADLINE_EXCEEDED (naming ``timeout_s``);
:class:`~reward_core.clients.errors.CallFailed` for other codes; UNAVAILABLE (retried by the channel's own
retry policy, up to ``max_attempts``) is :class:`~reward_core.clients.errors.ServerUnavailable`: the sandbox
drains or went away and no other replica took the call. Once connected, a call made while no replica is
ready fails within the retries' backoffs instead of waiting out ``timeout_s``. A request
that cannot be put on the wire (a FUNCTION_CALL value that is not JSON) raises
InvalidExecutionRequest before any call; an answer whose results are missing or out of order raises
:class:`SandboxReplyError`. The blocking client's calls take an optional ``cancel`` token
(``reward_core.sandbox_contract.Cancellation``): when it fires, the call is cancelled and raises
``grpc.FutureCancelledError``. An :class:`~reward_core.sandbox_contract.Executor` over this client,
with those errors mapped to results, is ``sandbox.create_remote_executor(...)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import grpc

from reward.v1 import sandbox_pb2 as pb
from reward.v1 import sandbox_pb2_grpc
from reward_core import sandbox_convert as convert
from reward_core.channel_config import SANDBOX_SERVICE, ChannelConfig
from reward_core.clients import connection
from reward_core.clients.errors import typed_errors
from reward_core.sandbox_contract import ExecutionRequest, ExecutionResult, LanguageInfo

__all__ = ["AsyncSandboxClient", "SandboxClient", "SandboxReplyError"]

#: What to change, besides ``timeout_s``, when a call runs out of time.
_TIMEOUT_ADVICE = "send fewer programs per execute_batch call"


class SandboxReplyError(RuntimeError):
    """The sandbox's answer does not match the request (results missing or out of order)."""


class CancelToken(Protocol):
    """What stops a call nobody waits for any more (``reward_core.sandbox_contract.Cancellation`` is one)."""

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]: ...


def _wait(call: grpc.Future, cancel: CancelToken | None) -> Any:
    """The call's reply; ``cancel`` firing first cancels the call (``grpc.FutureCancelledError``)."""
    unregister = cancel.on_cancel(call.cancel) if cancel is not None else None
    try:
        return call.result()
    finally:
        if unregister is not None:
            unregister()


def _batch_request(requests: Sequence[ExecutionRequest]) -> pb.ExecuteBatchRequest:
    """Positional ids on the wire: callers' ids may repeat or be empty; results are matched by position."""
    wire = convert.batch_request_to_proto(requests)
    for i, msg in enumerate(wire.requests):
        msg.id = str(i)
    return wire


def _batch_results(endpoint: str, reply: pb.ExecuteBatchResponse,
                   requests: Sequence[ExecutionRequest]) -> list[ExecutionResult]:
    if [r.id for r in reply.results] != [str(i) for i in range(len(requests))]:
        raise SandboxReplyError(f"sandbox at {endpoint} answered {len(reply.results)} results, missing or out of "
                                f"order, for {len(requests)} programs")
    return [replace(convert.result_from_proto(msg), id=request.id) for msg, request in zip(reply.results, requests)]


class _Base:
    def __init__(self, endpoint: str, timeout_s: float, channel: ChannelConfig | None, client_id: str,
                 connect_timeout_s: float | None) -> None:
        if not endpoint:
            raise ValueError("endpoint is empty: give the host:port of a `python -m sandbox serve` server")
        self._init_connect(connect_timeout_s, "sandbox service")  # from the channel owner
        self.endpoint = endpoint
        self.timeout_s = connection.check_timeout(timeout_s)
        self.channel_config = connection.channel_for(SANDBOX_SERVICE, channel)
        self.client_id = client_id
        self._metadata = connection.call_metadata(client_id)

    def _call_options(self) -> dict[str, Any]:
        """Every call's deadline, metadata and ``wait_for_ready`` (False once connected: fail fast)."""
        return {"timeout": self.timeout_s, "metadata": self._metadata, "wait_for_ready": self._wait_for_ready}

    def _typed_errors(self) -> contextlib.AbstractContextManager[None]:
        """A failed call as the clients' own exception (UNAVAILABLE as ServerUnavailable)."""
        return typed_errors(self.endpoint, self.timeout_s, "sandbox service", _TIMEOUT_ADVICE)


class SandboxClient(_Base, connection.BlockingChannelOwner):
    """Blocking client of a SandboxService. Thread-safe; ``close()`` closes its channel.

    ``timeout_s`` is every call's deadline (a batch's programs all run within it); ``client_id``,
    when given, names the caller in each call's metadata. The first call waits at most
    ``connect_timeout_s`` for a connection, then raises EndpointUnreachable saying why (None: no check,
    calls wait as the channel's ``waitForReady`` says).
    """

    def __init__(self, endpoint: str, *, timeout_s: float = 300.0, channel: ChannelConfig | None = None,
                 client_id: str = "", connect_timeout_s: float | None = connection.CONNECT_TIMEOUT_S) -> None:
        super().__init__(endpoint, timeout_s, channel, client_id, connect_timeout_s)
        self._channel = self.channel_config.channel(endpoint)
        self._stub = sandbox_pb2_grpc.SandboxServiceStub(self._channel)

    def execute(self, request: ExecutionRequest, cancel: CancelToken | None = None) -> ExecutionResult:
        """Runs one program against its tests (one ``Execute`` call); the result has the request's id."""
        self._ensure_connected()
        call = self._stub.Execute.future(convert.request_to_proto(request), **self._call_options())
        with self._typed_errors():
            reply = _wait(call, cancel)
        return replace(convert.result_from_proto(reply), id=request.id)

    def execute_batch(self, requests: Sequence[ExecutionRequest],
                      cancel: CancelToken | None = None) -> list[ExecutionResult]:
        """Runs many programs in one ``ExecuteBatch`` call; one result per request, in order, with its id.

        The server caps the programs of one call (INVALID_ARGUMENT beyond): split larger batches.
        """
        self._ensure_connected()
        call = self._stub.ExecuteBatch.future(_batch_request(requests), **self._call_options())
        with self._typed_errors():
            reply = _wait(call, cancel)
        return _batch_results(self.endpoint, reply, requests)

    def list_languages(self) -> list[LanguageInfo]:
        """Every language the sandbox knows (``ListLanguages``): whether it can run there, its version."""
        self._ensure_connected()
        with self._typed_errors():
            reply = self._stub.ListLanguages(pb.ListLanguagesRequest(), **self._call_options())
        return [convert.language_from_proto(msg) for msg in reply.languages]


class AsyncSandboxClient(_Base, connection.AsyncChannelOwner):
    """asyncio client of a SandboxService: the methods of :class:`SandboxClient`, awaitable.

    Create it inside the event loop that uses it; cancelling the awaiting task cancels the call.
    """

    def __init__(self, endpoint: str, *, timeout_s: float = 300.0, channel: ChannelConfig | None = None,
                 client_id: str = "", connect_timeout_s: float | None = connection.CONNECT_TIMEOUT_S) -> None:
        super().__init__(endpoint, timeout_s, channel, client_id, connect_timeout_s)
        self._channel = self.channel_config.aio_channel(endpoint)
        self._stub = sandbox_pb2_grpc.SandboxServiceStub(self._channel)

    async def execute(self, request: ExecutionRequest) -> ExecutionResult:
        await self._ensure_connected()
        with self._typed_errors():
            reply = await self._stub.Execute(convert.request_to_proto(request), **self._call_options())
        return replace(convert.result_from_proto(reply), id=request.id)

    async def execute_batch(self, requests: Sequence[ExecutionRequest]) -> list[ExecutionResult]:
        await self._ensure_connected()
        with self._typed_errors():
            reply = await self._stub.ExecuteBatch(_batch_request(requests), **self._call_options())
        return _batch_results(self.endpoint, reply, requests)

    async def list_languages(self) -> list[LanguageInfo]:
        await self._ensure_connected()
        with self._typed_errors():
            reply = await self._stub.ListLanguages(pb.ListLanguagesRequest(), **self._call_options())
        return [convert.language_from_proto(msg) for msg in reply.languages]
