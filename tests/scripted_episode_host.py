"""A small, scripted :class:`EpisodeHost` for the doors' protocol tests (the real one is the session manager).

One environment, ``arith``: row ``i`` of a split asks for ``i + 7``; tools ``add`` (a + b),
``submit_answer`` (ends the episode: reward 1.0 for the right answer, 0.0 for a wrong one), ``shout``
(``n`` characters of output, spaces included), ``wait`` (answers once the test opens ``gate``), and
``flaky`` (fails on our side: TOOL_FAILED, unscored). A trajectory is scored 1.0 when its last
assistant message holds the answer, unscored (ERROR) when it says ``UNSCORABLE``.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import threading
from collections.abc import Mapping
from typing import Any

from reward_core.episode_contract import (
    EnvironmentInfo,
    EpisodeError,
    EpisodeOutcome,
    EpisodeSpec,
    EpisodeStart,
    EpisodeState,
    EpisodeStatus,
    ToolCall,
    ToolResult,
    ToolSpec,
    Trajectory,
    TrajectoryScore,
)

NUMBER = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
          "required": ["a", "b"], "additionalProperties": False}
TOOLS = (ToolSpec("add", "adds two integers", NUMBER),
         ToolSpec("submit_answer", "submits the final answer",
                  {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}),
         ToolSpec("shout", "n characters", {"type": "object", "properties": {"n": {"type": "integer"}}}),
         ToolSpec("wait", "answers when the test says so"),
         ToolSpec("flaky", "fails on our side"))
SPLITS = {"train": 5, "test": 2}


def row(index: int) -> dict[str, Any]:
    return {"prompt": f"What is {index} + 7?", "reference": {"answer": str(index + 7)}}


class ScriptedHost:
    """The scripted host; ``closed`` lists the closed episodes, ``calls`` counts calls per tool."""

    def __init__(self, refuse_s: float | None = None, open_gate: threading.Event | None = None) -> None:
        self.refuse_s = refuse_s  # open() refuses admission with this retry hint when set
        self.open_gate = open_gate  # open() waits for it when set (a session waiting for admission)
        self.gate = threading.Event()
        self.open_ids: set[str] = set()
        self.closed: list[str] = []
        self.calls: collections.Counter[str] = collections.Counter()
        self._rows: dict[str, Mapping[str, Any]] = {}
        self._ended: dict[str, EpisodeStatus] = {}
        self._ids = itertools.count()

    async def list_environments(self) -> list[EnvironmentInfo]:
        return [EnvironmentInfo("arith", "add seven", TOOLS, SPLITS, "1")]

    async def open(self, spec: EpisodeSpec) -> EpisodeStart:
        if self.refuse_s is not None:
            raise EpisodeError(EpisodeStatus.REFUSED, "too many sessions", retry_after_s=self.refuse_s)
        if self.open_gate is not None:
            await asyncio.to_thread(self.open_gate.wait, 60)
        the_row = spec.row if spec.row is not None else row(spec.index)
        session_id = f"ep-{next(self._ids)}"
        self._rows[session_id] = the_row
        self.open_ids.add(session_id)
        messages = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": the_row["prompt"]}]
        return EpisodeStart(session_id, spec.environment, messages, TOOLS)

    def _live(self, session_id: str) -> None:
        if session_id not in self.open_ids:
            raise EpisodeError(EpisodeStatus.SESSION_LOST, f"no session {session_id!r}")
        if session_id in self._ended:
            raise EpisodeError(self._ended[session_id], "the episode has ended")

    async def call_tool(self, session_id: str, call: ToolCall) -> ToolResult:
        self._live(session_id)
        self.calls[call.name] += 1
        args = call.arguments
        if call.name == "add":
            return ToolResult(call.call_id, str(args["a"] + args["b"]))
        if call.name == "shout":
            return ToolResult(call.call_id, ("ab " * args["n"])[: args["n"]])
        if call.name == "wait":
            opened = await asyncio.to_thread(self.gate.wait, 60)
            return ToolResult(call.call_id, "waited" if opened else "gate never opened")
        if call.name == "flaky":
            self._ended[session_id] = EpisodeStatus.TOOL_FAILED
            return ToolResult(call.call_id, "", status=EpisodeStatus.TOOL_FAILED, error="the tool's deadline passed")
        reward = 1.0 if str(args["answer"]).strip() == self._rows[session_id]["reference"]["answer"] else 0.0
        self._ended[session_id] = EpisodeStatus.FINISHED
        outcome = EpisodeOutcome(session_id, EpisodeStatus.FINISHED, reward, (None, reward),
                                 {"accuracy": reward}, detail=f"submitted {args['answer']!r}")
        return ToolResult(call.call_id, "submitted", EpisodeStatus.FINISHED, reward, True, outcome=outcome)

    async def finish(self, session_id: str, final_message: str | None = None) -> EpisodeOutcome:
        self._live(session_id)
        self._ended[session_id] = EpisodeStatus.FINISHED
        return EpisodeOutcome(session_id, EpisodeStatus.FINISHED, 0.0)

    async def state(self, session_id: str) -> EpisodeState:
        return EpisodeState(session_id, "arith", self._ended.get(session_id, EpisodeStatus.RUNNING), 0)

    async def close(self, session_id: str) -> None:
        if session_id in self.open_ids:
            self.open_ids.discard(session_id)
            self.closed.append(session_id)

    async def score_trajectory(self, trajectory: Trajectory) -> TrajectoryScore:
        the_row = trajectory.row or row(trajectory.index)
        last = [m for m in trajectory.messages if m.get("role") == "assistant"][-1]
        if "UNSCORABLE" in last.get("content", ""):
            return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR, error="the verifier raised")
        reward = 1.0 if the_row["reference"]["answer"] in last.get("content", "") else 0.0
        return TrajectoryScore(trajectory.id, EpisodeStatus.FINISHED, reward, components={"accuracy": reward})
