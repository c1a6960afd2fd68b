"""The reward server: ``create_server`` builds and starts one (tests use port 0); ``serve`` runs it.

Start order matters: the Scorer (and its worker processes) exists before any
gRPC server or channel, so no worker is ever forked from a threaded gRPC process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict

from reward.v1 import environment_pb2, reward_pb2, sandbox_pb2
from reward_core.server_security import ServerSecurity, prepare
from reward_core.server_shell import AioServerShell
from reward_core.stop_signals import stop_on_signals, wait_until_set
from reward_service.router.canary_check import CanaryFailure, failure_message
from reward_service.router.code_executor import shared_sandbox_servicer
from reward_service.router.config import ServerConfig
from reward_service.router.hosted_services import HostContext, HostedService, ServiceAddOn
from reward_service.router.metrics import RewardMetrics
from reward_service.router.scoring import Scorer
from reward_service.router.servicer import RewardServicer
from reward_service.tasks.code_task import CodeTask
from sandbox.servicer import SandboxServicer

logger = logging.getLogger(__name__)

SERVICE = reward_pb2.DESCRIPTOR.services_by_name["RewardService"]
SANDBOX_SERVICE = sandbox_pb2.DESCRIPTOR.services_by_name["SandboxService"]
ENVIRONMENT_SERVICE = environment_pb2.DESCRIPTOR.services_by_name["EnvironmentService"]
SERVICE_NAME = SERVICE.full_name

#: On shutdown, calls still waiting are handed back (partial results) this long before the
#: grace period ends, so their answers are written before the server closes.
HAND_BACK_MARGIN_S = 2.0


def task_health_name(task: str) -> str:
    """The health-check service name of one task: ``reward.v1.RewardService/task/<task>``."""
    return f"{SERVICE_NAME}/task/{task}"


class RewardServer:
    """A started server: ``port`` is the bound port; ``stop()`` drains and shuts down.

    ``extra_services``: add-ons a layer above builds services from (``hosted_services``), served on
    the same port; ``hosted`` holds what they built, in their order.
    """

    def __init__(self, config: ServerConfig, scorer: Scorer, owns_scorer: bool,
                 security: ServerSecurity | None = None, extra_services: Sequence[ServiceAddOn] = ()) -> None:
        self.config = config
        self.security = prepare(config.security, config.host) if security is None else security
        self.scorer = scorer
        self._owns_scorer = owns_scorer
        self.metrics = RewardMetrics(known_tasks=scorer.registry.names())
        self.metrics.attach_pool(scorer.pool)
        if scorer.cache is not None:
            self.metrics.attach_reward_cache(scorer.cache)
        self.servicer = RewardServicer(scorer, config.limits, self.metrics)
        services = [(SERVICE, self.servicer)]
        self.sandbox_servicer = self._sandbox_servicer() if config.serve_sandbox else None
        if self.sandbox_servicer is not None:
            services.append((SANDBOX_SERVICE, self.sandbox_servicer))
        # Hosted services (episodes: their session manager's worker processes) start before the gRPC server.
        self.hosted: tuple[HostedService, ...] = ()
        # Health per task (``<service>/task/<name>``): a task whose plugin failed to load is NOT_SERVING.
        health = {task_health_name(name): True for name in scorer.registry.names()}
        health.update({task_health_name(name): False for name in scorer.registry.plugin_failures})
        try:
            self.hosted = _build_hosted(extra_services, HostContext(scorer, self.metrics.registry))
            for hosted in self.hosted:
                services.extend(hosted.services)
                health.update(hosted.health)
            _check_environments_hosted(config, services)
            self.shell = AioServerShell("reward", services, self.security, config.host,
                                        config.port, config.grpc_options(), max_request_mb=config.max_message_mb,
                                        service_health=health)
        except BaseException:
            asyncio.run(_aclose_all(self.hosted))
            raise
        self.port = self.shell.port
        self._stopped = False
        if config.metrics_port:
            self.metrics.serve_http(config.metrics_port, config.metrics_host or config.host)

    def _sandbox_servicer(self) -> SandboxServicer | None:
        """A SandboxService on the local ``code`` task's executor (None without one)."""
        names = sorted(self.scorer.registry.names(), key=lambda n: n != "code")
        for name in names:
            task = self.scorer.registry.get(name)
            if isinstance(task, CodeTask):
                return shared_sandbox_servicer(task)
        return None

    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    def begin_drain(self) -> None:
        """Health NOT_SERVING and new calls UNAVAILABLE; calls in flight go on (``stop`` finishes)."""
        self.servicer.begin_drain()
        if self.sandbox_servicer is not None:
            self.sandbox_servicer.begin_drain()
        for hosted in self.hosted:
            hosted.begin_drain()
        self.shell.set_health(False)

    def stop(self, grace_s: float | None = None) -> None:
        """Graceful shutdown within ``grace_s`` (default: the config's).

        Health turns NOT_SERVING and new calls get UNAVAILABLE at once; calls in flight may
        finish until shortly before the grace period ends, when each is handed back with
        what is verified (the rest UNAVAILABLE per rollout, retryable), and each hosted service
        hands back its own and closes (episodes still running end SESSION_LOST, their sessions
        released); then the server closes and the worker processes are stopped.
        """
        if self._stopped:
            return
        self._stopped = True
        grace = self.config.grace_s if grace_s is None else grace_s
        margin = min(HAND_BACK_MARGIN_S, grace / 4)
        self.shell.stop(margin, lambda: self._drain(grace - margin))
        self.metrics.close()
        if self.sandbox_servicer is not None:
            self.sandbox_servicer.close()
        if self._owns_scorer:
            self.scorer.close()

    async def _drain(self, wait_s: float) -> None:
        self.servicer.begin_drain()
        if self.sandbox_servicer is not None:
            self.sandbox_servicer.begin_drain()
        for hosted in self.hosted:
            hosted.begin_drain()
        deadline = time.monotonic() + wait_s
        while self._active_calls() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self.servicer.flush()
        for hosted in self.hosted:  # e.g. episodes still running end SESSION_LOST, their sessions released
            await hosted.hand_back()
            await hosted.aclose()

    def _active_calls(self) -> int:
        sandbox = self.sandbox_servicer.active_calls if self.sandbox_servicer is not None else 0
        return self.servicer.active_calls + sandbox + sum(hosted.active_calls for hosted in self.hosted)

    def wait(self) -> None:
        self.shell.wait()


