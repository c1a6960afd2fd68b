"""`make bench-rescore`: re-scoring a stored file with unchanged verifiers, cold vs warm reward cache.

Why: issue 22's goal says re-scoring a 100,000-rollout file whose verifiers did not change must be at
least 20x faster than its first pass, because the server's reward cache (``router/reward_cache.py``)
answers every repeated rollout without verifying it. This measures that claim instead of asserting it.

What it does: writes ``--n`` distinct math/GSM8K-style rollouts (the completions and golds of
``data/math_devset.jsonl``, each made distinct by a letters-only tag so no two share a cache key), scores
them once with ``score --keep-inputs`` semantics, then times ``rescore`` of that file -- read, score,
flip report, atomic write, the same code as ``reward-service rescore`` -- through one in-process engine:

- **cold**: an empty reward cache (every rollout verified in the worker processes);
- **warm**: the same engine again, the cache filled by the cold pass (nothing verified).

Cold and warm passes are interleaved ``--repeats`` times (a fresh empty cache before each cold one; with
``--disk`` the cold pass's outcomes are in the file before the warm pass starts);
it prints the median of each and their ratio, the warm pass's CPU time (this process: on a shared machine
steadier than its wall time), and checks that warm results equal cold ones.
``--disk`` also times a warm pass of a *new* engine reading the ``--reward-cache`` SQLite file (what a
restarted or second replica sees, and a CLI user re-running ``rescore``). With ``--disk`` the warm passes have
that file behind them, so ``rescore`` reads the file with one worker process per core, which answer from it
(``router/rows_from_cache.py``); each repeat then also times the same engine in one process (answered from its
memory) and the bench checks both write the same bytes. ``--engine`` also times the engine alone, cold vs
warm, without the file's JSON read and write (the cache's own effect: the file I/O is a floor no cache removes).

    make bench-rescore                                      # 100,000 rollouts, 3 repeats
    .venv/bin/python bench/bench_rescore.py --n 5000 --repeats 2 --workers 2 --engine --disk   # a quick run
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from reward_core.contract import Rollout
from reward_service.jsonl_io import write_results
from reward_service.rescore import read_scored, rescore

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 256  # rollouts per engine call, as ``reward-service score``/``rescore`` send them


def tag(i: int) -> str:
    """A letters-only tag: no digits, so no extractor reads it as an answer."""
    letters = ""
    while True:
        i, r = divmod(i, 26)
        letters += chr(ord("a") + r)
        if not i:
            return letters


def make_rollouts(n: int) -> list[Rollout]:
    cases = [json.loads(line) for line in (ROOT / "data" / "math_devset.jsonl").read_text().splitlines() if line]
    rollouts = []
    for i in range(n):
        case = cases[i % len(cases)]
        task = "gsm8k" if case["category"].startswith("gsm8k") else "math"
        rollouts.append(Rollout(id=f"r{i:06d}", task=task, completion=f"{case['completion']}\n(sample {tag(i)})",
                                reference={"answer": case["gold"]}, group_id=f"g{i // 16}"))
    return rollouts


class EngineSource:
    """The CLI's in-process scoring generator over one long-lived engine (so its cache outlives a pass)."""

    def __init__(self, scorer) -> None:
        self.scorer = scorer

    def __call__(self, rollouts, args, bar):
        for start in range(0, len(rollouts), CHUNK):
            chunk = rollouts[start:start + CHUNK]
            yield from self.scorer.score(chunk).results
            bar.update(len(chunk))


def timed_rescore(source: EngineSource, in_path: Path, out_path: Path, cpu: list[float] | None = None,
                  one_process: bool = False) -> float:
    """Seconds one ``rescore`` of ``in_path`` takes; appends its CPU seconds in this process (every thread; the
    worker processes' left out) to ``cpu``. ``one_process``: never the parallel read (however large the file)."""
    args = argparse.Namespace(in_path=str(in_path), out_path=str(out_path), rollouts=None, task="", force=False,
                              epsilon=1e-6, examples=3, fail_on_flip=False, quiet=True)
    start, start_cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rescore(args, source, source.scorer, **({"parallel_min_bytes": 2**62} if one_process else {}))  # as the CLI
    if cpu is not None:
        cpu.append(time.process_time() - start_cpu)
    return time.perf_counter() - start


def timed_engine(scorer, rollouts: list[Rollout]) -> float:
    """The engine alone (no file read or write): every chunk scored as ``rescore`` sends it."""
    start = time.perf_counter()
    for begin in range(0, len(rollouts), CHUNK):
        scorer.score(rollouts[begin:begin + CHUNK])
    return time.perf_counter() - start


