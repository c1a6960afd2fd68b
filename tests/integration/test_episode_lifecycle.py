"""The session manager's lifecycle on real components: admission, deadlines, reaping, close, failures.

Time is the manager's clock: a ManualClock the tests move, so deadlines and idle reaping are decided
without waiting; a call's own budget is still real time (it is what bounds a running program).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from reward_core.episode_contract import EpisodeError, EpisodeSpec, EpisodeStatus, ToolCall
from reward_service.environments.env_api import Environment, PluginTool
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.sessions import create_session_manager
from sandbox import create_remote_executor
from sandbox.server import SandboxServerConfig
from sandbox.server import create_server as create_sandbox_server
from tests.integration.session_managers import ManualClock, loop_thread

pytestmark = pytest.mark.slow

RELEASE = threading.Event()


def wait_for_release(arguments, context) -> str:
    RELEASE.wait(60)
    return "released"


class SlowToolEnv(Environment):
    """A plugin tool that blocks until the test releases it, and a row whose reference no task accepts."""

    name = "slow_tool"
    tools = ("python", "submit_answer")
    task = "math"

    def splits(self):
        return {"train": 2}

    def row(self, split, index, seed):
        reference = {"answer": "1"} if index == 0 else {}  # index 1: math needs 'answer' (INVALID_REFERENCE)
        return {"prompt": "Wait for the tool.", "reference": reference}

    def plugin_tools(self):
        return (PluginTool("wait", wait_for_release),)


CONFIG = EnvironmentsConfig(max_sessions=8, sandbox_concurrency=2, verify_workers=1, program_timeout_s=8.0,
                            tool_deadline_s=10.0, cleanup_deadline_s=5.0, idle_timeout_s=60.0,
                            episode_deadline_s=120.0, reap_interval_s=3600.0)


@pytest.fixture(scope="module")
def clock():
    return ManualClock()


@pytest.fixture(scope="module")
def host(clock):
    manager = create_session_manager(CONFIG, environments=[SlowToolEnv()], clock=clock)
    with loop_thread() as (loop, run):
        try:
            yield manager, run, loop
        finally:
            RELEASE.set()
            run(manager.aclose())


@pytest.fixture
def shared(host):
    """A second manager on the first one's executor and verifier (cheap to start), with its own config."""
    manager0 = host[0]

    def make(config: EnvironmentsConfig, **options):
        """Each test closes the manager it made (on its own loop)."""
        options.setdefault("executor", manager0.tools.executor)
        return create_session_manager(config, verifier=manager0.tools.verifier, environments=[SlowToolEnv()],
                                      **options)

    return make


