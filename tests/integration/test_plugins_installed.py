"""Plugins that cannot take a server down (issue 22): the shipped example installs and works from
outside the checkout, and a broken plugin in the same environment is skipped and reported, per task
health saying which, while the server serves the rest (``--strict-plugins`` refuses to start)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward_core.clients import RewardClient
from reward_core.ports import free_port
from reward_service.router.server import task_health_name

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "word_count_plugin"
HANG_GUARD_S = 120.0
SERVING = health_pb2.HealthCheckResponse.SERVING


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The shipped example, really installed (pip, into a directory of its own), and a broken plugin beside it."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(EXAMPLE)], check=True, timeout=300, cwd=target)
    info = target / "broken_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""
        [reward_service.tasks]
        broken_task = broken_plugin_module:Task
    """))
    (target / "broken_plugin_module.py").write_text("raise ImportError('needs a package that is not installed')\n")
    return target


def _env(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(site)}


def test_the_shipped_example_installs_and_scores_outside_the_checkout(site: Path, tmp_path: Path) -> None:
    code = ("from reward_service.router.registry import TaskRegistry\n"
            "r = TaskRegistry(); r.load_entry_points()\n"
            "print(r.get('word_budget').score('one two three', {'max_words': 2}).score)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(site), capture_output=True,
                         text=True, timeout=HANG_GUARD_S)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0.5"


def _start(site: Path, tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "reward_service", "serve", "--port", str(port), "--workers", "1",
                             "--grace-s", "0", *extra], cwd=tmp_path, env=_env(site),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, f"127.0.0.1:{port}"


def test_a_broken_plugin_is_skipped_and_health_names_it(site: Path, tmp_path: Path) -> None:
    proc, address = _start(site, tmp_path)
    try:
        with grpc.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + HANG_GUARD_S
            while True:
                try:
                    if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == SERVING:
                        break
                except grpc.RpcError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
                time.sleep(0.1)
            status = health.Check(health_pb2.HealthCheckRequest(service=task_health_name("broken_task")), timeout=5)
            assert status.status == health_pb2.HealthCheckResponse.NOT_SERVING
            status = health.Check(health_pb2.HealthCheckRequest(service=task_health_name("word_budget")), timeout=5)
            assert status.status == SERVING
        status_cli = subprocess.run([sys.executable, "-m", "reward_service", "status", "--endpoint", address,
                                     "--interval", "0"], cwd=tmp_path, capture_output=True, text=True,
                                    timeout=HANG_GUARD_S)
        assert status_cli.returncode == 1, status_cli.stdout + status_cli.stderr  # a task left out is not OK
        last = status_cli.stdout.rstrip().splitlines()[-1]
        assert last == "status: NOT OK (1 task(s) not loaded: broken_task)", status_cli.stdout
        assert "plugin failed to load: broken_task" in status_cli.stdout
        with RewardClient(address, timeout_s=HANG_GUARD_S) as client:
            good, broken = client.score([
                {"id": "a", "task": "word_budget", "completion": "one two", "reference": {"max_words": 2}},
                {"id": "b", "task": "broken_task", "completion": "x", "reference": {}}])
        assert good.scored and good.score == 1.0
        assert not broken.scored and "needs a package that is not installed" in broken.error
    finally:
        proc.kill()
        output = proc.communicate(timeout=30)[0]
    assert "task plugin 'broken_task'" in output and "skipped" in output   # logged, with its traceback


def test_strict_plugins_refuses_to_start(site: Path, tmp_path: Path) -> None:
    proc, _ = _start(site, tmp_path, "--strict-plugins")
    try:
        output = proc.communicate(timeout=HANG_GUARD_S)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert "Traceback" not in output  # a user's mistake: one line saying what, why, and that the flag made it fatal
    said = [line for line in output.splitlines() if line.startswith("reward-service serve: error:")]
    assert len(said) == 1, output
    assert "task plugin 'broken_task'" in said[0] and "needs a package that is not installed" in said[0]
    assert "--strict-plugins" in said[0]
