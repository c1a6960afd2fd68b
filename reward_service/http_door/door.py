"""What every route of the front door shares: its configuration and :class:`FrontDoor` (the
upstream clients and the door's metrics).

The app (``app.py``) builds the routes of the adapters; the adapters import only this module,
never the app, so neither depends on the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.routing import BaseRoute

from reward_core.episode_contract import EpisodeHost
from reward_service.http_door.upstream import UpstreamConfig, Upstreams


@dataclass(frozen=True)
class DoorConfig:
    """The front door: where it sends work and who may call it."""

    upstream: UpstreamConfig
    token: str = field(default="", repr=False)  # bearer token every call must carry ("" : none)
    nemo_gym_reward: str = ""  # serve this reward as a NeMo Gym resources server at the root ("" : none)
    nemo_gym_environment: str = ""  # serve this environment (tools, seed/verify, reset/step) at the root instead


@dataclass
class FrontDoor:
    """What every route handler gets: the upstreams, the episode host and the door's own metrics.

    ``episodes`` runs the environment doors' sessions (ORS, Gym, OpenEnv); ``on_shutdown`` are what
    adapters release when the app stops (their open sessions), awaited in order.
    """

    config: DoorConfig
    upstreams: Upstreams | None = None
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    episodes: EpisodeHost | None = None
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.requests = Counter("http_door_requests", "HTTP calls by route and status", ["route", "status"],
                                registry=self.registry)
        self.seconds = Histogram("http_door_request_seconds", "HTTP call latency by route", ["route"],
                                 registry=self.registry)

    @property
    def up(self) -> Upstreams:
        if self.upstreams is None:
            raise RuntimeError("the front door's upstream clients are not open (outside the app's lifespan)")
        return self.upstreams

    @property
    def host(self) -> EpisodeHost:
        """The episode host; :class:`NoEpisodeHost` when this door serves no environments."""
        if self.episodes is None:
            raise NoEpisodeHost("this front door serves no environments: give it an environment server")
        return self.episodes


class NoEpisodeHost(RuntimeError):
    """An environment route was called on a door without an episode host (answered 501)."""


#: An adapter: the routes it adds to the front door.
RouteFactory = Callable[[FrontDoor], list[BaseRoute]]
