"""One server shell for the suite: a ``grpc.aio`` server on its own event-loop thread.

Waiting calls and open streams cost no thread (they are coroutines), so idle streams can
never starve health checks. The shell adds what every server needs: standard health
checking, reflection, TLS and token auth (:mod:`reward_core.server_security`), and requests
parsed inside the handler, so a malformed message (invalid UTF-8, nesting past protobuf's
limit) is answered ``INVALID_ARGUMENT`` with one log line instead of ``INTERNAL``.

The public API is synchronous (``start`` returns the bound port, ``stop`` drains), so tests
and CLIs use it like any server; coroutines run on the shell's loop via :meth:`call`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import grpc
import grpc.aio
from google.protobuf import descriptor as pb_descriptor
from google.protobuf import message as pb_message
from google.protobuf import message_factory
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from reward_core.grpc_common import RequestRejected
from reward_core.server_security import ServerSecurity

logger = logging.getLogger(__name__)

T = TypeVar("T")


class MalformedRequest(ValueError):
    """A request message that does not parse (invalid UTF-8, too deep, truncated)."""


def parse_message(cls: type[pb_message.Message], raw: bytes) -> pb_message.Message:
    """Parses ``raw`` as ``cls``; raises MalformedRequest saying what is wrong."""
    try:
        return cls.FromString(raw)
    except pb_message.DecodeError as exc:
        raise MalformedRequest(f"malformed {cls.DESCRIPTOR.full_name} ({len(raw)} bytes): {exc}; "
                               "check the client's protobuf encoding (strings must be valid UTF-8, "
                               "nesting at most 100 levels)") from None


async def _abort_malformed(context: grpc.aio.ServicerContext, method: str, exc: MalformedRequest) -> None:
    logger.warning("rejected %s: %s", method, exc)
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))


class RequestTooLarge(MalformedRequest):
    """A request message over the server's size limit."""


def check_size(raw: bytes, limit: int, name: str) -> None:
    """Raises RequestTooLarge, naming the flag that raises the limit, when ``raw`` is over ``limit``."""
    if limit and len(raw) > limit:
        raise RequestTooLarge(f"{name} message of {len(raw):,} bytes is over this server's limit of {limit:,} "
                              f"bytes ({limit // (1024 * 1024)} MB, --max-message-mb): send smaller requests "
                              "(RewardClient's chunk_size splits them) or raise the limit")


