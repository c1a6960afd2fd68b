"""`bench/bench_rm_batch_curve.py`: the ceiling on what dynamic batching can gain on this machine.

Why: dynamic batching only pays when a forward pass of a few pairs costs much more per
pair than a pass of many, i.e. when fixed per-pass overhead (kernel launches, Python, a
GPU's idle lanes) dominates. On a CPU a small encoder can be compute-bound already at
batch size 1, and then no server design can merge requests into a large speed-up. This
measures that ceiling directly: the same 1,024 pairs as ``bench_rm_serving.py``, scored
in-process by the served model (``LoadedRewardModel.forward``: one padded pass under
``torch.inference_mode``, pairs length-sorted as the batcher does) at fixed batch sizes,
with no gRPC and no queueing.

    .venv/bin/python bench/bench_rm_batch_curve.py
    .venv/bin/python bench/bench_rm_batch_curve.py --sizes 1,2,4,16,64 --pairs 512

The last line is the ceiling: (seconds per pair at the serving bench's mean request size)
/ (best seconds per pair at any batch size). A dynamic-batching server can approach it,
never exceed it.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import torch
from bench_rm_serving import make_minilm_checkpoint, make_requests, native_bf16_missing


def time_batch_size(model, encoded: list, size: int, sort: bool) -> float:
    """Seconds per pair: ``encoded`` in consecutive passes of ``size``.

    ``sort``: length-sorted first, as the dynamic batcher does; per-request passes are not.
    """
    items = sorted(encoded, key=lambda e: len(e.input_ids)) if sort else encoded
    start = time.perf_counter()
    for i in range(0, len(items), size):
        model.forward(items[i:i + size])
    return (time.perf_counter() - start) / len(items)


def batch_curve(model, encoded: list, sizes: list[int], sort_above: int, rounds: int) -> dict[int, float]:
    """Best seconds per pair for each size over ``rounds`` interleaved rounds.

    Each round times every size on a different slice of the pairs, in a shuffled order, so
    a burst of load from another process hits all sizes alike; the minimum over rounds is
    the figure least disturbed by it.
    """
    rng = random.Random(0)
    chunk = max(len(encoded) // rounds, max(sizes))
    best = {size: float("inf") for size in sizes}
    for size in sizes:  # warm-up: allocator and kernels for every shape class
        model.forward(encoded[:size])
    for r in range(rounds):
        part = encoded[(r * chunk) % len(encoded):][:chunk] or encoded[:chunk]
        for size in rng.sample(sizes, len(sizes)):
            best[size] = min(best[size], time_batch_size(model, part, size, sort=size > sort_above))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1024)
    parser.add_argument("--max-per-request", type=int, default=4, help="as in bench_rm_serving: 1..this per request")
    parser.add_argument("--sizes", default="1,2,4,8,16,32,64")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--torch-threads", type=int, default=0, help="0: torch default")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--rounds", type=int, default=4, help="interleaved timing rounds (best is kept)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if skip := native_bf16_missing("cpu", args.dtype):
        print(skip)
        return 0
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    from reward_service.rm.checkpoint import load_checkpoint

    requests = make_requests(args.pairs, args.max_per_request, args.seed)
    pairs = [pair for request in requests for pair in request]
    mean_request = len(pairs) / len(requests)
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = make_minilm_checkpoint(Path(tmp) / "minilm-rm", args.max_length, args.seed)
        model = load_checkpoint(checkpoint, dtype=args.dtype)
        encoded = [model.encode(prompt, completion) for prompt, completion in pairs]
        per_pair = batch_curve(model, encoded, sizes, args.max_per_request, args.rounds)
    print(f"\n{len(pairs)} pairs, MiniLM-L6 {args.dtype}, max_length {args.max_length}, "
          f"torch threads {torch.get_num_threads()}, "
          f"{os.cpu_count()} CPUs, in-process (no gRPC)")
    print(f"{'batch size':>10}{'ms/pair':>10}{'pairs/s':>10}{'vs size 1':>11}")
    for size, seconds in per_pair.items():
        print(f"{size:>10}{seconds * 1e3:>10.2f}{1 / seconds:>10.1f}{per_pair[sizes[0]] / seconds:>10.2f}x")
    # Per-request serving runs passes of 1..max pairs; interpolate its cost at the mean request size.
    at_request = min(per_pair.items(), key=lambda kv: abs(kv[0] - mean_request))[1]
    best = min(per_pair.values())
    print(f"ceiling on dynamic batching vs per request (mean request {mean_request:.1f} pairs): "
          f"{at_request / best:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
