"""A small scripted EpisodeHost and an EnvironmentService server on it, for the gRPC stream's tests.

The host is deliberately simple and observable: every tool answers at once except ``block`` (it
waits until released), so a test decides exactly when a call is in flight; ``released`` records
every session the server closed. ``python -m tests.integration.episode_hosts --port N`` serves it
in a process of its own (for the tests that kill the server).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from reward.v1 import environment_pb2
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
    ToolSpec,
    Trajectory,
    TrajectoryScore,
)
from reward_core.grpc_common import server_options
from reward_core.server_security import ServerSecurityConfig, prepare
from reward_core.server_shell import AioServerShell
from reward_core.stop_signals import stop_on_signals, wait_until_set
from reward_service.environments.servicer import EnvironmentServicer

ENVIRONMENT_SERVICE = environment_pb2.DESCRIPTOR.services_by_name["EnvironmentService"]

TOOLS = (ToolSpec("add", "adds a and b", {"type": "object", "properties": {"a": {"type": "integer"},
                                                                           "b": {"type": "integer"}}}),
         ToolSpec("echo", "answers its arguments"), ToolSpec("block", "answers once released"),
         ToolSpec("submit", "submits the answer"))
INFO = EnvironmentInfo("adder", "add two numbers", TOOLS, {"train": 3, "test": 2}, "v1")


@dataclass
class _Session:
    spec: EpisodeSpec
    status: EpisodeStatus = EpisodeStatus.RUNNING
    steps: list[float | None] = field(default_factory=list)
    outcome: EpisodeOutcome | None = None


class ScriptedHost:
    """An EpisodeHost whose one environment, ``adder``, asks for a + b of its row.

    ``full`` makes ``open`` refuse (REFUSED, retry after 2 s). ``released`` (thread-safe) holds the
    session ids closed on it, in order; ``wait_released`` blocks until a given one is.
    """

    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}
        self.released: list[str] = []
        self.full = False
        self._ids = itertools.count()
        self._changed = threading.Condition()
        self.unblock: asyncio.Event | None = None
        self.blocked = threading.Event()
        self.hold_opens = False  # opens wait (as for admission) until cancelled
        self.open_waiting = threading.Event()
        self.open_cancelled = threading.Event()

    def wait_released(self, session_id: str, timeout_s: float = 30.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: session_id in self.released, timeout_s)

    async def list_environments(self) -> list[EnvironmentInfo]:
        return [INFO]

    async def open(self, spec: EpisodeSpec) -> EpisodeStart:
        if spec.environment != "adder":
            raise EpisodeSpecError(f"no environment {spec.environment!r}")
        if self.full:
            raise EpisodeError(EpisodeStatus.REFUSED, "too many sessions", retry_after_s=2.0)
        if self.hold_opens:
            self.open_waiting.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.open_cancelled.set()
                raise
        session_id = f"s{next(self._ids)}"
        self.sessions[session_id] = _Session(spec)
        row = spec.row or {"a": 2, "b": 3}
        return EpisodeStart(session_id, "adder", [{"role": "user", "content": f"{row['a']} + {row['b']}?"}],
                            TOOLS, max_turns=8, deadline_s=60.0, metadata={"client": spec.client_id})

    def _running(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise EpisodeError(EpisodeStatus.SESSION_LOST, f"no session {session_id!r}")
        if session.status.ended:
            raise EpisodeError(session.status, f"session {session_id} has ended ({session.status.name})")
        return session

    async def call_tool(self, session_id: str, call: ToolCall) -> ToolResult:
        session = self._running(session_id)
        if call.name == "block":
            self.unblock = asyncio.Event()
            self.blocked.set()
            await self.unblock.wait()
        if call.name == "submit":
            return ToolResult(call.call_id, "submitted", EpisodeStatus.FINISHED, finished=True,
                              outcome=self._finish(session_id, session, str(call.arguments.get("answer"))))
        if call.name == "add":
            session.steps.append(0.1)
            return ToolResult(call.call_id, str(call.arguments["a"] + call.arguments["b"]), reward=0.1,
                              metadata={"args": dict(call.arguments)})
        session.steps.append(None)
        return ToolResult(call.call_id, repr(dict(call.arguments)))

    def _finish(self, session_id: str, session: _Session, answer: str | None) -> EpisodeOutcome:
        row = session.spec.row or {"a": 2, "b": 3}
        right = answer is not None and answer.strip() == str(row["a"] + row["b"])
        session.status = EpisodeStatus.FINISHED
        session.outcome = EpisodeOutcome(session_id, EpisodeStatus.FINISHED, 1.0 if right else 0.0,
                                         tuple(session.steps), {"correct": float(right)},
                                         detail=f"answer {answer!r}", turns=len(session.steps))
        return session.outcome

    async def finish(self, session_id: str, final_message: str | None = None) -> EpisodeOutcome:
        return self._finish(session_id, self._running(session_id), final_message)

    async def state(self, session_id: str) -> EpisodeState:
        session = self.sessions.get(session_id)
        if session is None:
            raise EpisodeError(EpisodeStatus.SESSION_LOST, f"no session {session_id!r}")
        return EpisodeState(session_id, "adder", session.status, len(session.steps), tuple(session.steps),
                            session.outcome)

    async def close(self, session_id: str) -> None:
        if self.sessions.pop(session_id, None) is not None:
            with self._changed:
                self.released.append(session_id)
                self._changed.notify_all()

    async def score_trajectory(self, trajectory: Trajectory) -> TrajectoryScore:
        if trajectory.environment != "adder":
            raise EpisodeSpecError(f"no environment {trajectory.environment!r}")
        if self.full:
            raise EpisodeError(EpisodeStatus.REFUSED, "too many sessions", retry_after_s=1.5)
        last = str(trajectory.messages[-1].get("content", "")) if trajectory.messages else ""
        right = last.strip() == str(trajectory.row["a"] + trajectory.row["b"])
        turns = {i: 0.5 for i, m in enumerate(trajectory.messages) if m.get("role") == "assistant"}
        return TrajectoryScore(trajectory.id, EpisodeStatus.FINISHED, 1.0 if right else 0.0, turns,
                               {"correct": float(right)})


@dataclass
class EnvServer:
    shell: AioServerShell
    servicer: EnvironmentServicer
    host: ScriptedHost

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.shell.port}"

    def stop(self, grace_s: float = 0.0) -> None:
        """Drains as ``reward-service serve`` does: new episodes refused, running ones ended SESSION_LOST."""
        async def drain() -> None:
            self.servicer.begin_drain()
            self.servicer.flush()
        self.shell.stop(grace_s, drain)


def start_server(host: ScriptedHost, port: int = 0, security: ServerSecurityConfig | None = None) -> EnvServer:
    """The service on ``host`` on loopback; ``security``: e.g. a token file (default: as the environment says)."""
    servicer = EnvironmentServicer(host)
    shell = AioServerShell("env", [(ENVIRONMENT_SERVICE, servicer)],
                           prepare(security or ServerSecurityConfig(), "127.0.0.1"),
                           "127.0.0.1", port, server_options(16))
    return EnvServer(shell, servicer, host)


@contextlib.contextmanager
def serving(host: ScriptedHost | None = None) -> Iterator[EnvServer]:
    server = start_server(host or ScriptedHost())
    try:
        yield server
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="serve the scripted episode host")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    stop = stop_on_signals()
    server = start_server(ScriptedHost(), args.port)
    print(f"serving on {server.address}", flush=True)
    wait_until_set(stop)
    server.stop()


if __name__ == "__main__":
    main()
