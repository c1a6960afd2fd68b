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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

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
from reward_service.environments.admission import Admission
from reward_service.environments.answer_check import AnswerCheck, AnswerVerifier
from reward_service.environments.env_api import Environment, InvalidRow, check_index
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.env_registry import (
    EnvironmentRegistry,
    UnknownEnvironment,
    build_environment_registry,
)
from reward_service.environments.episode_metrics import EpisodeMetrics
from reward_service.environments.session_state import EpisodeSession
from reward_service.environments.tool_machinery import start_tools
from reward_service.environments.tool_runner import ToolRunner, argument_errors
from reward_service.environments.trajectory import TrajectoryError, read_trajectory, turn_rewards
from sandbox import Executor

logger = logging.getLogger(__name__)
T = TypeVar("T")


class _TimedOut(Exception):
    """A tool call ran past its budget (internal)."""


class SessionManager:
    """Runs episodes of the registered environments in this process (see the module docstring)."""

    def __init__(self, environments: EnvironmentRegistry, tools: ToolRunner, config: EnvironmentsConfig, *,
                 clock: Callable[[], float] = time.monotonic, metrics_registry: CollectorRegistry | None = None,
                 on_close: Callable[[], None] | None = None) -> None:
        self.environments, self.tools, self.config = environments, tools, config
        self._clock = clock
        self._on_close = on_close
        self._sessions: dict[str, EpisodeSession] = {}
        self._gone: collections.OrderedDict[str, str] = collections.OrderedDict()  # id -> why it is gone
        self.admission = Admission(config.max_sessions, config.queue_timeout_s)
        self.metrics = EpisodeMetrics(lambda: self.admission.open, lambda: self.admission.waiting, metrics_registry)
        self._reaper: asyncio.Task | None = None
        self._closed = False

    # --- EpisodeHost --------------------------------------------------------------------------------

    async def list_environments(self) -> list[EnvironmentInfo]:
        return [EnvironmentInfo(name, env.description, tuple(env.tool_specs()), dict(env.splits()), env.version)
                for name, env in ((n, self.environments.get(n)) for n in self.environments.names())]

    async def open(self, spec: EpisodeSpec) -> EpisodeStart:
        if self._closed:
            raise EpisodeError(EpisodeStatus.REFUSED, "the session manager is closed", retry_after_s=1.0)
        env, row, index = self._resolve(spec.environment, spec.row, spec.split, spec.index, spec.seed)
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
        self._ensure_reaper()
        now = self._clock()
        session = EpisodeSession(uuid.uuid4().hex, env, spec, row, reference, _prompt_text(messages), now,
                                 now + deadline_s, now)
        self._sessions[session.session_id] = session
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
            result = await self._call(session, call)
            session.last_active = self._clock()
        label = call.name if any(t.name == call.name for t in session.env.tool_specs()) else "_unknown"
        self.metrics.tool_calls.labels(label, result.status.name).inc()
        self.metrics.tool_seconds.labels(label).observe(time.perf_counter() - start)
        return result

    async def finish(self, session_id: str, final_message: str | None = None) -> EpisodeOutcome:
        session = self._get(session_id)
        async with session.lock:
            if not session.ended and self._clock() >= session.deadline_at:
                self._end(session, EpisodeStatus.DEADLINE_EXCEEDED, error=self._deadline_error(session))
            if not session.ended:
                session.last_active = self._clock()
                budget, by_episode = self._budget(session)
                try:
                    await self._bounded(session, self._verify_and_end(session, final_message or "", None), budget)
                except _TimedOut:
                    self._end(session, EpisodeStatus.DEADLINE_EXCEEDED if by_episode else EpisodeStatus.ERROR,
                              error=self._deadline_error(session) if by_episode else
                              f"verifying the final message took longer than {budget:g} s (--tool-deadline-s)")
            assert session.outcome is not None
            return session.outcome

    async def state(self, session_id: str) -> EpisodeState:
        session = self._get(session_id)
        return EpisodeState(session.session_id, session.env.name, session.status, session.turns,
                            tuple(session.step_rewards), session.outcome)

    async def close(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        self._forget(session_id, "it was closed")
        if not session.ended:
            self._end(session, EpisodeStatus.CLOSED, error="closed by the client before it finished")
        await self._stop_work(session)

    async def score_trajectory(self, trajectory: Trajectory) -> TrajectoryScore:
        row = trajectory.row or None
        if row is None and not trajectory.split:
            raise EpisodeSpecError("a trajectory needs its row, or the split and index of one")
        env, row, _ = self._resolve(trajectory.environment, row, trajectory.split, trajectory.index, trajectory.seed)
        try:
            reference, prompt = env.reference(row), _prompt_text(env.prompt(row))
            read = read_trajectory(trajectory.messages)
        except (InvalidRow, TrajectoryError) as exc:
            return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR, error=f"cannot score this trajectory: {exc}")
        except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug, unscored
            return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR, error=f"environment {env.name!r} raised "
                                                                             f"{type(exc).__name__}: {exc}")
        completion = env.completion(read.submitted[1]) if read.submitted else read.final_text
        try:
            check = await asyncio.wait_for(self.tools.verifier.verify(env.task, completion, reference, prompt),
                                           self.config.tool_deadline_s)
        except asyncio.TimeoutError:
            return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR,
                                   error=f"verification took longer than {self.config.tool_deadline_s:g} s")
        if not check.scored or check.reward is None:
            return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR, error=f"verification failed: {check.error}")
        try:
            rewards = turn_rewards(read, lambda call, output: env.step_reward(call, output, row), check.reward)
        except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug, unscored
            return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR, error=f"step_reward of {env.name!r} raised "
                                                                             f"{type(exc).__name__}: {exc}")
        return TrajectoryScore(trajectory.id, EpisodeStatus.FINISHED, check.reward, rewards,
                               dict(check.components), check.detail)

    # --- lifecycle ------------------------------------------------------------------------------------

    async def reap_once(self) -> None:
        """Ends episodes past their deadline and drops sessions idle past ``idle_timeout_s`` (the reaper's step)."""
        now = self._clock()
        for session in list(self._sessions.values()):
            busy = bool(session.calls) or session.lock.locked()
            if not session.ended and now >= session.deadline_at:
                self.metrics.reaped.labels("deadline").inc()
                self._end(session, EpisodeStatus.DEADLINE_EXCEEDED, error=self._deadline_error(session))
                await self._stop_work(session)
            elif not busy and now - session.last_active >= self.config.idle_timeout_s:
                self.metrics.reaped.labels("idle").inc()
                self._sessions.pop(session.session_id, None)
                why = f"it was reaped after {self.config.idle_timeout_s:g} s without a call (--idle-timeout-s)"
                self._forget(session.session_id, why)
                if not session.ended:
                    self._end(session, EpisodeStatus.SESSION_LOST, error=why)
                await self._stop_work(session)

    async def aclose(self) -> None:
        """Closes every session, stops the reaper, and closes what the factory started (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        await asyncio.gather(*(self.close(sid) for sid in list(self._sessions)))
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

    def _resolve(self, name: str, row: Mapping[str, Any] | None, split: str, index: int,
                 seed: int) -> tuple[Environment, Mapping[str, Any], int]:
        """The environment, the row (given, or ``split``/``index`` of its rows; index -1: one picked by the
        seed) and the index; EpisodeSpecError for what cannot be resolved."""
        try:
            env = self.environments.get(name)
        except UnknownEnvironment as exc:
            raise EpisodeSpecError(exc.args[0]) from None
        if not self.tools.verifier.has_task(env.task):
            raise EpisodeError(EpisodeStatus.ERROR, f"environment {name!r} is verified by task {env.task!r}, "
                                                    "which this server does not register")
        if row is not None:
            return env, row, -1
        split = split or "train"
        size = env.splits().get(split, 0)
        if index < 0 and size:
            index = seed % size
        try:
            check_index(env, split, index)
            return env, env.row(split, index, seed), index
        except InvalidRow as exc:
            raise EpisodeSpecError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug
            raise EpisodeError(EpisodeStatus.ERROR, f"environment {name!r} failed to make row {index} of "
                                                    f"{split!r}: {type(exc).__name__}: {exc}") from exc

    def _get(self, session_id: str) -> EpisodeSession:
        session = self._sessions.get(session_id)
        if session is None:
            why = self._gone.get(session_id, "no session has this id here (a replica that held it may be gone)")
            raise EpisodeError(EpisodeStatus.SESSION_LOST, f"session {session_id!r} is lost: {why}")
        return session

    def _live(self, session_id: str) -> EpisodeSession:
        """The session, running; EpisodeError for one lost or ended (with the status it ended with)."""
        session = self._get(session_id)
        if session.ended:
            outcome = session.outcome
            why = outcome.error if outcome is not None and outcome.error else "no more tool calls are answered"
            raise EpisodeError(session.status, f"session {session_id!r} has ended ({session.status.name}): {why}")
        if self._clock() >= session.deadline_at:
            self.metrics.reaped.labels("deadline").inc()
            error = self._deadline_error(session)
            self._end(session, EpisodeStatus.DEADLINE_EXCEEDED, error=error)
            raise EpisodeError(EpisodeStatus.DEADLINE_EXCEEDED, f"session {session_id!r}: {error}")
        return session

    async def _call(self, session: EpisodeSession, call: ToolCall) -> ToolResult:
        session.turns += 1
        start = time.perf_counter()
        env = session.env
        if env.max_turns and session.turns > env.max_turns:
            await self._verify_and_end(session, "", None)
            return self._ended_result(session, call, f"the episode's {env.max_turns} tool calls are used up; "
                                      "it ended without a submitted answer", start)
        if call.name == "submit_answer" and "submit_answer" in env.tools:
            return await self._submit(session, call, start)
        budget, by_episode = self._budget(session)
        try:
            answer = await self._bounded(session, self.tools.run(session, call), budget)
        except _TimedOut:
            return await self._timed_out(session, call, budget, by_episode, start)
        if answer.failure is not None:
            self._end(session, answer.failure, error=answer.error)
            await self._stop_work(session)
            return self._ended_result(session, call, "", start)
        try:
            reward = env.step_reward(call, answer.output, session.row)
        except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug, unscored
            self._end(session, EpisodeStatus.ERROR, error=f"step_reward of {env.name!r} raised "
                                                          f"{type(exc).__name__}: {exc}")
            return self._ended_result(session, call, "", start)
        session.step_rewards.append(reward)
        return ToolResult(call.call_id, answer.output, EpisodeStatus.RUNNING, reward, metadata=answer.metadata,
                          elapsed_ms=_ms(start))

    async def _submit(self, session: EpisodeSession, call: ToolCall, start: float) -> ToolResult:
        spec = next(t for t in session.env.tool_specs() if t.name == "submit_answer")
        problem = argument_errors(spec, call.arguments)
        if problem:
            session.step_rewards.append(None)
            return ToolResult(call.call_id, f"error: invalid arguments for submit_answer: {problem}",
                              elapsed_ms=_ms(start))
        budget, by_episode = self._budget(session)
        completion = session.env.completion(str(call.arguments["answer"]))
        try:
            await self._bounded(session, self._verify_and_end(session, completion, call), budget)
        except _TimedOut:
            return await self._timed_out(session, call, budget, by_episode, start)
        output = "Your answer was submitted." if session.status is EpisodeStatus.FINISHED else ""
        return self._ended_result(session, call, output, start)

    async def _verify_and_end(self, session: EpisodeSession, completion: str, call: ToolCall | None) -> None:
        """Verifies ``completion`` and ends the episode: FINISHED with the reward, or unscored (TOOL_FAILED
        through ``submit_answer``, ERROR through ``finish``) when the verifier failed."""
        check: AnswerCheck = await self.tools.verify(session, completion)
        if not check.scored:
            status = EpisodeStatus.TOOL_FAILED if call is not None else EpisodeStatus.ERROR
            self._end(session, status, error=f"verification by task {session.env.task!r} failed: {check.error}")
            return
        if call is not None:
            session.step_rewards.append(check.reward)
        self._end(session, EpisodeStatus.FINISHED, reward=check.reward, components=check.components,
                  detail=check.detail)

    @staticmethod
    def _deadline_error(session: EpisodeSession) -> str:
        return f"the episode ran past its {session.deadline_at - session.opened_at:g} s deadline"

    def _budget(self, session: EpisodeSession) -> tuple[float, bool]:
        """The call's time: the tool deadline or the episode's remaining time, and whether the latter binds."""
        remaining = session.deadline_at - self._clock()
        return min(self.config.tool_deadline_s, max(0.0, remaining)), remaining <= self.config.tool_deadline_s

    async def _bounded(self, session: EpisodeSession, work: Awaitable[T], budget: float) -> T:
        """Runs ``work`` as one of the session's calls within ``budget`` seconds; _TimedOut past it, and
        EpisodeError when the session ended meanwhile (closed, reaped, its deadline)."""
        task = asyncio.ensure_future(work)
        session.calls.add(task)
        try:
            done, _ = await asyncio.wait({task}, timeout=budget)
        except asyncio.CancelledError:  # the caller went away: its call stops
            task.cancel()
            raise
        finally:
            session.calls.discard(task)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise _TimedOut
        if task.cancelled():
            outcome = session.outcome
            raise EpisodeError(session.status if session.ended else EpisodeStatus.SESSION_LOST,
                               f"session {session.session_id!r} ended during the call: "
                               f"{outcome.error if outcome is not None else 'it was stopped'}")
        return task.result()

    async def _timed_out(self, session: EpisodeSession, call: ToolCall, budget: float, by_episode: bool,
                         start: float) -> ToolResult:
        if by_episode:
            self._end(session, EpisodeStatus.DEADLINE_EXCEEDED,
                      error=f"{self._deadline_error(session)} during a {call.name} call")
        else:
            self._end(session, EpisodeStatus.TOOL_FAILED,
                      error=f"tool {call.name!r} did not answer within {budget:g} s (--tool-deadline-s)")
        await self._stop_work(session)
        return self._ended_result(session, call, "", start)

    def _ended_result(self, session: EpisodeSession, call: ToolCall, output: str, start: float) -> ToolResult:
        outcome = session.outcome
        assert outcome is not None
        reward = outcome.reward if session.status is EpisodeStatus.FINISHED else None
        return ToolResult(call.call_id, output, session.status, reward, finished=True, error=outcome.error,
                          elapsed_ms=_ms(start), outcome=outcome)

    def _end(self, session: EpisodeSession, status: EpisodeStatus, *, reward: float | None = None,
             components: Mapping[str, float] | None = None, detail: str = "", error: str = "") -> None:
        """Ends the episode (once): its outcome, its slot freed, its metrics."""
        if session.ended:
            return
        duration = self._clock() - session.opened_at
        session.status = status
        session.outcome = EpisodeOutcome(session.session_id, status, reward if status.scored else None,
                                         tuple(session.step_rewards), dict(components or {}), detail, error,
                                         session.turns, duration * 1000.0)
        if session.holds_slot:
            session.holds_slot = False
            self.admission.release(duration)
        self.metrics.ended.labels(session.env.name, status.name).inc()
        self.metrics.episode_seconds.labels(session.env.name).observe(max(0.0, duration))
        if status.scored and reward is not None:
            self.metrics.reward.labels(session.env.name).observe(reward)
        if not status.scored and status is not EpisodeStatus.CLOSED:
            logger.info("episode %s (%s) ended %s: %s", session.session_id, session.env.name, status.name, error)

    async def _stop_work(self, session: EpisodeSession) -> None:
        """Stops the session's calls and programs; waits up to the cleanup deadline for them to end."""
        futures = session.stop_work()
        if not futures:
            return
        _, pending = await asyncio.wait([asyncio.wrap_future(f) for f in futures],
                                        timeout=self.config.cleanup_deadline_s)
        if pending:
            self.metrics.cleanup_overruns.inc()
            logger.warning("session %s: %d tool call(s) still running %g s after it ended (--cleanup-deadline-s)",
                           session.session_id, len(pending), self.config.cleanup_deadline_s)

    def _forget(self, session_id: str, why: str) -> None:
        self._gone[session_id] = why
        while len(self._gone) > self.config.max_tombstones:
            self._gone.popitem(last=False)

    def _ensure_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever(), name="episode-reaper")

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.reap_interval_s)
            try:
                await self.reap_once()
            except Exception:  # a bug of ours must not stop the reaper
                logger.exception("the episode reaper failed; it goes on")


def _prompt_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """The prompt as the task sees it: the user messages' text."""
    return "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


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
