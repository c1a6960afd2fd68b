"""What every gRPC server of the suite shares: request rejection, id checks, deadlines, channel options."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import grpc

logger = logging.getLogger(__name__)

#: gRPC reports a call without a deadline as about 9e18 seconds remaining, which no wait
#: accepts ("timestamp out of range"); more time left than this reads as "no deadline".
NO_DEADLINE_S = 1e9

#: Default of every server's ``max_call_s``: the longest a handler waits for one call's work.
DEFAULT_MAX_CALL_S = 3600.0


#: Metadata key naming the calling client (a trainer run, a rank): the unit of fair sharing
#: and per-client quotas. Our clients send it; calls without it share the peer's address.
CLIENT_ID_METADATA_KEY = "reward-client-id"

#: gRPC's own trailer for a server's retry hint (honoured by retry policies that retry the code).
RETRY_PUSHBACK_KEY = "grpc-retry-pushback-ms"


class RequestRejected(ValueError):
    """A request the server refuses as a whole; ``code`` is the gRPC status to answer.

    ``retry_after_ms``, when set, goes to the client as the ``grpc-retry-pushback-ms`` trailer.
    """

    def __init__(self, code: grpc.StatusCode, message: str, retry_after_ms: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after_ms = retry_after_ms

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return () if self.retry_after_ms is None else ((RETRY_PUSHBACK_KEY, str(self.retry_after_ms)),)


def client_id_of(metadata: Iterable[tuple[str, str]], peer: str = "") -> str:
    """The caller's client id: its ``reward-client-id`` metadata, else its peer host (not port).

    Bounded to 128 characters: it keys per-client queues, never a metrics label.
    """
    for key, value in metadata or ():
        if key == CLIENT_ID_METADATA_KEY and value:
            return value[:128]
    host = peer.rsplit(":", 1)[0] if peer.count(":") >= 1 else peer
    return f"peer:{host}"[:128]


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


@dataclass(frozen=True)
class WaitBudget:
    """How long a handler may wait for its call's work, and whether the server's cap (not the
    client's deadline) is what bounds it."""

    seconds: float
    by_server_cap: bool

    def expired(self, what: str, advice: str) -> RequestRejected:
        """The DEADLINE_EXCEEDED rejection once the budget ran out with ``what`` still pending.

        ``advice`` completes "raise the call timeout or ..." (e.g. "send smaller batches").
        """
        if self.by_server_cap:
            message = (f"{what} after this server's limit of {self.seconds:g}s per call; "
                       f"raise the server's --max-call-s or {advice}")
        else:
            message = f"deadline passed with {what}; raise the call timeout or {advice}"
        return RequestRejected(grpc.StatusCode.DEADLINE_EXCEEDED, message)


def wait_budget(context: grpc.ServicerContext, cap_s: float) -> WaitBudget:
    """The time a handler may wait for its call's work: what is left of the client's deadline,
    at most ``cap_s``.

    A call without a deadline is served like any other: its work is waited for until done,
    bounded only by the server's cap (so no handler thread is held forever).
    """
    remaining = context.time_remaining()
    if remaining is None or remaining > NO_DEADLINE_S or remaining >= cap_s:
        return WaitBudget(cap_s, by_server_cap=True)
    return WaitBudget(max(0.0, remaining), by_server_cap=False)


@contextlib.contextmanager
def unexpected_as_internal(what: str) -> Iterator[None]:
    """Turns an unexpected exception inside the block into RequestRejected(INTERNAL) naming ``what``.

    The traceback goes to the log; the caller answers the rejection like any other, so a
    server bug ends the call loudly (never UNKNOWN, never a stream closed OK with requests
    unanswered). RequestRejected passes through unchanged.
    """
    try:
        yield
    except RequestRejected:
        raise
    except Exception as exc:  # noqa: BLE001 -- the boundary between a server bug and the call's status
        raise internal_error(what, exc) from exc


def internal_error(what: str, exc: Exception) -> RequestRejected:
    """Logs ``exc`` with its traceback and returns the INTERNAL rejection that names ``what``."""
    logger.error("%s failed inside the server", what, exc_info=exc)
    return RequestRejected(grpc.StatusCode.INTERNAL,
                           f"{what} failed inside the server ({type(exc).__name__}: {exc}); "
                           "this is a server bug: the server log has the traceback")


#: Default of every server's maximum connection age: clients reconnect (and re-resolve DNS)
#: this often, so replicas added behind one name receive traffic.
DEFAULT_MAX_CONNECTION_AGE_S = 300.0


def server_options(max_message_mb: int, max_connection_age_s: float = DEFAULT_MAX_CONNECTION_AGE_S
                   ) -> list[tuple[str, int]]:
    """Message size limits, acceptance of the keepalive pings our clients send, and a maximum
    connection age (0: none) after which the server asks the client to reconnect.

    Calls in flight on an aged connection are never cut (the grace is unlimited): a long
    ScoreStream simply keeps its connection until it ends; new calls go to a new one.
    """
    size = max_message_mb * 1024 * 1024
    options = [
        ("grpc.max_receive_message_length", size),
        ("grpc.max_send_message_length", size),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ]
    if max_connection_age_s > 0:
        options.append(("grpc.max_connection_age_ms", int(max_connection_age_s * 1000)))
    return options
