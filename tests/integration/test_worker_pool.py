"""Integration tests for reward_service.pool.worker_pool, with real worker processes."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reward_service.pool.worker_pool import (
    ItemTimeout,
    JobError,
    PoolClosed,
    PoolConfig,
    QueueFull,
    WorkerCrashed,
    WorkerPool,
    WorkerStartError,
)
from tests.integration import pool_jobs

pytestmark = pytest.mark.timeout(60)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _pid_alive(pid: int) -> bool:
    """True while ``pid`` is a live process (zombies count as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def _config(**overrides: Any) -> PoolConfig:
    settings: dict[str, Any] = dict(num_workers=2, item_timeout_s=5.0, memory_limit_mb=1024, start_timeout_s=20.0)
    settings.update(overrides)
    return PoolConfig(**settings)


@pytest.fixture
def make_pool() -> Iterator[Callable[..., WorkerPool[Any, Any]]]:
    """Factory for pools that are closed after the test, checking no worker survives."""
    created: list[WorkerPool[Any, Any]] = []
    seen_pids: set[int] = set()

    def factory(job_fn: Callable[[Any], Any], **overrides: Any) -> WorkerPool[Any, Any]:
        initializer = overrides.pop("initializer", None)
        initargs = overrides.pop("initargs", ())
        pool: WorkerPool[Any, Any] = WorkerPool(job_fn, _config(**overrides), initializer=initializer,
                                                initargs=initargs)
        created.append(pool)
        seen_pids.update(pool.worker_pids())
        return pool

    yield factory
    for pool in created:
        seen_pids.update(pool.worker_pids())
        pool.close(grace_s=0.0)
    assert _wait_until(lambda: not any(_pid_alive(p) for p in seen_pids), 5.0), "worker processes left behind"


def _wait_busy(pool: WorkerPool[Any, Any], busy: int) -> None:
    assert _wait_until(lambda: pool.stats().busy_workers == busy), f"expected {busy} busy workers: {pool.stats()}"


def test_map_items_returns_results_in_input_order(make_pool):
    pool = make_pool(pool_jobs.square)
    assert pool.map_items(range(200)) == [i * i for i in range(200)]
    stats = pool.stats()
    assert stats.completed == 200 and stats.pending == 0 and stats.alive_workers == 2


def test_hanging_item_times_out_while_other_items_in_batch_complete(make_pool):
    pool = make_pool(pool_jobs.dispatch)
    payloads = [("sleep_forever", None)] + [("square", i) for i in range(20)]
    started = time.monotonic()
    outcomes = pool.map_items(payloads, timeout_s=0.8)
    elapsed = time.monotonic() - started
    assert isinstance(outcomes[0], ItemTimeout)
    assert outcomes[0].timeout_s == 0.8
    assert outcomes[1:] == [i * i for i in range(20)]
    assert 0.8 <= elapsed < 5.0


def test_pool_keeps_serving_after_timeout_with_replacement_worker(make_pool):
    pool = make_pool(pool_jobs.dispatch, num_workers=1)
    old_pid = pool.submit(("pid_of_worker", None)).result()
    with pytest.raises(ItemTimeout):
        pool.submit(("sleep_forever", None), timeout_s=0.5).result(timeout=10)
    new_pid = pool.submit(("pid_of_worker", None)).result(timeout=10)
    assert new_pid != old_pid
    assert _wait_until(lambda: not _pid_alive(old_pid))
    stats = pool.stats()
    assert (stats.timeouts, stats.restarts, stats.crashes) == (1, 1, 0)
    assert pool.submit(("square", 7)).result(timeout=10) == 49


def test_time_limit_counts_from_dispatch_not_queue_time(make_pool):
    pool = make_pool(pool_jobs.sleep_then_return, num_workers=1)
    first = pool.submit(0.6, timeout_s=1.0)
    second = pool.submit(0.6, timeout_s=1.0)  # queued ~0.6 s, then runs 0.6 s: within its limit
    assert first.result(timeout=10) == 0.6
    assert second.result(timeout=10) == 0.6


def test_os_exit_reports_worker_crashed_with_exit_code_and_pool_recovers(make_pool):
    pool = make_pool(pool_jobs.dispatch)
    with pytest.raises(WorkerCrashed, match="exit code 3") as info:
        pool.submit(("exit_with", 3)).result(timeout=10)
    assert info.value.exitcode == 3 and info.value.signal is None
    assert pool.map_items([("square", i) for i in range(10)]) == [i * i for i in range(10)]
    assert pool.stats().crashes == 1
    assert _wait_until(lambda: pool.stats().alive_workers == 2)


def test_self_sigkill_reports_worker_crashed_with_signal(make_pool):
    pool = make_pool(pool_jobs.dispatch)
    with pytest.raises(WorkerCrashed, match="SIGKILL") as info:
        pool.submit(("kill_self", None)).result(timeout=10)
    assert info.value.exitcode == -9 and info.value.signal == 9
    assert pool.submit(("square", 3)).result(timeout=10) == 9


def test_segfault_reports_worker_crashed_with_sigsegv(make_pool):
    pool = make_pool(pool_jobs.dispatch)
    with pytest.raises(WorkerCrashed, match="SIGSEGV") as info:
        pool.submit(("segfault", None)).result(timeout=10)
    assert info.value.signal == 11
    assert pool.submit(("square", 4)).result(timeout=10) == 16


def test_job_exception_is_job_error_and_same_worker_keeps_serving(make_pool):
    pool = make_pool(pool_jobs.dispatch, num_workers=1)
    pid = pool.submit(("pid_of_worker", None)).result(timeout=10)
    with pytest.raises(JobError) as info:
        pool.submit(("raise_value_error", "bad input 42")).result(timeout=10)
    assert info.value.exc_type == "ValueError"
    assert info.value.message == "bad input 42"
    assert "raise_value_error" in info.value.remote_traceback
    assert pool.submit(("pid_of_worker", None)).result(timeout=10) == pid
    stats = pool.stats()
    assert (stats.job_errors, stats.crashes, stats.restarts) == (1, 0, 0)


def test_unpicklable_result_is_job_error(make_pool):
    pool = make_pool(pool_jobs.dispatch, num_workers=1)
    with pytest.raises(JobError, match="could not be pickled"):
        pool.submit(("return_unpicklable", None)).result(timeout=10)
    assert pool.submit(("square", 5)).result(timeout=10) == 25


def test_huge_allocation_fails_the_item_without_hanging_the_pool(make_pool):
    pool = make_pool(pool_jobs.dispatch, memory_limit_mb=1024)
    outcome = pool.map_items([("allocate_gb", 50)], timeout_s=20.0)[0]
    assert isinstance(outcome, (JobError, WorkerCrashed)), outcome
    if isinstance(outcome, JobError):
        assert outcome.exc_type == "MemoryError"
    assert pool.map_items([("square", i) for i in range(4)]) == [0, 1, 4, 9]


def test_timeout_kills_the_worker_and_the_children_it_spawned(make_pool, tmp_path):
    pool = make_pool(pool_jobs.dispatch, num_workers=1)
    pid_file = tmp_path / "pids"
    with pytest.raises(ItemTimeout):
        pool.submit(("spawn_child_then_hang", str(pid_file)), timeout_s=1.0).result(timeout=10)
    worker_pid, child_pid = map(int, pid_file.read_text().split())
    assert _wait_until(lambda: not _pid_alive(worker_pid) and not _pid_alive(child_pid), 3.0)


def test_submit_raises_queue_full_beyond_max_queue(make_pool):
    pool = make_pool(pool_jobs.sleep_then_return, num_workers=1, max_queue=3)
    running = pool.submit(0.5)
    _wait_busy(pool, 1)
    queued = [pool.submit(0.0) for _ in range(3)]
    with pytest.raises(QueueFull, match="max_queue=3"):
        pool.submit(0.0)
    assert running.result(timeout=10) == 0.5
    assert [f.result(timeout=10) for f in queued] == [0.0, 0.0, 0.0]
    assert pool.submit(0.0).result(timeout=10) == 0.0  # space again


def test_cancelled_queued_future_is_never_run(make_pool, tmp_path):
    pool = make_pool(pool_jobs.dispatch, num_workers=1)
    blocker = pool.submit(("sleep_then_return", 0.5))
    _wait_busy(pool, 1)
    marker = tmp_path / "ran"
    queued = pool.submit(("touch", str(marker)))
    assert queued.cancel()
    assert pool.submit(("square", 6)).result(timeout=10) == 36  # dispatched after the cancelled one
    assert blocker.result(timeout=10) == 0.5
    assert queued.cancelled() and not marker.exists()
    assert pool.stats().completed == 2


def test_submit_from_eight_threads_returns_correct_results(make_pool):
    pool = make_pool(pool_jobs.square)
    results: dict[int, list[Any]] = {}
    errors: list[BaseException] = []

    def client(tid: int) -> None:
        try:
            futures = [pool.submit(tid * 1000 + i) for i in range(150)]
            results[tid] = [f.result(timeout=30) for f in futures]
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert results == {t: [(t * 1000 + i) ** 2 for i in range(150)] for t in range(8)}
    assert pool.stats().completed == 8 * 150


def test_submit_and_wait_from_many_threads_never_stalls(make_pool):
    """Regression: workers go idle between items, so every submit must wake the dispatcher."""
    pool = make_pool(pool_jobs.square)
    errors: list[BaseException] = []

    def client() -> None:
        try:
            for i in range(1500):
                assert pool.submit(i).result(timeout=5) == i * i
        except Exception as exc:  # TimeoutError here means a lost wake-up
            errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert pool.stats().completed == 4 * 1500


def test_worker_log_records_reach_parent_logging(make_pool, caplog):
    caplog.set_level(logging.WARNING)
    pool = make_pool(pool_jobs.log_warning)
    marker = uuid.uuid4().hex
    assert pool.submit(marker).result(timeout=10) == marker

    def logged() -> list[logging.LogRecord]:
        return [r for r in caplog.records if marker in r.getMessage()]

    assert _wait_until(lambda: bool(logged()))
    record = logged()[0]
    assert record.name == "tests.integration.pool_jobs"
    assert record.levelno == logging.WARNING
    assert record.processName.startswith("reward-worker-")
    assert record.process in pool.worker_pids()


def test_log_flooding_item_still_times_out(make_pool):
    flood = logging.getLogger("tests.integration.pool_jobs.flood")
    flood.setLevel(logging.CRITICAL)  # the parent drops them; the worker still sends them
    try:
        pool = make_pool(pool_jobs.dispatch, num_workers=1)
        started = time.monotonic()
        with pytest.raises(ItemTimeout):
            pool.submit(("log_flood_forever", None), timeout_s=0.5).result(timeout=10)
        assert time.monotonic() - started < 3.0
        assert pool.submit(("square", 3)).result(timeout=10) == 9
    finally:
        flood.setLevel(logging.NOTSET)


def test_close_leaves_no_worker_processes(make_pool):
    pool = make_pool(pool_jobs.dispatch)
    assert pool.map_items([("square", 2), ("square", 3)]) == [4, 9]
    pids = pool.worker_pids()
    assert len(pids) == 2
    in_flight = pool.submit(("sleep_forever", None), timeout_s=30)
    _wait_busy(pool, 1)
    pool.close(grace_s=0.2)
    assert not [p for p in pids if _pid_alive(p)]
    with pytest.raises(PoolClosed):
        in_flight.result(timeout=5)
    assert pool.stats().alive_workers == 0


def test_close_fails_pending_items_and_rejects_new_ones(make_pool):
    pool = make_pool(pool_jobs.sleep_then_return, num_workers=1)
    running = pool.submit(0.3)
    _wait_busy(pool, 1)
    pending = [pool.submit(0.0) for _ in range(5)]
    pool.close(grace_s=5.0)
    assert running.result(timeout=5) == 0.3  # in-flight items get the grace period
    for future in pending:
        with pytest.raises(PoolClosed):
            future.result(timeout=5)
    with pytest.raises(PoolClosed):
        pool.submit(0.0)


def test_timeout_enforced_when_submitting_from_non_main_thread(make_pool):
    pool = make_pool(pool_jobs.dispatch)
    outcome: dict[str, Any] = {}

    def caller() -> None:
        started = time.monotonic()
        try:
            pool.submit(("sleep_forever", None), timeout_s=0.5).result(timeout=10)
        except ItemTimeout as exc:
            outcome["error"] = exc
        outcome["elapsed"] = time.monotonic() - started

    thread = threading.Thread(target=caller)
    thread.start()
    thread.join(15)
    assert isinstance(outcome.get("error"), ItemTimeout)
    assert 0.5 <= outcome["elapsed"] < 3.0


def test_replacement_workers_fork_from_forkserver_while_parent_threads_run(make_pool):
    pool = make_pool(pool_jobs.dispatch, num_workers=1)
    stop = threading.Event()
    lock = threading.Lock()

    def busy_thread() -> None:  # threads holding locks are what makes fork() unsafe
        while not stop.is_set():
            with lock:
                time.sleep(0.001)

    threads = [threading.Thread(target=busy_thread, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    try:
        with pytest.raises(ItemTimeout):
            pool.submit(("sleep_forever", None), timeout_s=0.5).result(timeout=10)
        assert pool.submit(("square", 9)).result(timeout=10) == 81
        worker_parent = pool.submit(("parent_pid_of_worker", None)).result(timeout=10)
        assert worker_parent != os.getpid()  # forked by the forkserver, not by this process
        assert pool.stats().restarts == 1
    finally:
        stop.set()
        for t in threads:
            t.join(5)


def test_initializer_runs_in_every_worker(make_pool):
    pool = make_pool(pool_jobs.dispatch, initializer=pool_jobs.remember, initargs=("warm",))
    assert pool.map_items([("initialized_value", None)] * 6) == ["warm"] * 6


def test_failing_initializer_raises_worker_start_error():
    with pytest.raises(WorkerStartError, match="initializer exploded"):
        WorkerPool(pool_jobs.square, _config(num_workers=1), initializer=pool_jobs.failing_initializer)


@pytest.mark.parametrize(
    ("overrides", "hint"),
    [
        ({"num_workers": 0}, "int >= 1"),
        ({"item_timeout_s": 0}, "seconds > 0"),
        ({"max_queue": 0}, "int >= 1"),
        ({"memory_limit_mb": 10}, "0 \\(no limit\\)"),
        ({"preload_modules": "sympy"}, "tuple of module"),
        ({"start_timeout_s": float("inf")}, "finite"),
    ],
)
def test_invalid_config_raises_value_error_with_fix(overrides, hint):
    with pytest.raises(ValueError, match=hint):
        PoolConfig(**overrides)


def _run_script(body: str, timeout_s: float = 30.0) -> str:
    script = f"import sys\nsys.path.insert(0, {str(REPO_ROOT)!r})\n" + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=timeout_s, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_preload_modules_are_imported_in_new_workers():
    out = _run_script("""
        from reward_service.pool.worker_pool import PoolConfig, WorkerPool
        from tests.integration import pool_jobs
        with WorkerPool(pool_jobs.modules_loaded, PoolConfig(num_workers=1, preload_modules=("colorsys",))) as pool:
            print(pool.submit(["colorsys"]).result(timeout=20)["colorsys"])
    """)
    assert out.strip() == "True"


@pytest.mark.parametrize("as_module", [False, True])
def test_the_main_modules_imports_are_made_once_in_the_fork_server(tmp_path, as_module):
    """A worker runs the main module again; what it imports is already there (the server imported it), and it
    says nothing about it (no warning of runpy's)."""
    (tmp_path / "noted.py").write_text("import os\nwith open(os.environ['NOTES'], 'a') as f:\n"
                                       "    f.write(f'{os.getpid()}\\n')\n\ndef note():\n    pass\n")
    (tmp_path / "program.py").write_text(textwrap.dedent("""
        import os
        from noted import note  # (its module's body notes each process that imports it)
        from reward_service.pool.worker_pool import PoolConfig, WorkerPool

        def pid_of_worker(_):
            return os.getpid()

        if __name__ == "__main__":
            with WorkerPool(pid_of_worker, PoolConfig(num_workers=1, preload_modules=("colorsys",))) as pool:
                print(os.getpid(), pool.submit(None).result(timeout=20))
    """))
    notes = tmp_path / "notes"
    command = [sys.executable, "-m", "program"] if as_module else [sys.executable, str(tmp_path / "program.py")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "NOTES": str(notes), "PYTHONPATH": f"{tmp_path}:{REPO_ROOT}"})
    assert done.returncode == 0 and not done.stderr, done.stderr
    program, worker = (int(pid) for pid in done.stdout.split())
    noted = [int(pid) for pid in notes.read_text().split()]
    assert noted[0] == program and worker not in noted and len(noted) == 2  # the program, then the server


def test_main_module_preload_names_what_a_worker_would_import_again(monkeypatch):
    import json
    import types

    from reward_service.pool.dispatcher import main_module_preload

    def main_module(spec_name: str | None, **names: Any) -> types.ModuleType:
        module = types.ModuleType("__main__")
        module.__spec__ = types.SimpleNamespace(name=spec_name) if spec_name else None
        module.__file__ = "/x/script.py"
        vars(module).update(names)
        return module

    orphan = types.FunctionType((lambda: None).__code__, {})
    orphan.__module__ = "not_imported_anywhere"
    mine = types.FunctionType((lambda: None).__code__, {})
    mine.__module__ = "__main__"
    found = {"json": json, "dumps": json.dumps, "Path": Path, "n": 3, "orphan": orphan, "mine": mine}
    for spec_name in (None, "tools.rescore"):  # a script, python -m tools.rescore
        monkeypatch.setitem(sys.modules, "__main__", main_module(spec_name, **found))
        assert main_module_preload() == ["json", "pathlib"]
    monkeypatch.setitem(sys.modules, "__main__", main_module("tools.__main__", **found))
    assert main_module_preload() == []  # (multiprocessing never runs a package's __main__ again)


def test_abandoned_pool_workers_exit_when_parent_dies():
    out = _run_script("""
        import os, time
        from reward_service.pool.worker_pool import PoolConfig, WorkerPool
        from tests.integration import pool_jobs
        pool = WorkerPool(pool_jobs.sleep_then_return, PoolConfig(num_workers=2, item_timeout_s=60))
        pool.submit(30)  # one worker stays busy; the other idles
        time.sleep(0.3)
        print(*pool.worker_pids(), flush=True)
        os._exit(0)  # no close(), no atexit
    """)
    pids = [int(p) for p in out.split()]
    assert len(pids) == 2
    assert _wait_until(lambda: not any(_pid_alive(p) for p in pids), 5.0)
