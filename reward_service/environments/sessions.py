"""The in-process episode host: :class:`SessionManager` implements ``EpisodeHost`` on our environments.

Build one with :func:`create_session_manager` (it starts the sandbox executor, the calculator's
worker pool and the answer verifier, the reward router's Scorer, unless they are given) and close
it with ``await manager.aclose()``::

    manager = create_session_manager(EnvironmentsConfig(max_sessions=8))   # before any gRPC server
    start = await manager.open(EpisodeSpec("arithmetic_tools", split="train", index=0))
    result = await manager.call_tool(start.session_id, ToolCall("calculator", {"expression": "12345 * 67890"}))
    result = await manager.call_tool(start.session_id, ToolCall("submit_answer", {"answer": "838102050"}))
    assert result.finished and result.outcome.reward == 1.0
    await manager.close(start.session_id)
    await manager.aclose()

Admission: at most ``max_sessions`` episodes open; an open waits up to ``queue_timeout_s``, then
REFUSED with a retry hint (``admission.py``). Deadlines: each episode has one (its spec's, or the
default); each tool call ``tool_deadline_s`` (past it TOOL_FAILED; past the episode's deadline
DEADLINE_EXCEEDED; either ends the episode, unscored). Calls of one session run one at a time, in
order. A reaper ends episodes past their deadline and drops sessions idle for ``idle_timeout_s``
(their next call: SESSION_LOST). Ending a session stops its tool calls, kills their programs and
waits up to ``cleanup_deadline_s`` for them; its admission slot is freed when the episode ends,
its record when it is closed or reaped. Use the manager from one event loop.

Its parts: ``session_table.py`` (the sessions held; why the gone are gone), ``admission.py``,
``env_rows.py`` (the row an episode names), ``episode_calls.py`` (tool calls, ``submit_answer``,
``finish``) within ``episode_deadlines.py``, ``episode_ending.py`` (the outcome, the slot, stopping
the work), ``session_reaper.py``, ``trajectory_scoring.py``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry

from reward_core.episode_contract import (
    EnvironmentInfo,
    EpisodeError,
    EpisodeOutcome,
    EpisodeSpec,
    EpisodeSpecError,
    EpisodeStart,
    EpisodeState,
    EpisodeStatus,
    ToolCall,
    ToolResult,
    Trajectory,
    TrajectoryScore,
)
from reward_service.environments import trajectory_scoring
from reward_service.environments.admission import Admission
from reward_service.environments.answer_check import AnswerVerifier
from reward_service.environments.env_api import Environment, InvalidRow
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.env_registry import EnvironmentRegistry, build_environment_registry
from reward_service.environments.env_rows import prompt_text, resolve_row
from reward_service.environments.episode_calls import EpisodeCalls
from reward_service.environments.episode_deadlines import deadline_error
from reward_service.environments.episode_ending import EpisodeEnding
from reward_service.environments.episode_metrics import EpisodeMetrics
from reward_service.environments.session_reaper import SessionReaper
from reward_service.environments.session_state import EpisodeSession
from reward_service.environments.session_table import SessionTable
from reward_service.environments.tool_machinery import start_tools
from reward_service.environments.tool_runner import ToolRunner
from sandbox import Executor


class SessionManager:
    """Runs episodes of the registered environments in this process (see the module docstring)."""

    def __init__(self, environments: EnvironmentRegistry, tools: ToolRunner, config: EnvironmentsConfig, *,
                 clock: Callable[[], float] = time.monotonic, metrics_registry: CollectorRegistry | None = None,
                 on_close: Callable[[], None] | None = None) -> None:
        self.environments, self.tools, self.config = environments, tools, config
        self._clock = clock
        self._on_close = on_close
        self._sessions = SessionTable(config.max_tombstones)
        self.admission = Admission(config.max_sessions, config.queue_timeout_s)
        self.metrics = EpisodeMetrics(lambda: self.admission.open, lambda: self.admission.waiting, metrics_registry)
        self._ending = EpisodeEnding(clock, self.admission, self.metrics, config.cleanup_deadline_s)
        self._calls = EpisodeCalls(tools, config, clock, self._ending)
        self._reaper = SessionReaper(self._sessions, self._ending, self.metrics, config, clock)
        self._closed = False

    # --- EpisodeHost --------------------------------------------------------------------------------

    async def list_environments(self) -> list[EnvironmentInfo]:
        return [EnvironmentInfo(name, env.description, tuple(env.tool_specs()), dict(env.splits()), env.version)
                for name, env in ((n, self.environments.get(n)) for n in self.environments.names())]

    async def open(self, spec: EpisodeSpec) -> EpisodeStart:
        if self._closed:
            raise EpisodeError(EpisodeStatus.REFUSED, "the session manager is closed", retry_after_s=1.0)
        env, row, index = resolve_row(self.environments, self.tools.verifier, spec.environment, spec.row,
                                      spec.split, spec.index, spec.seed)
        try:
            messages, reference = env.prompt(row), env.reference(row)
        except InvalidRow as exc:
            raise EpisodeSpecError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug
            raise EpisodeError(EpisodeStatus.ERROR, f"environment {env.name!r} failed to make the prompt: "
                                                    f"{type(exc).__name__}: {exc}") from exc
        deadline_s = spec.deadline_s or self.config.episode_deadline_s
        if not 0 < deadline_s <= self.config.max_episode_deadline_s:
            raise EpisodeSpecError(f"deadline_s={spec.deadline_s} must be in (0, "
                                   f"{self.config.max_episode_deadline_s:g}] s (--max-episode-deadline-s)")
        try:
            await self.admission.acquire()
        except EpisodeError:
            self.metrics.refused.inc()
            raise
        if self._closed:  # closed while this open waited
            self.admission.release()
            raise EpisodeError(EpisodeStatus.REFUSED, "the session manager is closed", retry_after_s=1.0)
        self._reaper.ensure_running()
        now = self._clock()
        session = EpisodeSession(uuid.uuid4().hex, env, spec, row, reference, prompt_text(messages), now,
                                 now + deadline_s, now)
        self._sessions.add(session)
        self.metrics.opened.labels(env.name).inc()
        metadata = {"environment_version": env.version, "seed": spec.seed, "task": env.task}
        if spec.row is None:
            metadata.update(split=spec.split or "train", index=index)
        return EpisodeStart(session.session_id, env.name, messages, tuple(env.tool_specs()), env.max_turns,
                            deadline_s, metadata)

    async def call_tool(self, session_id: str, call: ToolCall) -> ToolResult:
        session = self._live(session_id)
        async with session.lock:
            self._live(session_id)
            start = time.perf_counter()
            result = await self._calls.call(session, call)
            session.last_active = self._clock()
        label = call.name if any(t.name == call.name for t in session.env.tool_specs()) else "_unknown"
        self.metrics.tool_calls.labels(label, result.status.name).inc()
        self.metrics.tool_seconds.labels(label).observe(time.perf_counter() - start)
        return result

    async def finish(self, session_id: str, final_message: str | None = None) -> EpisodeOutcome:
        session = self._sessions.get(session_id)
        async with session.lock:
            return await self._calls.finish(session, final_message or "")

    async def state(self, session_id: str) -> EpisodeState:
        session = self._sessions.get(session_id)
        return EpisodeState(session.session_id, session.env.name, session.status, session.turns,
                            tuple(session.step_rewards), session.outcome)

    async def close(self, session_id: str) -> None:
        session = self._sessions.pop(session_id)
        if session is None:
            return
        self._sessions.forget(session_id, "it was closed")
        if not session.ended:
            self._ending.end(session, EpisodeStatus.CLOSED, error="closed by the client before it finished")
        await self._ending.stop_work(session)

    async def score_trajectory(self, trajectory: Trajectory) -> TrajectoryScore:
        return await trajectory_scoring.score_trajectory(self.environments, self.tools.verifier, trajectory,
                                                         self.config.tool_deadline_s)

    # --- lifecycle ------------------------------------------------------------------------------------

    async def reap_once(self) -> None:
        """Ends episodes past their deadline and drops sessions idle past ``idle_timeout_s`` (the reaper's step)."""
        await self._reaper.reap_once()

    async def aclose(self) -> None:
        """Closes every session, stops the reaper, and closes what the factory started (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await self._reaper.stop()
        await asyncio.gather(*(self.close(sid) for sid in self._sessions.ids()))
        if self._on_close is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._on_close)

    async def __aenter__(self) -> SessionManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def work_in_flight(self) -> int:
        """Tool work running now in any session: sandbox programs, plugin functions, calculator jobs (0 once
        every session has ended and its cleanup is done: what a leak check reads)."""
        return len(self.tools.running)

    def session_count(self) -> int:
        """Sessions held now (running or ended, not yet closed or reaped)."""
        return len(self._sessions)

    # --- internals ------------------------------------------------------------------------------------

    def _live(self, session_id: str) -> EpisodeSession:
        """The session, running; EpisodeError for one lost or ended (with the status it ended with)."""
        session = self._sessions.get(session_id)
        if session.ended:
            outcome = session.outcome
            why = outcome.error if outcome is not None and outcome.error else "no more tool calls are answered"
            raise EpisodeError(session.status, f"session {session_id!r} has ended ({session.status.name}): {why}")
        if self._clock() >= session.deadline_at:
            self.metrics.reaped.labels("deadline").inc()
            error = deadline_error(session)
            self._ending.end(session, EpisodeStatus.DEADLINE_EXCEEDED, error=error)
            raise EpisodeError(EpisodeStatus.DEADLINE_EXCEEDED, f"session {session_id!r}: {error}")
        return session


def create_session_manager(config: EnvironmentsConfig | None = None, *, executor: Executor | None = None,
                           verifier: AnswerVerifier | None = None, environments: Iterable[Environment] = (),
                           load_entry_points: bool = True, clock: Callable[[], float] = time.monotonic,
                           metrics_registry: CollectorRegistry | None = None) -> SessionManager:
    """A session manager with its machinery started (``tool_machinery.start_tools``: the sandbox executor
    unless ``executor`` is given, the calculator's workers, the verifier unless ``verifier`` is given, a
    thread pool). What it starts, ``aclose()`` closes; what it is given, the caller closes. ``environments``:
    extra instances besides the built-ins and the entry points'. Call it before any gRPC server exists (it
    starts processes)."""
    config = config or EnvironmentsConfig()
    registry = build_environment_registry(environments, load_entry_points)
    tools, close = start_tools(config, executor, verifier)
    return SessionManager(registry, tools, config, clock=clock, metrics_registry=metrics_registry, on_close=close)
