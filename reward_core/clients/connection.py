"""What every client of the suite shares: its channel settings for one service, its call metadata,
and the standard health check.

Each client owns one channel, opened by the core's factory (:class:`ChannelConfig`): gRPC's own
``retryPolicy`` retries UNAVAILABLE for the client's service, so no client loops on errors itself.

A client with a connect check (``connect_timeout_s``, the default) waits for its first connection
itself (:func:`wait_connected`, explaining a failure), then may send its calls with
``wait_for_ready=False`` (``_wait_for_ready``), overriding the channel's ``waitForReady``: a call
made while no replica is ready (the only server drained or shut down) then fails within the retry
policy's few backoffs instead of queueing until its deadline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import threading
import time
from typing import Self

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward_core.channel_config import ChannelConfig
from reward_core.channel_security import ClientSecurity, open_channel
from reward_core.clients.errors import EndpointUnreachable
from reward_core.grpc_common import CLIENT_ID_METADATA_KEY

#: The deadline of a health check, in seconds.
HEALTH_TIMEOUT_S = 5.0
#: How long a client waits for its first connection before it says the endpoint is unreachable.
CONNECT_TIMEOUT_S = 10.0
#: The TCP probe that explains an unreachable endpoint.
PROBE_TIMEOUT_S = 2.0

Metadata = tuple[tuple[str, str], ...]


def channel_for(service: str, config: ChannelConfig | None) -> ChannelConfig:
    """``config`` (default ``ChannelConfig()``) with its retry policy and ``waitForReady`` applied to
    ``service``, the full name of the one service the client's channel carries."""
    config = config or ChannelConfig()
    return config if service in config.services else dataclasses.replace(config, services=(service,))


def call_metadata(client_id: str) -> Metadata:
    """The ``reward-client-id`` metadata naming the caller ("" : none)."""
    return ((CLIENT_ID_METADATA_KEY, client_id),) if client_id else ()


def check_timeout(timeout_s: float) -> float:
    """``timeout_s`` as a float; ValueError unless it is a positive number of seconds."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < float("inf"):
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    return float(timeout_s)


def _host_port(target: str) -> tuple[str, int] | None:
    """(host, port) of a plain ``host:port`` / ``[v6]:port`` / ``dns:///host:port`` target, else None."""
    target = target.split(",")[0].strip()
    for prefix in ("dns:///", "ipv4:", "ipv6:"):
        if target.startswith(prefix):
            target = target[len(prefix):]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or "/" in host:
        return None
    return host.strip("[]") or "localhost", int(port)


class Diagnosis(str):
    """Why nothing answers; ``final`` when retrying cannot help (refused, unresolvable); ``accepted``
    when the port accepts TCP connections."""

    final: bool = False
    accepted: bool = False


def _diagnosis(text: str, final: bool, accepted: bool = False) -> Diagnosis:
    out = Diagnosis(text)
    out.final, out.accepted = final, accepted
    return out


def diagnose(target: str, timeout_s: float = PROBE_TIMEOUT_S) -> Diagnosis:
    """Why nothing answers at ``target``, from a plain TCP connect (best effort; no gRPC)."""
    address = _host_port(target)
    if address is None:
        return _diagnosis(f"no gRPC server answered within the connect timeout (target {target!r})", False)
    host, port = address
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except socket.gaierror as exc:
        return _diagnosis(f"the host name {host!r} does not resolve ({exc.strerror or exc}): check the address", True)
    except ConnectionRefusedError:
        return _diagnosis(f"connection refused: nothing listens on port {port} of {host} "
                          "(is the server running, on that host and port?)", True)
    except TimeoutError:
        return _diagnosis(f"no answer from {host}:{port} within {timeout_s:g} s "
                          "(a firewall dropping packets, or a wrong address)", False)
    except OSError as exc:
        return _diagnosis(f"cannot open a TCP connection to {host}:{port}: {exc.strerror or exc}", True)
    return _diagnosis(f"{host}:{port} accepts TCP connections but no gRPC server answered "
                      "(not this service's port, or a TLS/plaintext mismatch: check --tls-ca / the server's TLS)",
                      False, accepted=True)


def _health_status(target: str, security: ClientSecurity | None, timeout_s: float) -> str | None:
    """The name of the status the standard health check answers at ``target``; None when none came."""
    channel = open_channel(target, (), security)
    try:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
    except grpc.RpcError:
        return None
    finally:
        channel.close()
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def explain(target: str, security: ClientSecurity | None = None, timeout_s: float = PROBE_TIMEOUT_S) -> Diagnosis:
    """:func:`diagnose`, and where the port accepts TCP, whether the server there says NOT_SERVING: a channel
    sends no calls to such a server (draining, or not ready yet), so it never connects."""
    reason = diagnose(target, timeout_s)
    address = _host_port(target)
    if not reason.accepted or address is None:
        return reason
    host, port = address
    status = _health_status(f"[{host}]:{port}" if ":" in host else f"{host}:{port}", security, timeout_s)
    if status is None or status == "SERVING":
        return reason
    return _diagnosis(f"{host}:{port} answers, but its health check says {status}: the server is draining "
                      "(shutting down) or not ready yet, and no other replica answered", False, accepted=True)


