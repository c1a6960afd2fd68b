"""The calls of a running episode: its tool calls, ``submit_answer``, and ``finish``.

A tool call runs within its budget (``episode_deadlines.py``) and gets the environment's step reward;
``submit_answer`` and ``finish`` verify the answer and end the episode. A call past the turn limit,
past its budget, or failed on our side ends the episode too. The caller holds the session's lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from reward_core.episode_contract import EpisodeOutcome, EpisodeStatus, ToolCall, ToolResult
from reward_service.environments.answer_check import AnswerCheck
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.episode_deadlines import CallTimedOut, call_budget, deadline_error, run_bounded
from reward_service.environments.episode_ending import EpisodeEnding
from reward_service.environments.session_state import EpisodeSession
from reward_service.environments.tool_runner import ToolRunner, argument_errors


class EpisodeCalls:
    """Answers the calls of one session manager's episodes (use it inside one event loop)."""

    def __init__(self, tools: ToolRunner, config: EnvironmentsConfig, clock: Callable[[], float],
                 ending: EpisodeEnding) -> None:
        self._tools, self._config, self._clock, self._ending = tools, config, clock, ending

    async def call(self, session: EpisodeSession, call: ToolCall) -> ToolResult:
        """One tool call of the running ``session``: its result, ``finished`` when it ended the episode."""
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
            answer = await run_bounded(session, self._tools.run(session, call), budget)
        except CallTimedOut:
            return await self._timed_out(session, call, budget, by_episode, start)
        if answer.failure is not None:
            self._ending.end(session, answer.failure, error=answer.error)
            await self._ending.stop_work(session)
            return self._ended_result(session, call, "", start)
        try:
            reward = env.step_reward(call, answer.output, session.row)
        except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug, unscored
            self._ending.end(session, EpisodeStatus.ERROR, error=f"step_reward of {env.name!r} raised "
                                                                 f"{type(exc).__name__}: {exc}")
            return self._ended_result(session, call, "", start)
        session.step_rewards.append(reward)
        return ToolResult(call.call_id, answer.output, EpisodeStatus.RUNNING, reward, metadata=answer.metadata,
                          elapsed_ms=_ms(start))

    async def finish(self, session: EpisodeSession, final_message: str) -> EpisodeOutcome:
        """Ends the episode (unless it has ended) on ``final_message``, verified; its outcome."""
        if not session.ended and self._clock() >= session.deadline_at:
            self._ending.end(session, EpisodeStatus.DEADLINE_EXCEEDED, error=deadline_error(session))
        if not session.ended:
            session.last_active = self._clock()
            budget, by_episode = self._budget(session)
            try:
                await run_bounded(session, self._verify_and_end(session, final_message, None), budget)
            except CallTimedOut:
                self._ending.end(session, EpisodeStatus.DEADLINE_EXCEEDED if by_episode else EpisodeStatus.ERROR,
                                 error=deadline_error(session) if by_episode else
                                 f"verifying the final message took longer than {budget:g} s (--tool-deadline-s)")
        assert session.outcome is not None
        return session.outcome

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
            await run_bounded(session, self._verify_and_end(session, completion, call), budget)
        except CallTimedOut:
            return await self._timed_out(session, call, budget, by_episode, start)
        output = "Your answer was submitted." if session.status is EpisodeStatus.FINISHED else ""
        return self._ended_result(session, call, output, start)

    async def _verify_and_end(self, session: EpisodeSession, completion: str, call: ToolCall | None) -> None:
        """Verifies ``completion`` and ends the episode: FINISHED with the reward, or unscored (TOOL_FAILED
        through ``submit_answer``, ERROR through ``finish``) when the verifier failed."""
        check: AnswerCheck = await self._tools.verify(session, completion)
        if not check.scored:
            status = EpisodeStatus.TOOL_FAILED if call is not None else EpisodeStatus.ERROR
            self._ending.end(session, status, error=f"verification by task {session.env.task!r} failed: {check.error}")
            return
        if call is not None:
            session.step_rewards.append(check.reward)
        self._ending.end(session, EpisodeStatus.FINISHED, reward=check.reward, components=check.components,
                         detail=check.detail)

    def _budget(self, session: EpisodeSession) -> tuple[float, bool]:
        return call_budget(session, self._clock(), self._config.tool_deadline_s)

    async def _timed_out(self, session: EpisodeSession, call: ToolCall, budget: float, by_episode: bool,
                         start: float) -> ToolResult:
        if by_episode:
            self._ending.end(session, EpisodeStatus.DEADLINE_EXCEEDED,
                             error=f"{deadline_error(session)} during a {call.name} call")
        else:
            self._ending.end(session, EpisodeStatus.TOOL_FAILED,
                             error=f"tool {call.name!r} did not answer within {budget:g} s (--tool-deadline-s)")
        await self._ending.stop_work(session)
        return self._ended_result(session, call, "", start)

    @staticmethod
    def _ended_result(session: EpisodeSession, call: ToolCall, output: str, start: float) -> ToolResult:
        outcome = session.outcome
        assert outcome is not None
        reward = outcome.reward if session.status is EpisodeStatus.FINISHED else None
        return ToolResult(call.call_id, output, session.status, reward, finished=True, error=outcome.error,
                          elapsed_ms=_ms(start), outcome=outcome)


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
