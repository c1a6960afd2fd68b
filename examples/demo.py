"""`make demo`: the reward suite end to end on this machine, on embedded defaults.

Why: shows the whole path a trainer uses — a reward server in its own process,
a JSONL file of rollouts scored through it over gRPC, per-rollout statuses —
and stops everything afterwards. Launch lines it runs:

    python -m reward_service serve --port PORT --workers 2 --config configs/rewards.yaml
    python -m reward_service score --in data/sample_rollouts.jsonl --out runs/demo/scores.jsonl --endpoint 127.0.0.1:PORT
"""

from __future__ import annotations

import collections
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample_rollouts.jsonl"
OUT_DIR = ROOT / "runs" / "demo"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(address: str, timeout_s: float = 60.0) -> None:
    """Standard gRPC health check, waiting for the server to come up (no sleep-polling)."""
    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="reward.v1.RewardService"),
            timeout=timeout_s, wait_for_ready=True)
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        raise RuntimeError(f"server at {address} is not serving: {reply.status}")


def print_table(rollouts: list[dict], results: list[dict]) -> None:
    by_task: dict[str, list[dict]] = collections.defaultdict(list)
    for rollout, result in zip(rollouts, results):
        by_task[rollout["task"]].append(result)
    print(f"\n{'task':<18}{'rollouts':>9}{'scored':>8}{'mean reward':>13}  statuses")
    for task, rs in sorted(by_task.items()):
        scored = [r for r in rs if r["scored"]]
        mean = sum(r["score"] for r in scored) / len(scored) if scored else float("nan")
        statuses = collections.Counter(r["status"] for r in rs)
        print(f"{task:<18}{len(rs):>9}{len(scored):>8}{mean:>13.3f}  {dict(statuses)}")
    print(f"\n{'id':<22}{'task':<18}{'status':<19}{'score':>6}  extracted / error")
    for rollout, r in list(zip(rollouts, results))[:: max(1, len(results) // 12)]:
        note = r["extracted"] or r["error"]
        print(f"{r['id']:<22}{rollout['task']:<18}{r['status']:<19}{r['score']:>6.2f}  {note[:48]}")


def main() -> int:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    address = f"127.0.0.1:{free_port()}"
    out = OUT_DIR / "scores.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen([sys.executable, "-m", "reward_service", "serve", "--port", address.split(":")[1],
                               "--workers", "2", "--config", str(ROOT / "configs" / "rewards.yaml")], env=env)
    try:
        wait_until_serving(address)
        subprocess.run([sys.executable, "-m", "reward_service", "score", "--in", str(SAMPLE), "--out", str(out),
                        "--endpoint", address], check=True, env=env)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    rollouts = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == [r["id"] for r in rollouts], "results must match rollouts one to one"
    print_table(rollouts, results)
    print(f"\nscores written to {out.relative_to(ROOT)}; server stopped (exit code {server.returncode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
