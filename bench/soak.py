"""`make soak`: a real reward server under mixed load while its workers and sandbox processes are killed.

Why: a reward server sits in the middle of training runs that cost thousands of GPU-hours.
It must never drop a rollout, never turn a failure into a score, never wedge and never
grow without bound -- and the only way to know is to hold it under load and faults.

What it does: starts ``python -m reward_service serve`` (127.0.0.1, a free port, 2 workers,
the process sandbox) in its own process; 8 client threads (``RewardClient``, one channel
each) send GRPO-like batches (1-3 groups of 8-16 rollouts) for a fixed time, half through
``Score`` and half through ``ScoreStream``: math and gsm8k answers and code (a right and a
wrong program) whose right score is known by construction, plus now and then a program
that loops, allocates 2 GiB or forks, a tower of exponents, a 200 kB completion
(bench/soak_workload.py). Meanwhile a seeded fault injector SIGKILLs a reward worker or a
sandbox process every 2-5 s (bench/soak_procs.py). At the end it prints rollouts sent,
answered, by status, **lost** (no result, a duplicate, or a wrong id), **silently wrong**
(a *scored* result that disagrees with the known score; an unscored TIMEOUT/ERROR is
allowed), latency per call, throughput, the server tree's RSS, and the faults injected.

Exit status 1 when anything was lost or silently wrong, the tree's RSS at the end exceeds
2x start + 300 MB, the server stops answering, or a process it started outlives it.

    make soak
    .venv/bin/python bench/soak.py --seconds 15 --clients 4          # the smoke run (tests/e2e)
    .venv/bin/python bench/soak.py --no-faults --seed 3 --workers 4
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import grpc
from soak_procs import FaultInjector, Watcher, sandbox_cgroups, start_server, stop_server
from soak_report import Ledger, log_tail, print_report
from soak_workload import make_batch

from reward_core.ports import free_port
from trainer_client import RewardClient

SERVER_GRACE_S = 10.0
PROBE = [({"id": "probe-m", "task": "math", "completion": "$\\boxed{\\frac{6}{4}}$", "reference": "3/2"}, 1.0),
         ({"id": "probe-g", "task": "gsm8k", "completion": "so 7\n#### 8", "reference": "7"}, 0.0),
         ({"id": "probe-c", "task": "code", "completion": "```python\ndef add(a, b):\n    return a + b\n```",
           "reference": {"cases": [{"args": [1, 2], "expected": 3}], "entry_point": "add"}}, 1.0)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0, help="how long clients start new calls")
    p.add_argument("--clients", type=int, default=8, help="concurrent client threads")
    p.add_argument("--seed", type=int, default=0, help="seeds the workload and the fault injector")
    p.add_argument("--no-faults", action="store_true", help="no SIGKILLs: the load alone")
    p.add_argument("--workers", type=int, default=2, help="reward worker processes of the server")
    p.add_argument("--fault-kinds", nargs="+", default=["worker", "program", "slot"],
                   choices=["worker", "program", "slot"],
                   help="what the injector may SIGKILL: reward workers, running programs, sandbox slot processes")
    p.add_argument("--fault-interval", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX"),
                   help="seconds between faults (uniform)")
    p.add_argument("--pathological-rate", type=float, default=0.3, help="share of calls with a pathological item")
    p.add_argument("--code-timeout", type=float, default=3.0,
                   help="the code task's per-program limit (timeout_s): looping programs cost this much")
    p.add_argument("--call-timeout", type=float, default=120.0, help="client deadline per call")
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.clients < 1 or args.workers < 1 or not 0 <= args.pathological_rate <= 1:
        p.error("need --seconds > 0, --clients >= 1, --workers >= 1, 0 <= --pathological-rate <= 1")
    return args


def client_loop(idx: int, endpoint: str, args: argparse.Namespace, ledger: Ledger, stop_at: float,
                stop: threading.Event) -> None:
    rng = random.Random(f"{args.seed}-client-{idx}")
    with RewardClient(endpoint, timeout_s=args.call_timeout) as client:
        n = 0
        while time.monotonic() < stop_at and not stop.is_set():
            groups = make_batch(rng, f"c{idx}-b{n}", args.pathological_rate)
            n += 1
            method = "Score" if rng.random() < 0.5 else "ScoreStream"
            ledger.sent(groups)
            results, error = [], None
            start = time.perf_counter()
            try:
                if method == "Score":
                    results = client.score([r for g in groups for r, _ in g])
                else:
                    for batch in client.stream(iter([[r for r, _ in g] for g in groups])):
                        results.extend(batch.results)
            except grpc.RpcError as exc:
                error = f"{exc.code().name}: {exc.details()}"[:300]
            except Exception as exc:  # noqa: BLE001 -- a client-side failure is a finding: record it, go on
                error = f"CLIENT {type(exc).__name__}: {exc}"[:300]
            ledger.record(method, time.perf_counter() - start, groups, results, error, ordered=method == "Score")


def wait_ready(endpoint: str, server, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    with RewardClient(endpoint, timeout_s=5.0, connect_timeout_s=None) as client:   # a server still starting
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"the reward server exited with {server.returncode} while starting")
            try:
                client.list_tasks()
                return
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the reward server did not answer within {timeout_s:.0f} s") from None
                time.sleep(0.5)


def probe(endpoint: str) -> str:
    """'' when the server answers a known batch right within 60 s, else what went wrong."""
    try:
        with RewardClient(endpoint, timeout_s=60.0) as client:
            results = client.score([r for r, _ in PROBE])
    except grpc.RpcError as exc:
        return f"{exc.code().name}: {exc.details()}"
    got = [(r.id, r.status.name, r.score) for r in results]
    want = [(r["id"], "OK", s) for r, s in PROBE]
    return "" if got == want else f"answered {got}, expected {want}"


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace, workdir: Path) -> int:
    config = workdir / "rewards.yaml"
    config.write_text(f"tasks:\n  code: {{options: {{timeout_s: {args.code_timeout}}}}}\n")
    log_path = workdir / "server.log"
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    server = start_server(port, args.workers, config, log_path)
    watcher = Watcher(server.pid)
    injector = None
    stop = threading.Event()
    ledger = Ledger()
    interrupted = False
    outcome: dict = {}
    try:
        wait_ready(endpoint, server)
        warm = probe(endpoint)  # starts the sandbox; not counted
        if warm:
            raise RuntimeError(f"the warm-up call failed: {warm}")
        watcher.start()
        outcome["rss_start"] = watcher.sample()
        if not args.no_faults:
            injector = FaultInjector(server.pid, args.seed, tuple(args.fault_interval), tuple(args.fault_kinds))
            injector.start()
        print(f"soak: {args.clients} clients for {args.seconds:.0f} s against {endpoint} "
              f"({args.workers} workers, seed {args.seed}, faults {'off' if args.no_faults else 'on'})", flush=True)
        start = time.monotonic()
        threads = [threading.Thread(target=client_loop, name=f"soak-client-{i}", daemon=True,
                                    args=(i, endpoint, args, ledger, start + args.seconds, stop))
                   for i in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(timeout=0.5)
        outcome["wall_s"] = time.monotonic() - start
        if injector is not None:
            injector.stop()
        time.sleep(3.0)  # replacements of the last killed processes start
        outcome["probe"] = probe(endpoint)
        outcome["rss_end"] = watcher.sample()
    except KeyboardInterrupt:
        interrupted = True
        print("soak: interrupted; stopping the server", file=sys.stderr, flush=True)
    finally:
        stop.set()
        if injector is not None:
            injector.stop()
        watcher.stop()
        outcome["server_rc"], outcome["leftovers"] = stop_server(server, watcher, SERVER_GRACE_S)
        outcome["cgroups_left"] = sandbox_cgroups(watcher.seen)
    outcome["rss_peak"] = watcher.peak
    outcome["faults"] = injector.kills if injector is not None else Counter()
    outcome["fault_log"] = injector.log if injector is not None else []
    outcome["interrupted"] = interrupted
    return print_report(ledger, outcome, args, log_path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    with tempfile.TemporaryDirectory(prefix="reward-soak-") as workdir:
        try:
            return run(args, Path(workdir))
        except RuntimeError as exc:
            print(f"soak: {exc}; server log tail:", file=sys.stderr)
            for line in log_tail(Path(workdir) / "server.log"):
                print(f"  | {line}", file=sys.stderr)
            return 1


if __name__ == "__main__":
    sys.exit(main())