def _build_hosted(add_ons: Sequence[ServiceAddOn], context: HostContext) -> tuple[HostedService, ...]:
    """Each add-on's hosted service, in order; when one fails, those built before it are closed."""
    built: list[HostedService] = []
    try:
        for add_on in add_ons:
            built.append(add_on(context))
    except BaseException:
        asyncio.run(_aclose_all(built))
        raise
    return tuple(built)


async def _aclose_all(hosted: Sequence[HostedService]) -> None:
    for service in hosted:
        await service.aclose()


def _check_environments_hosted(config: ServerConfig, services: Sequence[tuple[object, object]]) -> None:
    """``serve_environments`` needs the environments' add-on (this module cannot build it: the layer above)."""
    if config.serve_environments and not any(service is ENVIRONMENT_SERVICE for service, _ in services):
        raise ValueError("serve_environments is set but no EnvironmentService was added: build the server with "
                         "reward_service.environments.hosting.create_server (or serve)")


def create_server(config: ServerConfig, scorer: Scorer | None = None,
                  extra_services: Sequence[ServiceAddOn] = ()) -> RewardServer:
    """Builds and starts a server (and its Scorer, unless one is given, which it then won't close).

    ``extra_services``: add-ons built into services served on the same port (``hosted_services``);
    with ``serve_environments`` one must add the EnvironmentService (``reward_service.environments.hosting``).

    Raises ValueError when the bind policy refuses ``config.host`` -- before any worker starts -- and
    CanaryFailure (a ValueError) when ``strict_canaries`` is set and a task rewarded a canary: it then
    waits for the canaries before serving.
    """
    security = prepare(config.security, config.host)
    owns = scorer is None
    scorer = scorer or Scorer(config.scorer)
    try:
        if config.strict_canaries:
            scorer.startup_checks.wait()
            if scorer.self_check_report.canary_failures:
                raise CanaryFailure(failure_message(scorer.self_check_report.canaries))
        return RewardServer(config, scorer, owns, security, extra_services)
    except (OSError, RuntimeError, ValueError):
        if owns:
            scorer.close()
        raise


#: How often an embedded server checks that its parent is alive.
PARENT_CHECK_S = 1.0


def watch_parent(stop: threading.Event, interval_s: float = PARENT_CHECK_S) -> threading.Thread:
    """Sets ``stop`` once this process's parent is gone (it is re-parented: ``getppid`` changes).

    Polling works whatever thread started us and needs no ``preexec_fn`` (unsafe in a threaded
    trainer), unlike PR_SET_PDEATHSIG.
    """
    parent = os.getppid()

    def watch() -> None:
        while not stop.wait(interval_s):
            if os.getppid() != parent:
                logger.warning("parent process %d is gone: draining and exiting", parent)
                stop.set()
    thread = threading.Thread(target=watch, name="parent-watch", daemon=True)
    thread.start()
    return thread


def serve(config: ServerConfig, extra_services: Sequence[ServiceAddOn] = ()) -> None:
    """Runs until SIGTERM/SIGINT (or, with ``exit_with_parent``, its parent's death), then drains.

    ``extra_services``: as for :func:`create_server`."""
    logger.info("starting reward server with config %s", asdict(config))
    stop = stop_on_signals()     # first: a SIGTERM that arrives while the server starts still drains it
    server = create_server(config, extra_services=extra_services)
    if config.exit_with_parent:
        watch_parent(stop)
    logger.info("reward server listening on %s with tasks %s; %s", server.address, server.scorer.registry.summary(),
                server.security.describe())
    wait_until_set(stop)
    logger.info("draining (grace %.1fs)", config.grace_s)
    server.stop()
    logger.info("stopped")