def _lenient_handler(method: pb_descriptor.MethodDescriptor, behaviour: Callable,
                     max_request_bytes: int = 0,
                     on_malformed: Callable[[str], None] | None = None) -> grpc.RpcMethodHandler:
    """A handler that receives raw bytes and parses them itself (see the module docstring).

    A unary request that does not parse is aborted ``INVALID_ARGUMENT`` here; in a request
    stream, the message iterator raises ``RequestRejected(INVALID_ARGUMENT)`` for the
    servicer to answer like any other rejection (after what it already answered).
    """
    request_cls = message_factory.GetMessageClass(method.input_type)
    response_cls = message_factory.GetMessageClass(method.output_type)
    name = f"/{method.containing_service.full_name}/{method.name}"
    serialize = response_cls.SerializeToString

    async def messages(raw_iterator: AsyncIterator[bytes],
                       context: grpc.aio.ServicerContext) -> AsyncIterator[pb_message.Message]:
        async for raw in raw_iterator:
            try:
                check_size(raw, max_request_bytes, method.input_type.full_name)
                message = parse_message(request_cls, raw)
            except MalformedRequest as exc:
                logger.warning("rejected %s: %s", name, exc)
                if on_malformed is not None:
                    on_malformed(method.name)
                raise RequestRejected(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
            yield message

    if method.client_streaming:
        if method.server_streaming:
            async def stream_stream(raw_iterator, context):
                async for response in behaviour(messages(raw_iterator, context), context):
                    yield response
            return grpc.stream_stream_rpc_method_handler(stream_stream, response_serializer=serialize)

        async def stream_unary(raw_iterator, context):
            return await behaviour(messages(raw_iterator, context), context)
        return grpc.stream_unary_rpc_method_handler(stream_unary, response_serializer=serialize)

    async def parsed(raw: bytes, context: grpc.aio.ServicerContext) -> pb_message.Message | None:
        try:
            check_size(raw, max_request_bytes, method.input_type.full_name)
            return parse_message(request_cls, raw)
        except MalformedRequest as exc:
            if on_malformed is not None:
                on_malformed(method.name)
            await _abort_malformed(context, name, exc)
            return None

    if method.server_streaming:
        async def unary_stream(raw, context):
            request = await parsed(raw, context)
            async for response in behaviour(request, context):
                yield response
        return grpc.unary_stream_rpc_method_handler(unary_stream, response_serializer=serialize)

    async def unary_unary(raw, context):
        return await behaviour(await parsed(raw, context), context)
    return grpc.unary_unary_rpc_method_handler(unary_unary, response_serializer=serialize)


def lenient_service_handler(service: pb_descriptor.ServiceDescriptor, servicer: Any,
                            max_request_bytes: int = 0) -> grpc.GenericRpcHandler:
    """The generic handler of ``service`` whose methods are ``servicer``'s coroutines of the same name.

    A servicer may define ``on_malformed(method_name)``: it is called for each request the shell
    rejects as malformed or too large (the servicer never sees those), e.g. to count them.
    ``max_request_bytes`` (0: none) is checked on every request message, with an INVALID_ARGUMENT
    that names the limit; gRPC itself must then accept somewhat more (see AioServerShell).
    """
    on_malformed = getattr(servicer, "on_malformed", None)  # e.g. to count the rejection in its metrics
    handlers = {m.name: _lenient_handler(m, getattr(servicer, m.name), max_request_bytes, on_malformed)
                for m in service.methods}
    return grpc.method_handlers_generic_handler(service.full_name, handlers)


class ListingHealthServicer(health.aio.HealthServicer):
    """The standard asyncio health servicer, with the standard ``List`` too (grpcio-health-checking's
    asyncio servicer leaves it unimplemented): every service with a status, so a client can find the
    per-task services that are NOT_SERVING without knowing their names."""

    async def List(self, request: health_pb2.HealthListRequest, context: Any) -> health_pb2.HealthListResponse:
        statuses = dict(self._server_status)  # what Check answers from
        return health_pb2.HealthListResponse(statuses={
            name: health_pb2.HealthCheckResponse(status=status) for name, status in statuses.items()})


class AioServerShell:
    """A started ``grpc.aio`` server with health and reflection, run on a private event loop.

    ``services`` pairs each service descriptor with its servicer (async methods named like the
    RPCs). ``bind`` comes from the prepared :class:`ServerSecurity` (TLS or plaintext).
    """

    def __init__(self, name: str, services: Sequence[tuple[pb_descriptor.ServiceDescriptor, Any]],
                 security: ServerSecurity, host: str, port: int, options: Sequence[tuple[str, Any]],
                 max_request_mb: int = 0, serving: bool = True,
                 service_health: Mapping[str, bool] | None = None) -> None:
        self.name = name
        # Named health entries (e.g. per task) set before the overall status turns SERVING, so a
        # caller that saw SERVING never finds one of them missing.
        self._service_health = dict(service_health or {})
        self._serving_at_start = serving  # False: NOT_SERVING until set_health(True) (e.g. a model loads)
        self._max_request_bytes = max_request_mb * 1024 * 1024
        if max_request_mb:  # gRPC takes up to twice the limit, so the handler can name the limit itself
            options = [o for o in options if o[0] != "grpc.max_receive_message_length"]
            options.append(("grpc.max_receive_message_length", 2 * self._max_request_bytes))
        self._services = list(services)
        self._security = security
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=f"{name}-loop", daemon=True)
        self._thread.start()
        try:
            self.port = self.call(self._start(host, port, list(options)))
        except BaseException:
            self._close_loop()
            raise

    async def _start(self, host: str, port: int, options: list[tuple[str, Any]]) -> int:
        self.server = grpc.aio.server(options=options, interceptors=self._security.aio_interceptors())
        self.health = ListingHealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        names = [service.full_name for service, _ in self._services]
        self.server.add_generic_rpc_handlers(
            tuple(lenient_service_handler(service, servicer, self._max_request_bytes)
                  for service, servicer in self._services))
        reflection.enable_server_reflection((*names, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server)
        bound = self._security.bind(self.server, host, port)
        await self.server.start()
        for service_name, serving in self._service_health.items():
            await self.health.set(service_name, health_pb2.HealthCheckResponse.SERVING if serving
                                  else health_pb2.HealthCheckResponse.NOT_SERVING)
        status = (health_pb2.HealthCheckResponse.SERVING if self._serving_at_start
                  else health_pb2.HealthCheckResponse.NOT_SERVING)
        for service_name in ("", *names):
            await self.health.set(service_name, status)
        return bound

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Runs ``coro`` on the server's loop and waits for its result (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future:
        """Schedules ``coro`` on the server's loop without waiting."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def set_service_health(self, service_name: str, serving: bool) -> None:
        """The health of one named entry (e.g. a task: ``reward.v1.RewardService/task/NAME``)."""
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        self.call(self.health.set(service_name, status))

    def set_health(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        names = ("", *(service.full_name for service, _ in self._services))

        async def update() -> None:
            for service_name in names:
                await self.health.set(service_name, status)
        self.call(update())

    def stop(self, grace_s: float, before_stop: Callable[[], Awaitable[None]] | None = None) -> None:
        """NOT_SERVING for every service, then ``before_stop`` (the server's own drain), then
        ``server.stop(grace)``: new calls refused, in-flight ones given ``grace_s``."""
        if self._thread.is_alive():
            self.call(self._stop(grace_s, before_stop))
        self._close_loop()

    async def _stop(self, grace_s: float, before_stop: Callable[[], Awaitable[None]] | None) -> None:
        await self.health.enter_graceful_shutdown()
        if before_stop is not None:
            await before_stop()
        await self.server.stop(grace_s)

    def wait(self) -> None:
        """Blocks until the server terminates."""
        self.call(self.server.wait_for_termination())

    def _close_loop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        if not self.loop.is_running():
            self.loop.close()


def run_blocking(fn: Callable[..., T], *args: Any) -> Awaitable[T]:
    """Runs a blocking function on the loop's default thread pool (for short blocking steps)."""
    return asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args))
