"""The ways the episode benchmark and soak reach an environment (``--via``), and what they read after.

* ``inprocess`` -- :func:`create_session_manager` in this process (no transport: the host's floor);
* ``grpc`` -- ``reward-service serve --serve-environments`` in its own process, driven through
  ``reward_core.clients.environment.EnvironmentClient`` (one stream per episode);
* ``ors`` -- the same server behind ``reward-service serve-http`` (the door holds the streams),
  driven with the ``openreward`` package's own client (SSE per call).

Each path opens episodes as :class:`~episode_policy.EpisodeHandle` s and reads the leak figures: the
sessions the host and the door still hold, the host's work in flight, its processes and memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from episode_policy import Step

from reward_core.episode_contract import EpisodeError, EpisodeHost, EpisodeSpec, EpisodeStatus, ToolCall
from reward_core.ports import free_port

VIAS = ("inprocess", "grpc", "ors")
REPO = Path(__file__).resolve().parent.parent


class TypedFailure(Exception):
    """An episode ended unscored on our side; ``kind`` names the status (what the soak counts)."""

    def __init__(self, kind: str, message: str = "") -> None:
        super().__init__(f"{kind}: {message}" if message else kind)
        self.kind = kind


_STATUS_IN_TEXT = re.compile(r"\b(" + "|".join(s.name for s in EpisodeStatus if s.ended) + r")\b")
_HTTP_REFUSAL = re.compile(r"\b(429|503)\b")


def ending(exc: BaseException) -> str:
    """The label of an episode that raised: a typed failure by its status, anything else by its type.

    Through ORS a failure of ours is the ``openreward`` client's ``ToolFailed`` whose message carries the
    status name (the door's SSE ``error`` event), and a refusal or an unavailable server an HTTP 429/503
    (``Retry-After``): labelled ``REFUSED`` / ``UNAVAILABLE (HTTP 503)``.
    """
    if isinstance(exc, TypedFailure):
        return exc.kind
    if isinstance(exc, EpisodeError):
        return exc.status.name
    text = str(exc)
    if type(exc).__name__ == "ToolFailed" and (found := _STATUS_IN_TEXT.search(text)):
        return found.group(1)
    if type(exc).__module__.startswith("openreward") and (found := _HTTP_REFUSAL.search(text)):
        return "REFUSED" if found.group(1) == "429" else "UNAVAILABLE (HTTP 503)"
    return f"{type(exc).__name__}: {text[:70]}"


# --- episodes ---------------------------------------------------------------------------------------

@dataclass
class HostEpisode:
    """An episode on an :class:`EpisodeHost` (the in-process manager or the gRPC client)."""

    host: EpisodeHost
    session_id: str
    prompt: str

    async def call(self, name: str, arguments: dict[str, Any]) -> Step:
        result = await self.host.call_tool(self.session_id, ToolCall(name, arguments))
        if result.status not in (EpisodeStatus.RUNNING, EpisodeStatus.FINISHED):
            raise TypedFailure(result.status.name, result.error)
        return Step(result.output, result.reward, result.finished, result.elapsed_ms)


@contextlib.asynccontextmanager
async def host_episode(host: EpisodeHost, spec: EpisodeSpec) -> AsyncIterator[HostEpisode]:
    start = await host.open(spec)
    prompt = "\n".join(str(m.get("content") or "") for m in start.messages if m.get("role") == "user")
    try:
        yield HostEpisode(host, start.session_id, prompt)
    finally:
        await host.close(start.session_id)


@dataclass
class OrsEpisode:
    """An episode through the ORS door with the ``openreward`` client's session."""

    session: Any
    prompt: str

    async def call(self, name: str, arguments: dict[str, Any]) -> Step:
        out = await self.session.call_tool(name, arguments)
        text = " ".join(getattr(block, "text", "") for block in out.blocks)
        return Step(text, out.reward, bool(out.finished), float((out.metadata or {}).get("elapsed_ms", 0.0)))


@contextlib.asynccontextmanager
async def ors_episode(env: Any, spec: EpisodeSpec, cancelled_opening: list[int]) -> AsyncIterator[OrsEpisode]:
    """An ORS session; ``cancelled_opening[0]`` counts those cancelled while ``env.session()`` was entered
    (the ``openreward`` client then never deletes the session it may have made)."""
    if spec.row:  # our own row as the task spec (``/create`` takes a row of our shape)
        from openreward.api.environments.types import Task

        task = Task(env.server, spec.environment,
                    {"prompt": spec.row["prompt"], "reference": {"answer": spec.row["answer"]}}, None)
        session_cm = env.session(task=task)
    else:
        session_cm = env.session(split=spec.split, index=spec.index)
    entered = False
    try:
        async with session_cm as session:
            entered = True
            prompt = " ".join(getattr(b, "text", "") for b in await session.get_prompt())
            yield OrsEpisode(session, prompt)
    except asyncio.CancelledError:
        if not entered:
            cancelled_opening[0] += 1
        raise


# --- servers ----------------------------------------------------------------------------------------

@dataclass
class Served:
    """What a path started: processes, addresses, and how to open an episode."""

    via: str
    open: Callable[[EpisodeSpec], contextlib.AbstractAsyncContextManager]
    server: subprocess.Popen | None = None
    door: subprocess.Popen | None = None
    endpoint: str = ""
    metrics_url: str = ""
    door_url: str = ""
    manager: Any = None
    #: ORS only: episodes cancelled while the client's session was being entered (see ``ors_episode``).
    cancelled_opening: list[int] = field(default_factory=lambda: [0])

    @property
    def host_pid(self) -> int:
        """The process whose tree holds the episodes' machinery."""
        return self.server.pid if self.server is not None else os.getpid()


def server_command(grpc_port: int, metrics_port: int, sessions: int, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "reward_service", "--log-level", "WARNING", "serve", "--host", "127.0.0.1",
            "--port", str(grpc_port), "--serve-environments", "--workers", "1", "--metrics-port", str(metrics_port),
            "--env-max-sessions", str(sessions), "--env-calculator-workers", "2", "--env-verify-workers", "1",
            "--exit-with-parent", *extra]


def start_processes(via: str, sessions: int, log_dir: Path, extra: list[str]) -> tuple[subprocess.Popen,
                                                                                       subprocess.Popen | None,
                                                                                       str, str, str]:
    """The environment server (and for ``ors`` the door) in their own processes; waits until they answer."""
    grpc_port, metrics_port, http_port = free_port(), free_port(), free_port()
    with open(log_dir / "server.log", "wb") as log:
        server = subprocess.Popen(server_command(grpc_port, metrics_port, sessions, extra), stdout=log,
                                  stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)
    door, door_url = None, ""
    if via == "ors":
        with open(log_dir / "door.log", "wb") as log:
            door = subprocess.Popen([sys.executable, "-m", "reward_service", "--log-level", "WARNING", "serve-http",
                                     "--host", "127.0.0.1", "--upstream", f"127.0.0.1:{grpc_port}",
                                     "--port", str(http_port)], stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                    start_new_session=True)
        door_url = f"http://127.0.0.1:{http_port}"
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    wait_http(metrics_url, server)
    if door is not None:
        wait_http(f"{door_url}/health", door)
    return server, door, f"127.0.0.1:{grpc_port}", metrics_url, door_url


def wait_http(url: str, process: subprocess.Popen, deadline_s: float = 180.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the process for {url} exited with {process.returncode} (see its log)")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {deadline_s:g} s")


@contextlib.asynccontextmanager
async def serve(via: str, sessions: int, log_dir: Path, extra: tuple[str, ...] = (),
                manager_config: Any = None) -> AsyncIterator[Served]:
    """Starts the path's host (and door) and yields how to open episodes on it; stops everything after."""
    if via not in VIAS:
        raise ValueError(f"--via {via!r}: choose one of {VIAS}")
    if via == "inprocess":
        from reward_service.environments.env_config import EnvironmentsConfig
        from reward_service.environments.sessions import create_session_manager

        config = manager_config or EnvironmentsConfig(max_sessions=sessions, calculator_workers=2, verify_workers=1)
        manager = await asyncio.get_running_loop().run_in_executor(None, create_session_manager, config)
        try:
            yield Served(via, lambda spec: host_episode(manager, spec), manager=manager)
        finally:
            await manager.aclose()
        return
    server, door, endpoint, metrics_url, door_url = start_processes(via, sessions, log_dir, list(extra))
    try:
        if via == "grpc":
            from reward_core.clients.environment import EnvironmentClient

            async with EnvironmentClient(endpoint, timeout_s=120.0) as client:
                yield Served(via, lambda spec: host_episode(client, spec), server, None, endpoint, metrics_url)
        else:
            os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
            from openreward import AsyncOpenReward

            client = AsyncOpenReward(api_key="", base_url=door_url)
            try:
                envs: dict[str, Any] = {}

                def open_ors(spec: EpisodeSpec) -> contextlib.AbstractAsyncContextManager:
                    if spec.environment not in envs:
                        envs[spec.environment] = client.environments.get(spec.environment, base_url=door_url)
                    return ors_episode(envs[spec.environment], spec, served.cancelled_opening)

                served = Served(via, open_ors, server, door, endpoint, metrics_url, door_url)
                yield served
            finally:
                await client.environments.aclose()
    finally:
        stop(door, server)


def stop(*processes: subprocess.Popen | None, grace_s: float = 30.0) -> None:
    """SIGTERM each (a drain), then SIGKILL what did not exit within ``grace_s``."""
    for process in processes:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        if process is None:
            continue
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


# --- what is left -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Leftovers:
    """What the host holds at one moment: sessions, work, processes and memory."""

    sessions_open: float  # the host's open episodes (admission slots held)
    sessions_held: float  # sessions the host still keeps (running or ended, not closed)
    door_sessions: float  # ORS sessions the door keeps
    work_in_flight: float  # tool work running (in process only: -1 when unknown)
    processes: int  # processes below the host
    rss_mb: float  # resident memory of the host and its processes


def metric(text: str, name: str) -> float:
    """The sum of a Prometheus series' samples (0 if absent)."""
    return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def tree(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def tree_rss_mb(pid: int) -> float:
    total = 0
    for process in [psutil.Process(pid), *tree(pid)]:
        with contextlib.suppress(psutil.Error):
            total += process.memory_info().rss
    return total / 2**20


async def leftovers(served: Served) -> Leftovers:
    """The leak figures now (read after the episodes' clients have closed them)."""
    processes, rss = len(tree(served.host_pid)), tree_rss_mb(served.host_pid)
    if served.manager is not None:
        manager = served.manager
        return Leftovers(manager.admission.open, manager.session_count(), 0, manager.work_in_flight(), processes, rss)
    async with httpx.AsyncClient(timeout=10) as http:
        server_text = (await http.get(served.metrics_url)).text
        door_text = (await http.get(f"{served.door_url}/metrics")).text if served.door_url else ""
    held = metric(server_text, "reward_episode_opened_total") - metric(server_text, "reward_episode_ended_total")
    return Leftovers(metric(server_text, "reward_episode_sessions"), held, metric(door_text, "http_door_ors_sessions"),
                     -1, processes, rss)


async def settle(served: Served, within_s: float = 15.0, door: bool = True) -> Leftovers:
    """The leak figures once the host (and with ``door``, the door) has released what its clients closed, or
    after ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        left = await leftovers(served)
        if (left.sessions_open == 0 and (left.door_sessions == 0 or not door) and left.work_in_flight <= 0) \
                or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.2)
