"""`make bench-tasks`: rg:<dataset> through our task against reasoning-gym's own ``score_answer``.

Why: the family wraps each dataset's ``score_answer`` in reference checks, answer extraction and
an outcome; this measures what that costs, per dataset, next to the call it wraps. Single process,
the same entries for both (``make_rows``: what ``make-data`` writes), each entry answered once with
its gold and once with another entry's gold, in ``<answer>`` tags. Ours: ``task.score(completion,
reference)``. Theirs: ``dataset.score_answer(answer, entry)`` on the answer already extracted and
the entry as reasoning-gym made it. Repeats interleaved, the median reported (``bench/task_timing.py``).

    make bench-tasks
    .venv/bin/python -m bench.bench_tasks_rg --entries 20 --repeats 5 [--datasets gcd,sudoku] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import reasoning_gym

from bench.task_timing import interleaved
from reward_service.tasks.reasoning_gym_data import make_rows
from reward_service.tasks.reasoning_gym_entries import DATASETS, PINNED_VERSION, installed_version
from reward_service.tasks.reasoning_gym_task import ReasoningGymTask

JUNK = "not an answer"


def rows_of(dataset: str, n: int, seed: int) -> list[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """``(completion, reference, answer, raw entry)``: each entry with its gold, then with another's."""
    made = list(make_rows(f"rg:{dataset}", n, seed))
    raw = reasoning_gym.create_dataset(dataset, size=n, seed=seed)
    golds = [r["reference"]["entry"]["answer"] for r in made]
    rows = []
    for i, row in enumerate(made):
        others = [g for g in golds if g not in (None, golds[i])]
        for answer in (golds[i] or JUNK, others[0] if others else JUNK):
            rows.append((f"<think>...</think>\n<answer>{answer}</answer>", row["reference"], answer, raw[i]))
    return rows


def bench_dataset(dataset: str, n: int, seed: int, repeats: int) -> dict[str, Any]:
    task = ReasoningGymTask(dataset)
    scorer = reasoning_gym.create_dataset(dataset)
    rows = rows_of(dataset, n, seed)
    results = interleaved({
        "reasoning-gym score_answer": lambda r: scorer.score_answer(r[2], r[3]),
        "rg task (ours)": lambda r: task.score(r[0], r[1]),
    }, rows, repeats)
    (theirs, theirs_p50), (ours, ours_p50) = results["reasoning-gym score_answer"], results["rg task (ours)"]
    return {"dataset": dataset, "rows": len(rows), "theirs_per_s": theirs, "ours_per_s": ours,
            "theirs_p50_us": theirs_p50 * 1e6, "ours_p50_us": ours_p50 * 1e6,
            "overhead_us": (1 / ours - 1 / theirs) * 1e6, "ratio": theirs / ours}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=20, help="entries per dataset (each scored twice)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats; the median is reported")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--datasets", default="", help="comma-separated datasets (default: all)")
    parser.add_argument("--json", type=Path, help="write every dataset's figures here")
    args = parser.parse_args()
    datasets = [d for d in args.datasets.split(",") if d] or list(DATASETS)
    print(f"reasoning-gym {installed_version()} (pinned {PINNED_VERSION}); {len(datasets)} datasets, "
          f"{args.entries} entries x 2 answers each, median of {args.repeats} interleaved repeats, one process")
    print(f"{'dataset':<26} {'theirs/s':>10} {'ours/s':>10} {'ours/theirs':>11} {'overhead µs':>12} {'p50 µs':>8}")
    start, figures = time.perf_counter(), []
    for dataset in datasets:
        f = bench_dataset(dataset, args.entries, args.seed, args.repeats)
        figures.append(f)
        print(f"{dataset:<26} {f['theirs_per_s']:>10,.0f} {f['ours_per_s']:>10,.0f} {1 / f['ratio']:>11.2f} "
              f"{f['overhead_us']:>12.1f} {f['ours_p50_us']:>8.1f}")
    overheads = [f["overhead_us"] for f in figures]
    geo = math.exp(statistics.fmean(math.log(1 / f["ratio"]) for f in figures))
    print(f"\noverhead per verification: median {statistics.median(overheads):.1f} µs "
          f"(min {min(overheads):.1f}, max {max(overheads):.1f}); ours/theirs throughput, geometric mean "
          f"{geo:.2f}; {time.perf_counter() - start:.0f} s")
    slowest = sorted(figures, key=lambda f: f["theirs_per_s"])[:5]
    print("slowest score_answer: " + ", ".join(f"{f['dataset']} {f['theirs_per_s']:,.0f}/s" for f in slowest))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
