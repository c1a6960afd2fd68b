"""Serving episodes on the reward server's port: ``reward-service serve --serve-environments``.

The environments verify answers with the router's scorer, so they sit above the router: the reward
server (``reward_service.router.server``) knows nothing of them and takes them as an add-on
(``reward_service.router.hosted_services``). :func:`create_server` and :func:`serve` build that
server with the EnvironmentService added when the config's ``serve_environments`` is set, and are
the router's own otherwise::

    server = create_server(ServerConfig(port=0, serve_environments=True))
    sessions_of(server).session_count()
    server.stop()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf.descriptor import ServiceDescriptor

from reward.v1 import environment_pb2
from reward_service.environments.answer_check import ScorerVerifier
from reward_service.environments.servicer import EnvironmentServicer
from reward_service.environments.sessions import SessionManager, create_session_manager
from reward_service.router import server as router_server
from reward_service.router.config import ServerConfig
from reward_service.router.environments_config import EnvironmentsConfig
from reward_service.router.hosted_services import HostContext, ServiceAddOn
from reward_service.router.scoring import Scorer

ENVIRONMENT_SERVICE = environment_pb2.DESCRIPTOR.services_by_name["EnvironmentService"]


class HostedEnvironments:
    """The EnvironmentService over a session manager of its own (a ``HostedService`` of the reward server)."""

    def __init__(self, sessions: SessionManager) -> None:
        self.sessions = sessions
        self.servicer = EnvironmentServicer(sessions)

    @property
    def services(self) -> Sequence[tuple[ServiceDescriptor, Any]]:
        return ((ENVIRONMENT_SERVICE, self.servicer),)

    @property
    def health(self) -> Mapping[str, bool]:
        return {}

    @property
    def active_calls(self) -> int:
        return self.servicer.active_calls

    def begin_drain(self) -> None:
        self.servicer.begin_drain()

    async def hand_back(self) -> None:
        """Episodes still running end SESSION_LOST, their sessions released."""
        await self.servicer.hand_back()

    async def aclose(self) -> None:
        await self.sessions.aclose()


def environments_add_on(config: EnvironmentsConfig) -> ServiceAddOn:
    """An add-on serving episodes: a session manager (its worker processes) verifying with the server's scorer."""

    def build(context: HostContext) -> HostedEnvironments:
        sessions = create_session_manager(config, verifier=ScorerVerifier(context.scorer),
                                          metrics_registry=context.metrics_registry)
        return HostedEnvironments(sessions)
    return build


def add_ons(config: ServerConfig) -> tuple[ServiceAddOn, ...]:
    """What ``config`` asks to serve beside the reward service: episodes with ``serve_environments``."""
    return (environments_add_on(config.environments),) if config.serve_environments else ()


def create_server(config: ServerConfig, scorer: Scorer | None = None) -> router_server.RewardServer:
    """The reward server of ``config``, serving episodes too when ``serve_environments`` is set
    (``reward_service.router.server.create_server`` otherwise, and for what it raises)."""
    return router_server.create_server(config, scorer, extra_services=add_ons(config))


def serve(config: ServerConfig) -> None:
    """``reward-service serve``: runs the server of ``config`` until a stop signal, then drains."""
    router_server.serve(config, extra_services=add_ons(config))


def sessions_of(server: router_server.RewardServer) -> SessionManager:
    """The session manager of a server built by :func:`create_server` with ``serve_environments``."""
    for hosted in server.hosted:
        if isinstance(hosted, HostedEnvironments):
            return hosted.sessions
    raise ValueError("this server serves no environments (build it with serve_environments)")
