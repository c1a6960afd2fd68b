"""`make bench-startup`: how long `reward-service serve` takes from launch to health SERVING.

Why: a trainer, a test or an orchestrator waits for this before the first request, and work done at
start-up (the tasks' self-checks, nltk imports) adds to it. Each repeat launches a fresh
`python -m reward_service serve --port <free>` and polls the standard gRPC health check every 20 ms;
the median of the repeats is reported. Pass ``--tree DIR`` more than once to compare checkouts
(repeats interleaved, same machine state).

    make bench-startup
    .venv/bin/python -m bench.bench_startup --repeats 5 --tree . --tree /tmp/old-checkout
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward_core.ports import free_port


def start_to_serving(tree: str, timeout_s: float = 300.0) -> float:
    """Seconds from launching a server in ``tree`` to its overall health answering SERVING."""
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "reward_service", "serve", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tree)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = health_pb2_grpc.HealthStub(channel)
    try:
        while time.perf_counter() - start < timeout_s:
            try:
                answer = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=0.5)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return time.perf_counter() - start
            except grpc.RpcError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"the server in {tree} exited with {proc.returncode} before serving")
            time.sleep(0.02)
        raise TimeoutError(f"the server in {tree} was not SERVING within {timeout_s:g}s")
    finally:
        channel.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tree", action="append", help="checkout to run the server from (default: .)")
    args = parser.parse_args()
    trees = args.tree or ["."]
    times: dict[str, list[float]] = {tree: [] for tree in trees}
    for _ in range(args.repeats):
        for tree in trees:
            times[tree].append(start_to_serving(tree))
    for tree, found in times.items():
        print(f"{tree}: start-to-SERVING median {statistics.median(found):.2f} s over {len(found)} "
              f"(each: {' '.join(f'{t:.2f}' for t in found)})")


if __name__ == "__main__":
    main()