def fresh_cache(scorer, path: str) -> None:
    from reward_service.router.reward_cache import RewardCache

    if scorer.cache is not None:
        scorer.cache.close()
    config = scorer.config
    scorer.cache = RewardCache(config.reward_cache_entries, config.reward_cache_mb * 2**20, path or None,
                               config.reward_cache_disk_entries)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="rollouts in the file (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved cold/warm pairs (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="verification workers")
    parser.add_argument("--disk", action="store_true", help="also time a new engine warmed by the SQLite file")
    parser.add_argument("--engine", action="store_true",
                        help="also time the engine alone, cold vs warm (no file read or write)")
    args = parser.parse_args()

    from reward_service.router.config import ScorerConfig
    from reward_service.router.scoring import Scorer

    with tempfile.TemporaryDirectory(prefix="bench-rescore-") as tmp:
        work = Path(tmp)
        rollouts = make_rollouts(args.n)
        old = work / "old.jsonl"
        db = ""
        config = ScorerConfig(workers=args.workers, reward_cache_entries=max(args.n, 1), reward_cache_mb=4096,
                              item_timeout_s=10.0)
        print(f"{args.n} rollouts ({sum(r.task == 'math' for r in rollouts)} math, "
              f"{sum(r.task == 'gsm8k' for r in rollouts)} gsm8k), {args.workers} workers, "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
        with Scorer(config) as scorer:
            scorer.startup_checks.wait()  # the start-up canaries run in this process: not during a timed pass
            source = EngineSource(scorer)
            with old.open("w", encoding="utf-8") as f:  # the stored file, as score --keep-inputs writes it
                for start in range(0, len(rollouts), CHUNK):  # (untimed; its verdicts are the old ones)
                    chunk = rollouts[start:start + CHUNK]
                    write_results(f, scorer.score(chunk).results, chunk)
            cold, warm, warm_cpu, engine_cold, engine_warm, single, single_cpu = [], [], [], [], [], [], []
            for rep in range(args.repeats):
                db = str(work / f"cache{rep}.sqlite") if args.disk else ""  # a new file: cold is cold
                fresh_cache(scorer, db)
                cold.append(timed_rescore(source, old, work / "cold.jsonl"))
                scorer.cache.flush()  # (untimed) the cold pass's outcomes in the file: not written during the warm one
                warm.append(timed_rescore(source, old, work / "warm.jsonl", warm_cpu))
                print(f"repeat {rep + 1}: file cold {cold[-1]:.2f} s, warm {warm[-1]:.2f} s "
                      f"({warm_cpu[-1]:.2f} s CPU), cache {scorer.cache.stats()}", flush=True)
                if args.disk:  # the same engine in one process: every line answered from its memory
                    single.append(timed_rescore(source, old, work / "single.jsonl", single_cpu, one_process=True))
                    print(f"          warm in one process (the memory cache) {single[-1]:.2f} s "
                          f"({single_cpu[-1]:.2f} s CPU)", flush=True)
                if args.engine:
                    fresh_cache(scorer, "")
                    engine_cold.append(timed_engine(scorer, rollouts))
                    engine_warm.append(timed_engine(scorer, rollouts))
                    print(f"          engine cold {engine_cold[-1]:.2f} s, warm {engine_warm[-1]:.2f} s", flush=True)
            read_s = time.perf_counter()
            read_scored(old)
            read_s = time.perf_counter() - read_s
            same = [(o.status, o.score) for _, o in read_scored(work / "cold.jsonl")] == \
                [(o.status, o.score) for _, o in read_scored(work / "warm.jsonl")]
            if args.disk:  # the parallel read and the one-process one write the same bytes
                same = same and (work / "warm.jsonl").read_bytes() == (work / "single.jsonl").read_bytes()
                scorer.cache.flush()
        disk = None
        if args.disk:
            with Scorer(config) as second:
                second.startup_checks.wait()
                fresh_cache(second, db)
                disk_cpu: list[float] = []
                disk = timed_rescore(EngineSource(second), old, work / "disk.jsonl", disk_cpu)
                hits = second.cache.stats().hits
            same = same and (work / "disk.jsonl").read_bytes() == (work / "warm.jsonl").read_bytes()
    cold_s, warm_s = statistics.median(cold), statistics.median(warm)
    print(f"\nre-score {args.n} rollouts, unchanged verifiers (median of {args.repeats}):")
    print(f"  cold (empty cache): {cold_s:8.2f} s  {args.n / cold_s:10.0f} rollouts/s")
    print(f"  warm (cache hits):  {warm_s:8.2f} s  {args.n / warm_s:10.0f} rollouts/s  "
          f"({statistics.median(warm_cpu):.2f} s CPU in this process{', workers aside' if args.disk else ''})")
    print(f"  speed-up: {cold_s / warm_s:.1f}x (goal: >= 20x); warm results equal cold: {same}")
    if single:
        single_s = statistics.median(single)
        print(f"  warm in one process (the memory cache, no workers): {single_s:.2f} s ({cold_s / single_s:.1f}x; "
              f"{statistics.median(single_cpu):.2f} s CPU)")
    print(f"  of the warm pass, reading and parsing the file alone: {read_s:.2f} s")
    if args.engine:
        e_cold, e_warm = statistics.median(engine_cold), statistics.median(engine_warm)
        print(f"  engine only (no file I/O): cold {e_cold:.2f} s, warm {e_warm:.2f} s: {e_cold / e_warm:.1f}x")
    if disk is not None:
        print(f"  warm from the SQLite file, a new engine: {disk:.2f} s ({cold_s / disk:.1f}x; {hits} hits; "
              f"{disk_cpu[0]:.2f} s CPU)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
