"""What every gRPC server of the suite shares: request rejection, id checks, channel options."""

from __future__ import annotations

from typing import Iterable

import grpc


class RequestRejected(ValueError):
    """A request the server refuses as a whole; ``code`` is the gRPC status to answer."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def check_ids(ids: Iterable[str], noun: str = "rollout") -> None:
    """Raises RequestRejected (INVALID_ARGUMENT) on an empty or repeated id: results are matched by id."""
    seen: set[str] = set()
    for i, item_id in enumerate(ids):
        if not item_id:
            raise RequestRejected(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"{noun} at index {i} has an empty id; every {noun} needs a unique id")
        if item_id in seen:
            raise RequestRejected(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"duplicate {noun} id {item_id!r} (index {i}); ids must be unique per request")
        seen.add(item_id)


def server_options(max_message_mb: int) -> list[tuple[str, int]]:
    """Message size limits, and acceptance of the keepalive pings our clients send."""
    size = max_message_mb * 1024 * 1024
    return [
        ("grpc.max_receive_message_length", size),
        ("grpc.max_send_message_length", size),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ]


def bind_insecure(server: grpc.Server, host: str, port: int) -> int:
    """Binds ``host:port`` (port 0: any free one) and returns the port; raises OSError when it cannot."""
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as exc:
        raise OSError(f"could not bind {host}:{port}: {exc}") from exc
    if bound == 0:
        raise OSError(f"could not bind {host}:{port}")
    return bound
