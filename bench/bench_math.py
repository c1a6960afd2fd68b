"""`make bench-math`: our math verifier against HF math-verify, same cases, same run.

Why: accuracy and speed claims about the math reward must be measured side by
side with the peer, not asserted. Two parts:

1. Verifier, single process, on every case of ``data/math_devset.jsonl`` (and of
   ``data/math_heldout.jsonl``, a set written later by another author and never
   used while developing the verifier): accuracy overall and per category;
   on the dev set also verifications per second, p50/p99/worst latency,
   for ours (``reward_service.verifiers.math.grade``) and math-verify
   (``verify(parse(gold), parse(completion))``, its defaults: 5 s timeouts).
2. End to end: 1,024 GSM8K-style rollouts (64 groups of 16 distinct completions)
   scored through a real reward server in its own process (2 workers) over
   gRPC, as one batch and as a stream of groups, and in-process through the same
   engine without gRPC: rollouts per second and the share of time spent outside
   verification.

    make bench-math                      # installs math-verify (bench extra) first
    .venv/bin/python bench/bench_math.py --skip-e2e
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from math_peer import peer

from reward_core.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
DEVSET = ROOT / "data" / "math_devset.jsonl"
# Written later by another author, never used while developing the verifier.
HELDOUT = ROOT / "data" / "math_heldout.jsonl"


def load_cases(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def ours() -> Callable[[str, str], bool]:
    from reward_service.verifiers.math import grade

    return lambda completion, gold: grade(completion, gold).correct


def run_verifier(check: Callable[[str, str], bool], cases: list[dict]) -> list[tuple[bool, float]]:
    for warm in ("\\boxed{1}", "#### 2", "The answer is \\frac{1}{2}"):
        check(warm, "1")
    out = []
    for case in cases:
        start = time.perf_counter()
        verdict = check(case["completion"], case["gold"])
        out.append((verdict, time.perf_counter() - start))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report_accuracy(path: Path, cases: list[dict], runs: dict[str, list[tuple[bool, float]]]) -> None:
    names = list(runs)
    cats = sorted({c["category"] for c in cases})
    print(f"\n== Accuracy on {path.relative_to(ROOT)} ({len(cases)} cases) ==")
    print(f"{'category':<26}{'n':>4}" + "".join(f"{n:>14}" for n in names))
    worse = []
    for cat in cats + ["ALL"]:
        idx = [i for i, c in enumerate(cases) if cat in ("ALL", c["category"])]
        accs = {n: sum(runs[n][i][0] == cases[i]["expected"] for i in idx) / len(idx) for n in names}
        if cat != "ALL" and accs[names[0]] < accs[names[1]]:
            worse.append(cat)
        print(f"{cat:<26}{len(idx):>4}" + "".join(f"{accs[n]:>14.1%}" for n in names))
    print(f"categories where {names[0]} is below {names[1]}: {worse or 'none'}")
    misses = [c["id"] for c, (v, _) in zip(cases, runs[names[0]]) if v != c["expected"]]
    print(f"{names[0]} misses ({len(misses)}): {misses}")


def report_speed(cases: list[dict], runs: dict[str, list[tuple[bool, float]]]) -> None:
    names = list(runs)
    print("\n== Speed, single process ==")
    print(f"{'':<34}" + "".join(f"{n:>14}" for n in names) + f"{'ratio':>10}")
    normal = [i for i, c in enumerate(cases) if c["category"] != "pathological"]
    rows = [
        ("verifications/s, all cases", lambda n: len(cases) / sum(t for _, t in runs[n])),
        ("verifications/s, non-pathological", lambda n: len(normal) / sum(runs[n][i][1] for i in normal)),
        ("p50 latency ms", lambda n: 1000 * pct([t for _, t in runs[n]], 0.50)),
        ("p99 latency ms", lambda n: 1000 * pct([t for _, t in runs[n]], 0.99)),
        ("worst latency ms", lambda n: 1000 * max(t for _, t in runs[n])),
    ]
    for label, fn in rows:
        a, b = fn(names[0]), fn(names[1])
        ratio = a / b if "verifications" in label else b / a
        print(f"{label:<34}{a:>14.2f}{b:>14.2f}{ratio:>9.1f}x")
    for n in names:
        worst = max(range(len(cases)), key=lambda i: runs[n][i][1])
        print(f"slowest case for {n}: {cases[worst]['id']} ({1000 * runs[n][worst][1]:.1f} ms)")


def gsm8k_rollouts(n_groups: int = 64, group_size: int = 16, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rollouts = []
    for g in range(n_groups):
        a, b, c = rng.randint(10, 99), rng.randint(2, 9), rng.randint(1, 50)
        gold = a * b + c
        for k in range(group_size):
            answer = gold if rng.random() < 0.5 else gold + rng.choice([-10, -1, 1, 2, 100])
            completion = (f"Step 1: {a} * {b} = {a * b}. Step 2: {a * b} + {c} = {answer}. "
                          f"Attempt {k}, so the total is {answer:,}.\n#### {answer}")
            rollouts.append({"id": f"g{g}-{k}", "task": "gsm8k", "completion": completion,
                             "reference": {"answer": str(gold)}, "group_id": f"g{g}"})
    return rollouts


def bench_e2e(workers: int) -> None:
    from reward_core.contract import Rollout
    from reward_service.router.config import ScorerConfig
    from reward_service.router.scoring import Scorer
    from trainer_client import RewardClient

    rollouts = gsm8k_rollouts()
    groups = [rollouts[i:i + 16] for i in range(0, len(rollouts), 16)]
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "reward_service", "--log-level", "WARNING", "serve",
                               "--port", str(port), "--workers", str(workers)])
    try:
        with RewardClient(f"127.0.0.1:{port}", timeout_s=120, chunk_size=1024) as client:
            client.score(gsm8k_rollouts(2, 16, seed=99))  # waits for the server; warms the workers
            start = time.perf_counter()
            batch = client.score_batch(rollouts)
            t_batch = time.perf_counter() - start
            start = time.perf_counter()
            streamed = [r for b in client.stream(iter(groups)) for r in b.results]
            t_stream = time.perf_counter() - start
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert len(batch.results) == len(streamed) == len(rollouts) and all(r.scored for r in batch.results)
    with Scorer(ScorerConfig(workers=workers)) as scorer:
        objs = [Rollout.from_dict(r) for r in rollouts]
        scorer.score(objs[:32])
        start = time.perf_counter()
        local = scorer.score(objs)
        t_local = time.perf_counter() - start
    verify_s = sum(r.elapsed_ms for r in batch.results) / 1000.0
    print(f"\n== End to end: {len(rollouts)} GSM8K rollouts (64 groups of 16), {workers} workers, "
          f"{os.cpu_count()} cores ==")
    print(f"{'path':<36}{'seconds':>9}{'rollouts/s':>12}")
    for label, t in (("gRPC Score, one batch", t_batch), ("gRPC ScoreStream, 64 groups", t_stream),
                     ("in-process engine, no gRPC", t_local)):
        print(f"{label:<36}{t:>9.3f}{len(rollouts) / t:>12.0f}")
    print(f"verification time (sum over items, in workers): {verify_s:.3f}s "
          f"= {verify_s / workers:.3f}s of wall time on {workers} workers")
    print(f"share of gRPC batch time outside verification: {1 - verify_s / workers / t_batch:.1%}")
    print(f"share of gRPC batch time due to gRPC + serialization (vs in-process): {1 - t_local / t_batch:.1%}")
    same = [r.score for r in local.results] == [r.score for r in batch.results]
    print(f"mean reward {statistics.mean(r.score for r in batch.results):.3f}; "
          f"in-process results equal gRPC results: {same}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-e2e", action="store_true", help="only the verifier comparison")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    verifiers = {"ours": ours(), "math-verify": peer()}
    for path in (DEVSET, HELDOUT):
        if not path.exists():
            continue
        cases = load_cases(path)
        runs = {name: run_verifier(check, cases) for name, check in verifiers.items()}
        report_accuracy(path, cases, runs)
        if path == DEVSET:
            report_speed(cases, runs)
    if not args.skip_e2e:
        bench_e2e(args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
