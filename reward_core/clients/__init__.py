"""One client per service of the suite, each blocking and asyncio, needing only the core.

* the reward service (``reward-service serve``): :class:`RewardClient`, :class:`AsyncRewardClient`
  (:mod:`reward_core.clients.reward`);
* the reward-model service (``reward-service serve-rm``): :class:`RewardModelClient`,
  :class:`AsyncRewardModelClient` (:mod:`reward_core.clients.reward_model`);
* the sandbox service (``python -m sandbox serve``): :class:`SandboxClient`,
  :class:`AsyncSandboxClient` (:mod:`reward_core.clients.sandbox`);
* the environment service (``reward-service serve --serve-environments``): :class:`EnvironmentClient`
  (asyncio, an ``EpisodeHost``), :class:`BlockingEnvironmentClient` (:mod:`reward_core.clients.environment`).

Each opens one channel with the core's factory (:class:`~reward_core.channel_config.ChannelConfig`:
retries of UNAVAILABLE by gRPC's own retry policy, keepalive, message sizes, TLS and token) and
speaks the core's dataclasses; only these modules touch the generated stubs. An endpoint where
nothing answers is :class:`~reward_core.clients.errors.EndpointUnreachable` within seconds. Every
client's failed call raises the same exception for the same status code, naming the endpoint:
:class:`~reward_core.clients.errors.ServerUnavailable` (UNAVAILABLE: the server went away or drains,
and no other replica took the call; within seconds), :class:`~reward_core.clients.errors.CallTimedOut`
(DEADLINE_EXCEEDED), :class:`~reward_core.clients.errors.CallRejected` (a refusal: INVALID_ARGUMENT,
RESOURCE_EXHAUSTED, UNAUTHENTICATED, ...) or :class:`~reward_core.clients.errors.CallFailed` (other codes),
each a ``grpc.RpcError`` too, with the call's ``code()`` and ``details()``.
"""

from reward_core.clients.batching import GroupResult
from reward_core.clients.environment import BlockingEnvironmentClient, EnvironmentClient
from reward_core.clients.errors import (
    CallFailed,
    CallRejected,
    CallTimedOut,
    ClientError,
    EndpointUnreachable,
    ServerUnavailable,
)
from reward_core.clients.reward import AsyncRewardClient, RewardClient
from reward_core.clients.reward_model import AsyncRewardModelClient, RewardModelClient
from reward_core.clients.sandbox import AsyncSandboxClient, SandboxClient, SandboxReplyError

__all__ = [
    "AsyncRewardClient",
    "AsyncRewardModelClient",
    "AsyncSandboxClient",
    "BlockingEnvironmentClient",
    "CallFailed",
    "CallRejected",
    "CallTimedOut",
    "ClientError",
    "EndpointUnreachable",
    "EnvironmentClient",
    "GroupResult",
    "RewardClient",
    "RewardModelClient",
    "SandboxClient",
    "SandboxReplyError",
    "ServerUnavailable",
]
