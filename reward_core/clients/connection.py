"""What every client of the suite shares: its channel settings for one service, its call metadata,
and the standard health check.

Each client owns one channel, opened by the core's factory (:class:`ChannelConfig`): gRPC's own
``retryPolicy`` retries UNAVAILABLE for the client's service, so no client loops on errors itself.
"""

from __future__ import annotations

import dataclasses
from typing import Self

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward_core.channel_config import ChannelConfig
from reward_core.grpc_common import CLIENT_ID_METADATA_KEY

#: The deadline of a health check, in seconds.
HEALTH_TIMEOUT_S = 5.0

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


class BlockingChannelOwner:
    """What a blocking client that owns ``self._channel`` offers: health, ``close`` and ``with``."""

    _channel: grpc.Channel

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


class AsyncChannelOwner:
    """The asyncio counterpart of :class:`BlockingChannelOwner` (``async with``)."""

    _channel: grpc.aio.Channel

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
