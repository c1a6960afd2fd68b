"""`make bench-tasks`: ``exact_match``, ``f1`` and ``string_similarity`` beside their peers, single process.

Why: a reward server spends its CPU here. Peers, same rows, same run, repeats interleaved, median
repeat: torchmetrics' SQuAD metric (``torchmetrics.functional.text.squad``, a port of the v1.1
official script; EM and F1 from one call per row) and rapidfuzz's ``fuzz.ratio`` (the InDel ratio,
C++). Ours is timed through the tasks' ``score`` (answer extraction and gold parsing included);
agreement with the peer's value is printed beside.

    make bench-tasks
    .venv/bin/python -m bench.bench_tasks_text --rows 2000 --repeats 5
"""

from __future__ import annotations

import random

from bench.task_timing import interleaved, parse_bench_args, print_table
from reward_service.tasks.qa_task import ExactMatchTask, F1Task, StringSimilarityTask

WORDS = ("the Denver Broncos won Super Bowl 50 in Santa Clara California a game of American football "
         "an NFL title Carolina Panthers February 7 2016 Levi's Stadium golden anniversary").split()


def make_rows(n: int, seed: int) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        golds = [" ".join(rng.sample(WORDS, rng.randint(1, 5))) for _ in range(rng.randint(1, 3))]
        words = golds[0].split()
        extra = " " + rng.choice(WORDS) if rng.random() < 0.5 else ""
        pred = " ".join(w for w in words if rng.random() < 0.8) + extra
        rows.append((pred.strip() or words[0], golds))
    return rows


def main() -> None:
    args = parse_bench_args(__doc__.splitlines()[0])
    from rapidfuzz import fuzz
    from torchmetrics.functional.text import squad

    rows = make_rows(args.rows, args.seed)
    em, f1 = ExactMatchTask(extract="full"), F1Task(extract="full")
    sim_difflib = StringSimilarityTask(extract="full")
    sim_indel = StringSimilarityTask(extract="full", algorithm="indel", normalize="strip", case_sensitive=True)

    def peer_squad(row):
        return squad([{"prediction_text": row[0], "id": "q"}],
                     [{"answers": {"answer_start": [0] * len(row[1]), "text": row[1]}, "id": "q"}])

    agree_f1 = sum(abs(f1.score(p, {"answers": g}).score * 100 - float(peer_squad((p, g))["f1"])) < 1e-3
                   for p, g in rows)
    agree_indel = sum(abs(sim_indel.score(p, {"answers": g}).score * 100 - max(fuzz.ratio(x, p) for x in g)) < 1e-6
                      for p, g in rows)
    print(f"QA/strings: {len(rows)} rows, {args.repeats} interleaved repeats, median repeat; agreement with the "
          f"peer: f1 {agree_f1}/{len(rows)}, indel {agree_indel}/{len(rows)}")
    print_table("SQuAD exact match and F1", interleaved({
        "ours exact_match": lambda row: em.score(row[0], {"answers": row[1]}),
        "ours f1 (EM as a component)": lambda row: f1.score(row[0], {"answers": row[1]}),
        "peer torchmetrics squad (EM + F1)": peer_squad,
    }, rows, args.repeats))
    print_table("string similarity (best over golds)", interleaved({
        "ours string_similarity [difflib]": lambda row: sim_difflib.score(row[0], {"answers": row[1]}),
        "ours string_similarity [indel]": lambda row: sim_indel.score(row[0], {"answers": row[1]}),
        "peer rapidfuzz fuzz.ratio (indel, C++)": lambda row: max(fuzz.ratio(g, row[0]) for g in row[1]),
    }, rows, args.repeats))


if __name__ == "__main__":
    main()
