"""The reward-model server: ``create_rm_server`` builds and starts one (tests use port 0).

    python -m reward_service serve-rm --checkpoint runs/rm/final --port 50052

It runs on the suite's server shell (``reward_core/server_shell.py``: ``grpc.aio`` on its own
event-loop thread, health, reflection, TLS/token), so calls waiting for their scores hold no
thread and health checks are answered whatever the load. The port is bound before the
checkpoint loads, so health checks answer at once: NOT_SERVING until the model is loaded and
warmed up (one dummy forward pass), then SERVING; NOT_SERVING again while draining (SIGTERM or
``stop``: new calls UNAVAILABLE, calls in flight get ``--grace-s`` to finish). ``Reload`` loads
only checkpoints under ``--checkpoint-root`` (default: the directory holding ``--checkpoint``),
and needs the bearer token like every other call when one is configured (see
``reward_core/server_security.py``).
Request limits are in ``request_limits``; Prometheus metrics (``--metrics-port``) in ``rm_metrics``.
"""

from __future__ import annotations

import functools
import logging
import threading
from dataclasses import asdict

from reward_core.server_security import ServerSecurity, prepare
from reward_core.server_shell import AioServerShell
from reward_core.stop_signals import stop_on_signals, wait_until_set
from reward_service.rm.checkpoint import CheckpointError, LoadedRewardModel
from reward_service.rm.config import RewardModelServerConfig
from reward_service.rm.dynamic_batcher import DynamicBatcher
from reward_service.rm.model_holder import Loader, ModelHolder
from reward_service.rm.prm_checkpoint import load_any_checkpoint
from reward_service.rm.rm_metrics import RewardModelMetrics
from reward_service.rm.rm_servicer import SERVICE, RewardModelServicer

logger = logging.getLogger(__name__)


def checkpoint_loader(config: RewardModelServerConfig) -> Loader:
    """Loads a reward-model or PRM checkpoint on the config's device, dtype and max length."""
    return functools.partial(load_any_checkpoint, device=config.device, dtype=config.dtype,
                             max_length=config.max_length)


class RewardModelServer:
    """A started server: ``port`` is the bound port; ``stop()`` drains and shuts down."""

    def __init__(self, config: RewardModelServerConfig, loader: Loader, security: ServerSecurity | None = None) -> None:
        self.config = config
        self.security = prepare(config.security, config.host) if security is None else security
        self.metrics = RewardModelMetrics()
        self.batcher = DynamicBatcher(config.batching, observer=self.metrics)
        self.metrics.track_queue(self.batcher.queued_items)
        self._health_lock = threading.Lock()  # a load finishing never turns a draining server SERVING
        self._stopped = False
        self.holder = ModelHolder(loader, on_loaded=self._on_loaded)
        self.servicer = RewardModelServicer(self.holder, self.batcher, config.limits, config.reload_root(),
                                            self.metrics)
        try:
            self.shell = AioServerShell("rm", [(SERVICE, self.servicer)], self.security, config.host, config.port,
                                        config.grpc_options(), serving=False)  # SERVING once a model is loaded
        except (OSError, RuntimeError):
            self.batcher.close()
            raise
        self.port = self.shell.port
        try:
            if config.metrics_port:
                self.metrics.serve_http(config.metrics_port, config.metrics_host or config.host)
        except OSError:
            self.shell.stop(0)
            self.batcher.close()
            self.metrics.close()
            raise
        self._loading = threading.Thread(target=self.holder.load_initial, args=(config.checkpoint,),
                                         name="rm-initial-load", daemon=True)
        self._loading.start()

    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    def wait_loaded(self, timeout_s: float | None = None) -> bool:
        """Waits for the initial load to finish; True when a model is serving."""
        self.holder.settled.wait(timeout_s)
        return self.holder.loaded

    def _on_loaded(self, model: LoadedRewardModel) -> None:
        """Called on the loading thread (initial load, or Reload on the loop's thread pool)."""
        self.metrics.observe_load(model.load_seconds)
        with self._health_lock:
            if self.servicer.draining.is_set():
                return
            try:
                self.shell.set_health(True)
            except RuntimeError:  # the shell's loop closed under us: the server stopped meanwhile
                logger.debug("model loaded after the server stopped")

    def begin_drain(self) -> None:
        """Reports NOT_SERVING and answers new Score/Reload calls UNAVAILABLE (calls in flight go on)."""
        with self._health_lock:
            self.servicer.draining.set()
            if not self._stopped:  # once stopped, the shell is gone (and reported NOT_SERVING to the end)
                self.shell.set_health(False)

    def stop(self, grace_s: float | None = None) -> None:
        """Drains (see ``begin_drain``); calls in flight get ``grace_s`` (default: the config's) to
        finish, and those still waiting then are cancelled, their queued pairs dropped unrun; then
        the batcher stops and /metrics closes."""
        if self._stopped:
            return
        self._stopped = True
        with self._health_lock:
            self.servicer.draining.set()
        self.shell.stop(self.config.grace_s if grace_s is None else grace_s)  # NOT_SERVING, then the grace
        self.batcher.close()
        self.metrics.close()
        stats = self.batcher.stats()
        logger.info("served %d requests: %d pairs in %d forward passes (%d padded tokens, %d real); %d pairs "
                    "dropped unrun (their call ended first)", stats.requests, stats.items, stats.batches,
                    stats.padded_tokens, stats.real_tokens, stats.dropped_items)

    def wait(self) -> None:
        self.shell.wait()


def create_rm_server(config: RewardModelServerConfig, *, wait_ready: bool = True,
                     loader: Loader | None = None) -> RewardModelServer:
    """Builds and starts a server; the checkpoint loads on a background thread.

    With ``wait_ready`` this returns once the model is loaded and warmed up, and raises
    CheckpointError (after stopping the server) when it cannot be. ``loader`` replaces
    ``load_checkpoint`` (tests use it to slow a load down). Raises ValueError when the bind
    policy refuses ``config.host``.
    """
    security = prepare(config.security, config.host)
    if config.torch_threads:
        import torch

        torch.set_num_threads(config.torch_threads)
    server = RewardModelServer(config, loader or checkpoint_loader(config), security)
    if wait_ready and not server.wait_loaded():
        error = server.holder.load_error
        server.stop(0)
        raise CheckpointError(error)
    return server


def serve_rm(config: RewardModelServerConfig) -> None:
    """Runs until SIGTERM/SIGINT, then drains gracefully; raises CheckpointError if the first load fails."""
    logger.info("starting reward-model server with config %s", asdict(config))
    stop = stop_on_signals()     # first: a SIGTERM that arrives while the server starts still drains it
    server = create_rm_server(config, wait_ready=False)
    logger.info("reward-model server listening on %s; loading %s; %s; Reload root %s; /metrics %s", server.address,
                config.checkpoint, server.security.describe(), config.reload_root(),
                f"on {config.metrics_host or config.host}:{server.metrics.port}" if server.metrics.port else "off")
    while not stop.is_set() and not server.holder.settled.wait(0.5):
        pass
    if server.holder.settled.is_set() and not server.holder.loaded:
        server.stop(0)
        raise CheckpointError(server.holder.load_error)
    wait_until_set(stop)
    logger.info("draining (grace %.1fs)", config.grace_s)
    server.stop()
    logger.info("stopped")
