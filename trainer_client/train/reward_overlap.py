"""Scoring that overlaps generation: an asyncio reward client on a background thread.

    with EmbeddedRewardServer(run_dir / "reward_server.log") as server, \\
            OverlappedScorer(server.address) as scorer:
        job = scorer.submit(groups)          # returns at once; scoring runs on the loop thread
        ...                                  # generate the next prompts meanwhile
        results = scorer.wait(job)           # list[GroupResult]; time spent here is wait_s

The trainer submits each ``generate`` call's groups as soon as they exist, so the reward
service verifies them while the next prompts are being sampled; only the time actually
spent blocked in ``wait`` counts as "wait for reward". A call that fails as a whole
(deadline, service down after gRPC's own retries) comes back as every rollout of those
groups *unscored* (status ERROR, reward None): masked and counted, never read as 0.

``EmbeddedRewardServer`` is the CPU-demo default: ``python -m reward_service serve`` in a
child process on loopback, waited for with the standard health check, stopped with
SIGTERM (graceful drain) at the end.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward_core.channel_security import open_channel
from reward_core.clients import AsyncRewardClient, ClientError, GroupResult
from reward_core.contract import GroupStats, RolloutResult, RolloutStatus, TaskInfo
from reward_core.ports import free_port
from trainer_client.train.config import RewardConfig

logger = logging.getLogger(__name__)

SERVICE = "reward.v1.RewardService"


class RewardServerError(RuntimeError):
    """The embedded reward server did not come up (its log file says why)."""


def wait_until_serving(address: str, timeout_s: float) -> None:
    """Blocks until the server's health check says SERVING (``wait_for_ready``, no sleep-polling)."""
    with open_channel(address) as channel:  # TLS when the REWARD_SUITE_* environment says so
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE),
                                                          timeout=timeout_s, wait_for_ready=True)
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        raise RewardServerError(f"reward server at {address} reports {reply.status}, not SERVING")


class EmbeddedRewardServer:
    """A reward server child process on loopback for the length of a ``with`` block."""

    def __init__(self, log_path: str | Path, workers: int = 1, rewards_config: str | None = None,
                 startup_timeout_s: float = 60.0, host: str = "127.0.0.1", serve_environments: bool = False) -> None:
        self.log_path = Path(log_path)
        self.address = f"{host}:{free_port(host)}"
        self.command = [sys.executable, "-m", "reward_service", "serve", "--host", host,
                        "--port", self.address.rsplit(":", 1)[1], "--workers", str(workers), "--grace-s", "2",
                        "--exit-with-parent"]  # never orphaned: it drains and exits if the trainer dies
        if rewards_config:
            self.command += ["--config", rewards_config]
        if serve_environments:  # episodes (trainer_client.train.episodes): the environment service beside it
            self.command += ["--serve-environments", "--env-calculator-workers", str(workers),
                             "--env-verify-workers", str(workers), "--env-sandbox-concurrency", str(workers)]
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> EmbeddedRewardServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            wait_until_serving(self.address, self.startup_timeout_s)
        except grpc.RpcError as exc:
            self.stop()
            raise RewardServerError(f"embedded reward server did not start within {self.startup_timeout_s}s "
                                    f"(exit code {self.process.returncode}); see {self.log_path}") from exc
        logger.info("embedded reward server pid %d serving on %s (log: %s)", self.process.pid, self.address,
                    self.log_path)
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            logger.warning("reward server pid %d ignored SIGTERM for %.0fs; killing it", self.process.pid, timeout_s)
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> EmbeddedRewardServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class ScoringJob:
    """Groups on their way to the reward service."""

    groups: list[list[dict[str, Any]]]
    future: concurrent.futures.Future
    submitted_at: float = field(default_factory=time.perf_counter)
    done_at: float | None = None


def unscored_groups(groups: Sequence[Sequence[Mapping[str, Any]]], error: str) -> list[GroupResult]:
    """Every rollout of ``groups`` as unscored (ERROR) -- for a call that failed as a whole."""
    out = []
    for gi, group in enumerate(groups):
        gid = str(group[0].get("group_id") or f"g{gi}") if group else f"g{gi}"
        results = [RolloutResult(str(r["id"]), RolloutStatus.ERROR, error=error, task=str(r.get("task", "")),
                                 group_id=gid) for r in group]
        out.append(GroupResult(gid, results, GroupStats(gid, len(results), 0, 0.0, 0.0, False)))
    return out


class OverlappedScorer:
    """``AsyncRewardClient`` on its own event-loop thread; ``submit`` from any thread, ``wait`` to collect."""

    def __init__(self, endpoint: str, timeout_s: float = 120.0, item_timeout_s: float = 0.0) -> None:
        self.endpoint = endpoint
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="reward-loop", daemon=True)
        self._thread.start()
        self._client = self._run(self._make_client(endpoint, timeout_s, item_timeout_s)).result()
        self.wait_s = 0.0  # total time spent blocked in wait()
        try:  # before step 0: an unreachable endpoint is said within seconds, not after a step's generation
            self._run(self._client.check_connection()).result()
        except BaseException:
            self.close()
            raise

    async def _make_client(self, endpoint: str, timeout_s: float, item_timeout_s: float) -> AsyncRewardClient:
        return AsyncRewardClient(endpoint, timeout_s=timeout_s, item_timeout_s=item_timeout_s)

    def _run(self, coro: Any) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def list_tasks(self) -> list[TaskInfo]:
        """The reward service's tasks (ListTasks)."""
        return self._run(self._client.list_tasks()).result()

    def submit(self, groups: list[list[dict[str, Any]]]) -> ScoringJob:
        """Starts scoring ``groups`` (rollout dicts with ids unique in the call) and returns at once."""
        job = ScoringJob(groups, self._run(self._client.score_groups(groups)))
        job.future.add_done_callback(lambda _: setattr(job, "done_at", time.perf_counter()))
        return job

    def wait(self, job: ScoringJob) -> list[GroupResult]:
        """The job's results (one GroupResult per group, in order); failed calls come back unscored."""
        started = time.perf_counter()
        try:
            return job.future.result()
        except (grpc.RpcError, ValueError, asyncio.TimeoutError) as exc:
            # the client's own errors say it in our words; a raw gRPC error by its details
            message = exc.details() if isinstance(exc, grpc.RpcError) and not isinstance(exc, ClientError) else str(exc)
            logger.warning("scoring %d groups failed as a whole (%s); their rollouts count as unscored",
                           len(job.groups), message)
            return unscored_groups(job.groups, f"request failed: {message}")
        finally:
            self.wait_s += time.perf_counter() - started

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._run(self._client.close()).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> OverlappedScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def open_scorer(config: RewardConfig, run_dir: str | Path,
                serve_environments: bool = False) -> Iterator[OverlappedScorer]:
    """The run's scorer: on an embedded server (``RUN_DIR/reward_server.log``) or on ``config.endpoint``.

    ``serve_environments``: the embedded server also serves the environment service (episodes)."""
    with contextlib.ExitStack() as stack:
        endpoint = config.endpoint
        if config.embedded:
            server = EmbeddedRewardServer(Path(run_dir) / "reward_server.log", config.workers, config.rewards_config,
                                          config.startup_timeout_s, serve_environments=serve_environments)
            endpoint = stack.enter_context(server).address
        yield stack.enter_context(OverlappedScorer(endpoint, config.timeout_s, config.item_timeout_s))
