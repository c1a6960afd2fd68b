"""`make demo`: the reward suite end to end on this machine, on embedded defaults.

Why: shows the whole path a trainer uses — a reward server in its own process,
a JSONL file of rollouts scored through it over gRPC, per-rollout statuses — and
then a policy actually learning from it: GRPO on the tiny arithmetic model against a
real reward server (~2 minutes on two CPU cores, with its progress bar), ending in
the reward-curve PNG. Everything it starts is stopped afterwards. Launch lines it runs:

    python -m reward_service serve --port PORT --workers 2 --config configs/rewards.yaml
    python -m reward_service score --in data/sample_rollouts.jsonl --out runs/demo/scores.jsonl \
        --endpoint 127.0.0.1:PORT
    python -m examples.tiny.make_start --out runs/tiny_start --seed 0      # skipped when already built
    trainer-client --log-level WARNING grpo --config configs/demo_grpo.yaml --run-dir runs/demo/grpo \
        --set model.path=runs/tiny_start --set data.train=runs/tiny_start/rl_train.jsonl --set run.resume=false
    trainer-client plot runs/demo/grpo                                            # -> runs/demo/grpo/curves.png

``--skip-training`` stops after the scoring part.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward_core.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample_rollouts.jsonl"
OUT_DIR = ROOT / "runs" / "demo"
TINY_START = ROOT / "runs" / "tiny_start"
GRPO_CONFIG = ROOT / "configs" / "demo_grpo.yaml"
GRPO_RUN = OUT_DIR / "grpo"
WINDOW = 10  # steps averaged for the start/end reward


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


def score_sample(env: dict[str, str]) -> None:
    """Part 1: a reward server process scores data/sample_rollouts.jsonl over gRPC; prints the summary."""
    address = f"127.0.0.1:{free_port()}"
    out = OUT_DIR / "scores.jsonl"
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


def train_tiny_policy(env: dict[str, str]) -> None:
    """Part 2: GRPO on the tiny start policy against an embedded reward server, then the reward-curve PNG."""
    if (TINY_START / "warmup.json").is_file():
        print(f"\nusing the tiny start checkpoint in {TINY_START.relative_to(ROOT)}")
    else:
        print(f"\nbuilding the tiny start checkpoint in {TINY_START.relative_to(ROOT)} (~35 s) ...", flush=True)
        subprocess.run([sys.executable, "-m", "examples.tiny.make_start", "--out", str(TINY_START),
                        "--seed", "0"], check=True, env=env, cwd=ROOT)
    shutil.rmtree(GRPO_RUN, ignore_errors=True)  # a fresh run each time (the demo's own directory)
    print(f"GRPO with {GRPO_CONFIG.relative_to(ROOT)} (150 steps, reward server on loopback) ...", flush=True)
    quiet = {**env, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}  # only our progress bar, not transformers' save bars
    subprocess.run([sys.executable, "-m", "trainer_client", "--log-level", "WARNING", "grpo", "--config",
                    str(GRPO_CONFIG), "--run-dir", str(GRPO_RUN), "--set", f"model.path={TINY_START}",
                    "--set", f"data.train={TINY_START / 'rl_train.jsonl'}", "--set", "run.resume=false"],
                   check=True, env=quiet, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-m", "trainer_client", "--log-level", "WARNING", "plot", str(GRPO_RUN)],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    metrics = [json.loads(line) for line in (GRPO_RUN / "metrics.jsonl").read_text().splitlines() if line.strip()]
    first = statistics.fmean(m["reward_mean"] for m in metrics[:WINDOW])
    last = statistics.fmean(m["reward_mean"] for m in metrics[-WINDOW:])
    wait = sum(m["time/wait_reward_s"] for m in metrics) / sum(m["time/step_s"] for m in metrics)
    print(f"\nmean reward: first {WINDOW} steps {first:.3f} -> last {WINDOW} steps {last:.3f} "
          f"({len(metrics)} steps, {100 * wait:.1f}% of step time waiting for rewards)")
    print(f"reward curve: {(GRPO_RUN / 'curves.png').relative_to(ROOT)}; metrics: "
          f"{(GRPO_RUN / 'metrics.jsonl').relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-training", action="store_true", help="only score the sample rollouts")
    args = parser.parse_args(argv)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    score_sample(env)
    if not args.skip_training:
        train_tiny_policy(env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