def wait_until(predicate, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < end, "the condition did not hold in time"
        time.sleep(0.02)


def test_a_call_past_the_episode_deadline_is_deadline_exceeded(host, clock):
    manager, run, _ = host
    start = run(manager.open(EpisodeSpec("arithmetic_tools", index=0, deadline_s=30)))
    clock.advance(31)
    with pytest.raises(EpisodeError) as failed:
        run(manager.call_tool(start.session_id, ToolCall("calculator", {"expression": "1+1"})))
    assert failed.value.status is EpisodeStatus.DEADLINE_EXCEEDED
    state = run(manager.state(start.session_id))
    assert state.status is EpisodeStatus.DEADLINE_EXCEEDED and state.outcome.reward is None
    run(manager.close(start.session_id))
    assert manager.admission.open == 0


def test_the_reaper_ends_an_episode_past_its_deadline(host, clock):
    manager, run, _ = host
    start = run(manager.open(EpisodeSpec("arithmetic_tools", index=1, deadline_s=30)))
    clock.advance(31)
    run(manager.reap_once())
    state = run(manager.state(start.session_id))
    assert state.status is EpisodeStatus.DEADLINE_EXCEEDED and not state.status.scored
    assert manager.metrics.registry.get_sample_value("reward_episode_reaped_total", {"reason": "deadline"}) >= 1
    run(manager.close(start.session_id))


def test_a_program_running_past_the_episode_deadline_ends_it_and_is_killed(host):
    manager, run, _ = host
    start = run(manager.open(EpisodeSpec("math_tools", index=0, deadline_s=1)))
    result = run(manager.call_tool(start.session_id, ToolCall("python", {"code": "while True:\n    pass"})))
    assert result.status is EpisodeStatus.DEADLINE_EXCEEDED and result.finished and result.reward is None
    assert manager.work_in_flight() == 0  # the program was killed before the call answered
    run(manager.close(start.session_id))


def test_a_tool_past_its_call_deadline_is_tool_failed(shared):
    RELEASE.clear()
    manager = shared(EnvironmentsConfig(sandbox_concurrency=1, program_timeout_s=0.5, tool_deadline_s=1.0,
                                        cleanup_deadline_s=0.1))
    with loop_thread() as (_, run):
        try:
            start = run(manager.open(EpisodeSpec("slow_tool", index=0)))
            result = run(manager.call_tool(start.session_id, ToolCall("wait", {})))
            assert result.status is EpisodeStatus.TOOL_FAILED and "tool-deadline" in result.error
            with pytest.raises(EpisodeError) as ended:
                run(manager.call_tool(start.session_id, ToolCall("wait", {})))
            assert ended.value.status is EpisodeStatus.TOOL_FAILED
            assert manager.metrics.registry.get_sample_value("reward_episode_cleanup_overruns_total") == 1
        finally:
            RELEASE.set()
            run(manager.aclose())


def test_a_full_admission_waits_then_refuses_with_a_retry_hint(shared):
    manager = shared(EnvironmentsConfig(max_sessions=1, queue_timeout_s=3.0, sandbox_concurrency=1))
    with loop_thread() as (loop, run):
        try:
            first = run(manager.open(EpisodeSpec("arithmetic_tools", index=0)))
            with pytest.raises(EpisodeError) as refused:
                run(manager.open(EpisodeSpec("arithmetic_tools", index=1)))
            assert refused.value.status is EpisodeStatus.REFUSED and refused.value.retry_after_s > 0
            assert manager.metrics.registry.get_sample_value("reward_episode_refused_total") == 1
            waiting = asyncio.run_coroutine_threadsafe(manager.open(EpisodeSpec("arithmetic_tools", index=2)), loop)
            wait_until(lambda: manager.admission.waiting == 1)
            run(manager.close(first.session_id))
            admitted = waiting.result(30)
            assert admitted.session_id != first.session_id and manager.admission.open == 1
        finally:
            run(manager.aclose())


def test_an_idle_session_is_reaped_and_its_next_call_is_session_lost(host, clock):
    manager, run, _ = host
    start = run(manager.open(EpisodeSpec("arithmetic_tools", index=2)))
    opened = manager.admission.open
    clock.advance(CONFIG.idle_timeout_s + 1)
    run(manager.reap_once())
    with pytest.raises(EpisodeError) as lost:
        run(manager.call_tool(start.session_id, ToolCall("calculator", {"expression": "2"})))
    assert lost.value.status is EpisodeStatus.SESSION_LOST and "reaped" in str(lost.value)
    assert manager.admission.open == opened - 1
    run(manager.close(start.session_id))  # a reaped session closes quietly


def test_close_is_idempotent_and_stops_the_running_program(host):
    manager, run, loop = host
    start = run(manager.open(EpisodeSpec("math_tools", index=4)))
    call = asyncio.run_coroutine_threadsafe(
        manager.call_tool(start.session_id, ToolCall("python", {"code": "while True:\n    pass"})), loop)
    wait_until(lambda: manager.work_in_flight() == 1)
    run(manager.close(start.session_id))
    assert manager.work_in_flight() == 0  # killed within the cleanup deadline, long before its 8 s limit
    with pytest.raises(EpisodeError) as closed:
        call.result(30)
    assert closed.value.status is EpisodeStatus.CLOSED
    run(manager.close(start.session_id))
    with pytest.raises(EpisodeError) as lost:
        run(manager.state(start.session_id))
    assert lost.value.status is EpisodeStatus.SESSION_LOST and "closed" in str(lost.value)


def test_an_unknown_session_is_lost(host):
    manager, run, _ = host
    with pytest.raises(EpisodeError) as lost:
        run(manager.call_tool("no-such-id", ToolCall("calculator", {"expression": "1"})))
    assert lost.value.status is EpisodeStatus.SESSION_LOST
    run(manager.close("no-such-id"))


def test_a_sandbox_that_died_is_sandbox_failed_never_0(shared):
    server = create_sandbox_server(SandboxServerConfig(port=0, workers=1, grace_s=0.0))
    executor = create_remote_executor(server.address, call_timeout_s=5.0)
    manager = shared(EnvironmentsConfig(sandbox_concurrency=1, program_timeout_s=3.0, tool_deadline_s=20.0),
                     executor=executor)
    with loop_thread() as (_, run):
        try:
            start = run(manager.open(EpisodeSpec("math_tools", index=5)))
            ok = run(manager.call_tool(start.session_id, ToolCall("python", {"code": "print(6 * 7)"})))
            assert ok.output == "42"
            server.stop(0)
            failed = run(manager.call_tool(start.session_id, ToolCall("python", {"code": "print(1)"})))
            assert failed.status is EpisodeStatus.SANDBOX_FAILED and failed.reward is None
            assert failed.outcome.status is EpisodeStatus.SANDBOX_FAILED and failed.outcome.reward is None
            with pytest.raises(EpisodeError) as ended:
                run(manager.call_tool(start.session_id, ToolCall("python", {"code": "print(1)"})))
            assert ended.value.status is EpisodeStatus.SANDBOX_FAILED
        finally:
            run(manager.aclose())
            server.stop(0)
            executor.close()


def busy_sandbox_process(min_cpu_s: float = 0.5) -> int | None:
    """The pid of this process's busiest sandbox descendant (a program spinning), once it used ``min_cpu_s``."""
    parents, cpu = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            if b"zygote.py" not in (entry / "cmdline").read_bytes():
                parents[int(entry.name)] = int(fields[1])
                continue
        except OSError:  # gone meanwhile
            continue
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def ours(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    busy = [(seconds, pid) for pid, seconds in cpu.items() if seconds >= min_cpu_s and ours(pid)]
    return max(busy)[1] if busy else None


def test_a_sandbox_killed_under_a_running_program_is_sandbox_failed(shared):
    manager = shared(EnvironmentsConfig(sandbox_concurrency=1, program_timeout_s=8.0, tool_deadline_s=10.0),
                     executor=None)  # its own sandbox
    with loop_thread() as (loop, run):
        try:
            start = run(manager.open(EpisodeSpec("math_tools", index=6)))
            call = asyncio.run_coroutine_threadsafe(
                manager.call_tool(start.session_id, ToolCall("python", {"code": "while True:\n    pass"})), loop)
            wait_until(lambda: busy_sandbox_process() is not None)
            os.kill(busy_sandbox_process(), signal.SIGKILL)
            result = call.result(30)
            assert result.status is EpisodeStatus.SANDBOX_FAILED and result.reward is None
            assert "not a verdict on the code" in result.error or "sandbox" in result.error
        finally:
            run(manager.aclose())


def test_an_unusable_reference_is_an_unscored_verification_never_0(host):
    manager, run, _ = host
    start = run(manager.open(EpisodeSpec("slow_tool", index=1)))
    result = run(manager.call_tool(start.session_id, ToolCall("submit_answer", {"answer": "1"})))
    assert result.status is EpisodeStatus.TOOL_FAILED and result.reward is None and "answer" in result.error
    run(manager.close(start.session_id))
    other = run(manager.open(EpisodeSpec("slow_tool", index=1)))
    outcome = run(manager.finish(other.session_id, "\\boxed{1}"))
    assert outcome.status is EpisodeStatus.ERROR and outcome.reward is None
    run(manager.close(other.session_id))


def test_using_up_the_turns_ends_the_episode_as_a_scored_0(host):
    manager, run, _ = host
    start = run(manager.open(EpisodeSpec("arithmetic_tools", index=3)))
    results = [run(manager.call_tool(start.session_id, ToolCall("calculator", {"expression": "1+1"})))
               for _ in range(start.max_turns + 1)]
    assert all(r.status is EpisodeStatus.RUNNING for r in results[:-1])
    assert results[-1].status is EpisodeStatus.FINISHED and results[-1].reward == 0.0 and results[-1].finished
    run(manager.close(start.session_id))


def test_metrics_count_episodes_by_how_they_ended(host):
    manager, run, _ = host
    sample = manager.metrics.registry.get_sample_value
    before = sample("reward_episode_ended_total", {"environment": "arithmetic_tools", "status": "FINISHED"}) or 0
    start = run(manager.open(EpisodeSpec("arithmetic_tools", index=6)))
    assert sample("reward_episode_sessions") == manager.admission.open >= 1
    run(manager.call_tool(start.session_id, ToolCall("submit_answer", {"answer": "0"})))
    run(manager.close(start.session_id))
    assert sample("reward_episode_ended_total", {"environment": "arithmetic_tools", "status": "FINISHED"}) == before + 1
    assert sample("reward_episode_tool_calls_total", {"tool": "submit_answer", "status": "FINISHED"}) >= 1


def test_closing_the_manager_ends_every_session_and_refuses_new_ones(shared):
    manager = shared(EnvironmentsConfig(sandbox_concurrency=1))
    with loop_thread() as (_, run):
        start = run(manager.open(EpisodeSpec("arithmetic_tools", index=0)))
        run(manager.aclose())
        assert manager.session_count() == 0 and manager.admission.open == 0 and manager.work_in_flight() == 0
        with pytest.raises(EpisodeError) as refused:
            run(manager.open(EpisodeSpec("arithmetic_tools", index=0)))
        assert refused.value.status is EpisodeStatus.REFUSED
        with pytest.raises(EpisodeError) as lost:
            run(manager.state(start.session_id))
        assert lost.value.status is EpisodeStatus.SESSION_LOST
