"""Timing helper of the ``bench_tasks_*`` scripts: each contestant scores the same rows in one
process, repeats interleaved (the order rotates every repeat), the median repeat reported."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

Contestant = Callable[[Any], Any]


def _one_pass(fn: Contestant, rows: Sequence[Any]) -> tuple[float, float]:
    latencies = []
    start = time.perf_counter()
    for row in rows:
        began = time.perf_counter()
        fn(row)
        latencies.append(time.perf_counter() - began)
    total = time.perf_counter() - start
    return len(rows) / total, statistics.median(latencies)


def interleaved(contestants: dict[str, Contestant], rows: Sequence[Any],
                repeats: int) -> dict[str, tuple[float, float]]:
    """``{name: (verifications per second, p50 latency in seconds)}``, medians over ``repeats``."""
    names = list(contestants)
    for name in names:  # warm-up: imports, caches, compiled regexes
        for row in rows[: min(20, len(rows))]:
            contestants[name](row)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for repeat in range(repeats):
        order = names[repeat % len(names):] + names[: repeat % len(names)]
        for name in order:
            runs[name].append(_one_pass(contestants[name], rows))
    return {name: (statistics.median(r[0] for r in runs[name]), statistics.median(r[1] for r in runs[name]))
            for name in names}


def print_table(title: str, results: dict[str, tuple[float, float]], note: str = "") -> None:
    print(f"\n{title}" + (f"  ({note})" if note else ""))
    print(f"  {'contestant':<44} {'verif/s':>12} {'p50 µs':>10}")
    for name, (rate, p50) in results.items():
        print(f"  {name:<44} {rate:>12,.0f} {p50 * 1e6:>10.1f}")


def parse_bench_args(description: str, rows: int = 2000) -> argparse.Namespace:
    """The task benchmarks' common flags: ``--rows``, ``--repeats``, ``--seed``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", type=int, default=rows, help="generated rows to verify")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats (the median is printed)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()
