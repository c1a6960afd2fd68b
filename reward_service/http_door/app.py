"""The ASGI application of the front door: routes of every adapter, auth, health, metrics.

``create_app(config)`` builds a Starlette app; the upstream clients open in its lifespan
(inside the server's event loop). Each adapter module exposes ``routes(door) -> list[Route]``
(``door.py``: what the routes share) and translates only; errors of ours are never rewards (see
each adapter for what its protocol gets instead of an unscored result).
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reward_core.clients.errors import ClientError
from reward_core.episode_contract import EpisodeHost
from reward_service.http_door import gym_env
from reward_service.http_door.adapters import ALL_ADAPTERS
from reward_service.http_door.door import DoorConfig, FrontDoor, RouteFactory
from reward_service.http_door.errors import upstream_failure
from reward_service.http_door.nemo_gym import root_routes
from reward_service.http_door.routing import MatchCachingRouter
from reward_service.http_door.upstream import Upstreams

logger = logging.getLogger(__name__)

#: Paths any caller may use without the token (probes, scrapers).
OPEN_PATHS = ("/healthz", "/metrics", "/v1/ping")


def create_app(config: DoorConfig, adapters: list[RouteFactory] | None = None,
               episodes: EpisodeHost | None = None) -> Starlette:
    """The app with the given adapters' routes (default: every adapter); ``episodes`` runs the
    environment routes' sessions (ORS, Gym, OpenEnv; default: the upstream EnvironmentService's client)."""
    door = FrontDoor(config, episodes=episodes)
    if adapters is None:
        adapters = ALL_ADAPTERS

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        door.upstreams = Upstreams(config.upstream)
        if episodes is None:
            door.episodes = door.upstreams.environments
        try:
            yield
        finally:
            for release in door.on_shutdown:  # the adapters' open sessions
                await release()
            await door.upstreams.close()
            door.upstreams = None
            door.episodes = episodes

    async def healthz(_: Request) -> Response:
        states = await door.up.healthy()
        ok = states.get("reward", False)
        return JSONResponse({"status": "SERVING" if ok else "NOT_SERVING", "upstreams": states},
                            status_code=200 if ok else 503)

    async def metrics(_: Request) -> Response:
        return Response(generate_latest(door.registry), media_type=CONTENT_TYPE_LATEST)

    routes: list[BaseRoute] = [Route("/healthz", healthz, methods=["GET"]),
                               Route("/metrics", metrics, methods=["GET"])]
    for factory in adapters:
        routes.extend(factory(door))
    if config.nemo_gym_reward:  # NeMo Gym calls /verify etc. at the root of a resources server
        routes.extend(root_routes(config.nemo_gym_reward)(door))
    if config.nemo_gym_environment:  # a multi-turn environment there: /seed_session, /<tool>, /verify, /reset, /step
        if config.nemo_gym_reward:
            raise ValueError("--nemo-gym-reward and --nemo-gym-environment both serve NeMo Gym's root routes: give one")
        routes.extend(gym_env.root_routes(config.nemo_gym_environment)(door))

    # An upstream call no adapter answered (e.g. listing environments while the EnvironmentService is gone): the
    # call's own status (503 for UNAVAILABLE, 504 for a deadline...) in our words, never a bare 500.
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={ClientError: upstream_failure, grpc.RpcError: upstream_failure},
                    middleware=[Middleware(AuthAndMetrics, door=door, routes=routes, token=config.token)])
    app.router = MatchCachingRouter(routes, lifespan=lifespan)  # Starlette's, each path's match remembered
    app.state.door = door
    return app


class AuthAndMetrics:
    """Pure ASGI middleware (cheaper per call than BaseHTTPMiddleware): the bearer token check,
    then calls and latency by route template and status."""

    def __init__(self, app: ASGIApp, door: FrontDoor, routes: list[BaseRoute], token: str) -> None:
        self.app = app
        self.door = door
        self.routes = routes
        self.token = token
        self._labels: dict[tuple[str, str], str] = {}

    def _label(self, scope: Scope) -> str:
        """The matched route's path template (bounded cardinality), or "unmatched"; cached by path."""
        key = (scope.get("method", ""), scope.get("path", ""))
        label = self._labels.get(key)
        if label is None:
            label = "unmatched"
            for route in self.routes:
                match, _ = route.matches(scope)
                if match == Match.FULL:
                    label = getattr(route, "path", "unmatched")
                    break
            if len(self._labels) < 10_000:  # paths carry reward names: keep the cache bounded
                self._labels[key] = label
        return label

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and self.token:  # OpenEnv's /ws: the same token, refused before accept
            header = dict(scope.get("headers") or ()).get(b"authorization", b"").decode("latin-1")
            problem = _token_problem(header, self.token)
            if problem:
                logger.warning("refused websocket %s: %s", scope["path"], problem)
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008, "reason": problem[:120]})
                return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        label = self._label(scope)
        if self.token and not scope["path"].startswith(OPEN_PATHS):
            headers = dict(scope.get("headers") or ())
            header = headers.get(b"authorization", b"").decode("latin-1")
            if not header and headers.get(b"x-api-key"):  # the ORS client's carrier of its API key
                header = "Bearer " + headers[b"x-api-key"].decode("latin-1")
            problem = _token_problem(header, self.token)
            if problem:
                logger.warning("refused %s %s: %s", scope.get("method"), scope["path"], problem)
                self.door.requests.labels(label, "401").inc()
                response = JSONResponse({"error": problem}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        status = {"code": 500}

        async def send_and_note(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            self.door.requests.labels(label, str(status["code"])).inc()
            self.door.seconds.labels(label).observe(time.perf_counter() - start)


def _token_problem(header: str, token: str) -> str:
    scheme, _, presented = header.partition(" ")
    if not header:
        return ("this server requires 'Authorization: Bearer <token>' (or 'X-API-Key: <token>') "
                "and the call carried none")
    if scheme.lower() != "bearer" or not presented:
        return "the Authorization header is not 'Bearer <token>'"
    if not hmac.compare_digest(presented.strip().encode(), token.encode()):
        return "the bearer token is not accepted"
    return ""
