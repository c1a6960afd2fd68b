"""`make bench-episodes`: many 3-tool-call episodes at 64 concurrent sessions, through ORS (or gRPC, or in process).

Why: an environment server must finish (or fail typed) every episode and leak nothing, at the
concurrency a trainer drives it. This runs ``arithmetic_tools`` episodes end to end with a scripted
policy (bench/episode_policy.py): ``calculator`` (the product), ``calculator`` (a check),
``submit_answer`` -- the product, or for 10% of the rows the product plus one, so that every reward is
checked against the one it should be. ``--via`` picks the path (bench/episode_paths.py): ``ors`` (the
default: the ``openreward`` package's own client against ``reward-service serve-http``, which holds one
gRPC stream per episode to ``reward-service serve --serve-environments``, each in its own process, as
deployed), ``grpc`` (``EnvironmentClient`` straight to that server) or ``inprocess`` (the session
manager in this process: the host's own floor, no transport).

It prints: episodes completed (FINISHED with the right reward; goal >= 99.9%) and every other ending by
kind (a reward that disagrees, an untyped error or a hang: goal 0); what is left once the clients have
closed their sessions (goal 0: the host's open sessions, episodes never ended, the door's sessions, tool
work in flight; its processes and memory against the start, after a warm-up); p50/p99 per tool call
of the round trip the client sees, the host's own time for the call, for the calculator sympy's time
alone (the same expressions evaluated in this process afterwards), and our overhead (round trip minus
the tool's time). Exit status 1 when a goal is missed.

    make bench-episodes                                                  # 10,000 episodes through ORS
    .venv/bin/python bench/bench_episodes.py --episodes 500              # a quick look
    .venv/bin/python bench/bench_episodes.py --episodes 500 --via grpc   # the same without the door
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

from episode_paths import VIAS, Leftovers, serve, settle
from episode_runs import Tally, Workload, percentile, run_many

GOAL_COMPLETE = 0.999


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=10_000, help="episodes measured")
    p.add_argument("--concurrency", type=int, default=64, help="episodes open at once (the host admits as many)")
    p.add_argument("--via", choices=VIAS, default="ors", help="how episodes reach the environments")
    p.add_argument("--warmup", type=int, default=320,
                   help="episodes run before the baseline is taken (the server's memory plateaus after a few hundred)")
    p.add_argument("--wrong-share", type=float, default=0.1, help="share of rows answered wrong on purpose")
    p.add_argument("--episode-timeout", type=float, default=300.0, help="an episode not ended by then is HUNG")
    p.add_argument("--compute-sample", type=int, default=1000,
                   help="calculator calls whose expression is evaluated again here to time sympy alone")
    args = p.parse_args(argv)
    if args.episodes < 1 or args.concurrency < 1 or args.warmup < 0 or not 0 <= args.wrong_share <= 1:
        p.error("need --episodes >= 1, --concurrency >= 1, --warmup >= 0, 0 <= --wrong-share <= 1")
    return args


def sympy_ms(tally: Tally, sample: int) -> dict[int, float]:
    """sympy's own time (ms) for a sample of the calculator calls, keyed by call index (this process, idle)."""
    from reward_service.environments.calculator import evaluate

    chosen = [i for i, call in enumerate(tally.calls) if call[0] == "calculator"]
    chosen = random.Random(0).sample(chosen, min(sample, len(chosen)))
    evaluate("1 * 1")  # sympy's first call imports and caches
    timed = {}
    for i in chosen:
        start = time.perf_counter()
        evaluate(tally.calls[i][3])
        timed[i] = (time.perf_counter() - start) * 1000.0
    return timed


def print_latency(tally: Tally, compute: dict[int, float]) -> None:
    print(f"{'per tool call (ms)':48s} {'p50':>9s} {'p99':>9s}")

    def row(label: str, values: list[float]) -> None:
        print(f"  {label:46s} {percentile(values, 50):9.2f} {percentile(values, 99):9.2f}")

    for tool in sorted({c[0] for c in tally.calls}):
        calls = [(i, c) for i, c in enumerate(tally.calls) if c[0] == tool]
        row(f"{tool}: round trip (client)", [c[1] for _, c in calls])
        row(f"{tool}: the host's time for the call", [c[2] for _, c in calls])
        row(f"{tool}: our transport (round trip - host)", [c[1] - c[2] for _, c in calls])
        timed = [(c, compute[i]) for i, c in calls if i in compute]
        if timed:
            row(f"{tool}: sympy alone (n={len(timed)}, here, idle)", [ms for _, ms in timed])
            row(f"{tool}: our overhead (round trip - sympy)", [c[1] - ms for c, ms in timed])
    row("every call: round trip", [c[1] for c in tally.calls])


def report(args: argparse.Namespace, tally: Tally, wall_s: float, before: Leftovers, after: Leftovers,
           compute: dict[int, float]) -> bool:
    """Prints the figures; whether every goal was met."""
    done = tally.endings["right"]
    print(f"\n{args.episodes} episodes of arithmetic_tools (3 tool calls each) via {args.via} at {args.concurrency} "
          f"concurrent sessions: {wall_s:.1f} s, {args.episodes / wall_s:.1f} episodes/s, "
          f"{len(tally.calls) / wall_s:.1f} tool calls/s (after {args.warmup} warm-up episodes)")
    print(f"completed with the right reward: {done} ({100 * done / args.episodes:.2f}%, goal >= "
          f"{100 * GOAL_COMPLETE:g}%); {args.wrong_share:.0%} of rows answered wrong on purpose (expected reward 0)")
    for kind, count in tally.endings.most_common():
        if kind != "right":
            print(f"  {count:6d}  {kind}")
    untyped = sum(tally.untyped().values())
    print(f"silently wrong rewards, untyped errors, hangs: {untyped} (goal 0); first tool answered a wrong "
          f"product: {tally.tool_outputs_wrong}")
    unknown = "n/a" if after.work_in_flight < 0 else f"{after.work_in_flight:.0f}"
    print(f"left after the run: open sessions {after.sessions_open:.0f}, episodes never ended "
          f"{after.sessions_held - before.sessions_held:.0f}, door sessions {after.door_sessions:.0f}, tool work in "
          f"flight {unknown} (goal 0 each)")
    print(f"host processes {before.processes} -> {after.processes}; host memory (RSS of its tree) "
          f"{before.rss_mb:.0f} -> {after.rss_mb:.0f} MiB ({after.rss_mb - before.rss_mb:+.0f})")
    print_latency(tally, compute)
    leaked = after.sessions_open or after.door_sessions or after.work_in_flight > 0 or \
        after.sessions_held > before.sessions_held or after.processes > before.processes
    return done / args.episodes >= GOAL_COMPLETE and not untyped and not leaked


async def bench(args: argparse.Namespace, log_dir: Path) -> bool:
    workload = Workload(wrong_share=args.wrong_share, episode_timeout_s=args.episode_timeout)
    async with serve(args.via, args.concurrency, log_dir) as served:
        await run_many(served, workload, range(args.warmup), min(args.concurrency, max(1, args.warmup)))
        before = await settle(served)
        tally, wall_s = await run_many(served, workload, range(args.warmup, args.warmup + args.episodes),
                                       args.concurrency)
        after = await settle(served)
    compute = sympy_ms(tally, args.compute_sample)
    return report(args, tally, wall_s, before, after, compute)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-episodes-") as tmp:
        ok = asyncio.run(bench(args, Path(tmp)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