def wait_connected(channel: grpc.Channel, target: str, timeout_s: float, service: str = "server",
                   security: ClientSecurity | None = None) -> None:
    """Returns once ``channel`` is connected; raises EndpointUnreachable (saying why) when it cannot be:
    at once when a failed attempt is explained for good (connection refused, a name that does not
    resolve), else after ``timeout_s`` (:func:`explain`, probing with ``security``)."""
    deadline = time.monotonic() + timeout_s
    changed = threading.Condition()
    state: list[grpc.ChannelConnectivity] = []

    def on_change(new: grpc.ChannelConnectivity) -> None:
        with changed:
            state.append(new)
            changed.notify_all()

    channel.subscribe(on_change, try_to_connect=True)
    try:
        with changed:
            while True:
                if state and state[-1] is grpc.ChannelConnectivity.READY:
                    return
                if state and state[-1] is grpc.ChannelConnectivity.TRANSIENT_FAILURE:
                    state.clear()
                    changed.release()
                    try:
                        reason = diagnose(target)
                    finally:
                        changed.acquire()
                    if reason.final:
                        raise EndpointUnreachable(target, reason, service)
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                changed.wait(left)
    finally:
        channel.unsubscribe(on_change)
    raise EndpointUnreachable(target, explain(target, security), service)


async def aio_wait_connected(channel: grpc.aio.Channel, target: str, timeout_s: float,
                             service: str = "server", security: ClientSecurity | None = None) -> None:
    """The asyncio counterpart of :func:`wait_connected`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    state = channel.get_state(try_to_connect=True)
    while state is not grpc.ChannelConnectivity.READY:
        if state is grpc.ChannelConnectivity.TRANSIENT_FAILURE:
            reason = await loop.run_in_executor(None, diagnose, target)
            if reason.final:
                raise EndpointUnreachable(target, reason, service)
        left = deadline - loop.time()
        if left <= 0:
            raise EndpointUnreachable(target, await loop.run_in_executor(None, explain, target, security), service)
        try:
            await asyncio.wait_for(channel.wait_for_state_change(state), left)
        except TimeoutError:
            pass
        state = channel.get_state(try_to_connect=True)


def serving(channel: grpc.Channel, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    """Whether the server behind ``channel`` answers the standard health check SERVING."""
    try:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
    except grpc.RpcError:
        return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


async def aio_serving(channel: grpc.aio.Channel, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    """The asyncio counterpart of :func:`serving`."""
    try:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
    except grpc.RpcError:
        return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


class _ConnectOnce:
    """A client's connection check before its first call (``connect_timeout_s``; None: no check, calls
    wait for the server as long as their deadline allows, as a server-side client that may start
    before its peer wants)."""

    endpoint: str
    channel_config: ChannelConfig
    connect_timeout_s: float | None = None
    _connected: bool = True
    _service_label: str = "server"

    def _init_connect(self, connect_timeout_s: float | None, service_label: str) -> None:
        if connect_timeout_s is not None:
            check_timeout(connect_timeout_s)
        self.connect_timeout_s = connect_timeout_s
        self._connected = connect_timeout_s is None
        self._service_label = service_label
        self._connect_lock = threading.Lock()

    def _connect_limit(self, timeout_s: float | None) -> float:
        return timeout_s or self.connect_timeout_s or CONNECT_TIMEOUT_S

    @property
    def _wait_for_ready(self) -> bool | None:
        """Once connected, a call fails fast (UNAVAILABLE, retried by the channel's policy) when no
        replica is ready, instead of queueing until its deadline; None (the channel's
        ``waitForReady``) for a client without a connect check."""
        return None if self.connect_timeout_s is None else False


class BlockingChannelOwner(_ConnectOnce):
    """What a blocking client that owns ``self._channel`` offers: health, the connect check, ``close``
    and ``with``."""

    _channel: grpc.Channel

    def check_connection(self, timeout_s: float | None = None) -> None:
        """Waits for a connection (at most ``timeout_s``, default ``connect_timeout_s`` or 10 s);
        raises EndpointUnreachable saying why none came. Calls do this once, before the first."""
        with self._connect_lock:
            wait_connected(self._channel, self.endpoint, self._connect_limit(timeout_s), self._service_label,
                           self.channel_config.security)
            self._connected = True

    def _ensure_connected(self) -> None:
        if not self._connected:
            self.check_connection()

    def serving(self, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
        """Whether the server answers the standard health check SERVING (False when unreachable)."""
        return serving(self._channel, timeout_s)

    def close(self) -> None:
        """Closes the client's channel."""
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncChannelOwner(_ConnectOnce):
    """The asyncio counterpart of :class:`BlockingChannelOwner` (``async with``)."""

    _channel: grpc.aio.Channel

    async def check_connection(self, timeout_s: float | None = None) -> None:
        """Async counterpart of BlockingChannelOwner.check_connection."""
        await aio_wait_connected(self._channel, self.endpoint, self._connect_limit(timeout_s), self._service_label,
                                 self.channel_config.security)
        self._connected = True

    async def _ensure_connected(self) -> None:
        if not self._connected:
            await self.check_connection()

    async def serving(self, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
        """Whether the server answers the standard health check SERVING (False when unreachable)."""
        return await aio_serving(self._channel, timeout_s)

    async def close(self) -> None:
        """Closes the client's channel."""
        await self._channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
