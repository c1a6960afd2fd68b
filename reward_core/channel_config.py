"""The suite's one channel factory: retries, keepalive, load balancing, sizes, TLS and token.

Every client of every service opens its channels here: ``RewardClient``, the reward
server's ``code`` task (to a SandboxService) and ``rm`` task (to a RewardModelService).

Retries are gRPC's own (a service-config ``retryPolicy``), only for UNAVAILABLE:
a draining or restarting server. Nothing else is retried: a DEADLINE_EXCEEDED
or INVALID_ARGUMENT is an answer, not a transient failure. ``round_robin``
spreads calls over every address a ``dns:///`` target resolves to, so many
server replicas behind one DNS name need no proxy.

Without Kubernetes or DNS, a target may list replicas: ``host1:50051,host2:50051``. The
names are resolved once, the channel round-robins over every address, and client-side
health checking (``healthCheckConfig``) skips a replica that reports NOT_SERVING (draining).

``channel(target)`` / ``aio_channel(target)`` open the channel with ``security``: TLS root
certificates and a bearer token (see ``reward_core/channel_security.py``); left unset, it
comes from the ``REWARD_SUITE_*`` environment, and with none of those set the channel is
plaintext without a token, as before.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio

from reward_core.channel_security import ClientSecurity, open_aio_channel, open_channel

SERVICE = "reward.v1.RewardService"
SANDBOX_SERVICE = "reward.v1.SandboxService"
REWARD_MODEL_SERVICE = "reward.v1.RewardModelService"
ENVIRONMENT_SERVICE = "reward.v1.EnvironmentService"


@dataclass(frozen=True)
class ChannelConfig:
    """Client channel settings (defaults suit a trainer talking to a reward cluster)."""

    max_message_mb: int = field(default=64, metadata={"help": "largest message sent or received"})
    max_attempts: int = field(default=5, metadata={"help": "tries per call when the server is UNAVAILABLE"})
    initial_backoff_s: float = field(default=0.2, metadata={"help": "first retry delay"})
    max_backoff_s: float = field(default=5.0, metadata={"help": "largest retry delay"})
    wait_for_ready: bool = field(default=True, metadata={"help": "queue calls until the server is reachable"})
    load_balancing: str = field(default="round_robin", metadata={"help": "gRPC LB policy across replicas"})
    keepalive_s: int = field(default=30, metadata={"help": "HTTP/2 keepalive ping interval"})
    services: tuple[str, ...] = field(default=(SERVICE,), metadata={
        "help": "the gRPC services whose calls get the retry policy (full names)"})
    security: ClientSecurity | None = field(default=None, metadata={
        "help": "TLS and bearer token; None: from the REWARD_SUITE_* environment (none set: plaintext)"})

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= 5:
            raise ValueError(f"max_attempts must be in 1..5 (gRPC caps retries at 5), got {self.max_attempts}")
        if not self.services:
            raise ValueError("services is empty: name the gRPC services the retry policy applies to")
        if self.initial_backoff_s <= 0 or self.max_backoff_s < self.initial_backoff_s:
            raise ValueError("need 0 < initial_backoff_s <= max_backoff_s")

    def service_config(self) -> str:
        method: dict[str, Any] = {"name": [{"service": name} for name in self.services],
                                  "waitForReady": self.wait_for_ready}
        if self.max_attempts > 1:  # gRPC wants at least 2 attempts in a retry policy: 1 means none
            method["retryPolicy"] = {
                "maxAttempts": self.max_attempts,
                "initialBackoff": f"{self.initial_backoff_s}s",
                "maxBackoff": f"{self.max_backoff_s}s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
            }
        return json.dumps({"loadBalancingConfig": [{self.load_balancing: {}}], "methodConfig": [method],
                           # subchannels whose health service says NOT_SERVING get no calls (round_robin)
                           "healthCheckConfig": {"serviceName": ""}})

    def channel(self, target: str) -> grpc.Channel:
        """A blocking channel to ``target`` (one address, a ``dns:///`` name, or a list) with these
        options and this security."""
        return open_channel(static_target(target), self.options(target), self.security)

    def aio_channel(self, target: str) -> grpc.aio.Channel:
        """An asyncio channel to ``target``, as :meth:`channel`."""
        return open_aio_channel(static_target(target), self.options(target), self.security)

    def options(self, target: str = "") -> list[tuple[str, Any]]:
        size = self.max_message_mb * 1024 * 1024
        authority = [("grpc.default_authority", target.split(",")[0].strip())] if "," in target else []
        return authority + [
            ("grpc.service_config", self.service_config()),
            ("grpc.enable_retries", 1),
            ("grpc.max_send_message_length", size),
            ("grpc.max_receive_message_length", size),
            ("grpc.keepalive_time_ms", self.keepalive_s * 1000),
            ("grpc.keepalive_timeout_ms", 10_000),
            ("grpc.keepalive_permit_without_calls", 1),
        ]


def static_target(target: str) -> str:
    """``host1:p1,host2:p2`` as the ``ipv4:``/``ipv6:`` address list gRPC balances over; any other
    target unchanged. Names are resolved now (each may give several addresses); raises
    ValueError naming an entry that does not resolve.
    """
    if "," not in target or ":///" in target or target.startswith(("ipv4:", "ipv6:", "unix:")):
        return target
    v4: list[str] = []
    v6: list[str] = []
    for entry in (e.strip() for e in target.split(",") if e.strip()):
        host, sep, port = entry.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"endpoint {entry!r} in {target!r} is not host:port")
        host = host.strip("[]")
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
            except OSError as exc:
                raise ValueError(f"endpoint {entry!r} does not resolve: {exc}") from None
            addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
        for address in dict.fromkeys(addresses):
            (v4 if address.version == 4 else v6).append(
                f"{address}:{port}" if address.version == 4 else f"[{address}]:{port}")
    if v4:  # one family per target: gRPC's static lists are ipv4: or ipv6:
        return "ipv4:" + ",".join(v4)
    return "ipv6:" + ",".join(v6)
