"""Services a layer above the router serves on the reward server's port (``create_server(extra_services=...)``).

The reward server (``reward_service.router.server``) knows no such service: it is handed add-ons,
each a callable that builds a :class:`HostedService` once the server's scorer and metrics exist and
before its gRPC server does (so worker processes are never forked from a threaded gRPC process).
The server adds each hosted service's servicers and health entries, counts its calls while it
drains, and on shutdown (in the order the add-ons were given) hands back its calls still running
and closes it after the reward calls are flushed and before the server, the sandbox servicer and
the scorer close.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf.descriptor import ServiceDescriptor
from prometheus_client import CollectorRegistry

from reward_service.router.scoring import Scorer


@dataclass(frozen=True)
class HostContext:
    """What the reward server lends a hosted service: its scorer (the task registry) and metrics registry."""

    scorer: Scorer
    metrics_registry: CollectorRegistry


class HostedService(Protocol):
    """One or more gRPC services served beside ``RewardService`` on the reward server's port."""

    @property
    def services(self) -> Sequence[tuple[ServiceDescriptor, Any]]:
        """Each service descriptor with its servicer (async methods named like the service's methods)."""
        ...

    @property
    def health(self) -> Mapping[str, bool]:
        """Health entries of its own, beyond one per service (which follow the server's health)."""
        ...

    @property
    def active_calls(self) -> int:
        """Calls in progress: the server's drain waits for them until the grace period's hand-back."""
        ...

    def begin_drain(self) -> None:
        """New calls are refused (UNAVAILABLE); calls in flight go on."""
        ...

    async def hand_back(self) -> None:
        """On the server's loop, at the end of the grace period: calls still running are answered now."""
        ...

    async def aclose(self) -> None:
        """Releases what it started (worker processes, sessions); on the server's loop after ``hand_back``,
        or on a loop of its own when the server failed to start."""
        ...


#: Builds a hosted service for a reward server that is being built.
ServiceAddOn = Callable[[HostContext], HostedService]
