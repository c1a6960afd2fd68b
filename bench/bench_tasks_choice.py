"""`make bench-tasks`: the ``mcqa`` task, single process, per grading mode.

Why: a reward server spends its CPU here; verifications per second of one process is the figure.
The peer, NeMo Gym's ``mcqa`` resources server, is not pip-installable here (nemo-gym needs
Python >= 3.13 and ships its resources servers outside the wheel), so ours is timed alone, per
mode, on the same rows: 4-10 options, ~0.2-3 kB of reasoning, the final answer in the forms models
write (box, "Answer:", "the answer is (C)", bold, option text, hedges), from a fixed seed.

    make bench-tasks
    .venv/bin/python -m bench.bench_tasks_choice --rows 2000 --repeats 5
"""

from __future__ import annotations

import random
import string

from bench.task_timing import interleaved, parse_bench_args, print_table
from reward_service.tasks.mcqa_task import McqaTask

FILLER = ("Let us consider each option carefully. The mechanism involves a polymerase and a primer. "
          "Option {x} is unlikely because the assay measures expression, not sequence. ")
ENDINGS = ("\\boxed{{{g}}}", "Answer: {g}", "The answer is ({g}).", "**Final Answer:** {g}", "{g}. {t}",
           "Answer: {t}", "The answer is {g} or {o}.", "Therefore \\boxed{{\\text{{{g}}}}}", "I choose {g}.")


def make_rows(n: int, seed: int) -> list[tuple[str, dict]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        k = rng.choice((4, 4, 5, 10))
        letters = string.ascii_uppercase[:k]
        options = [{letter: f"option text number {j} about topic {i % 97}"} for j, letter in enumerate(letters)]
        gold, other = rng.sample(letters, 2)
        guess = gold if rng.random() < 0.6 else other
        body = "".join(FILLER.format(x=rng.choice(letters)) for _ in range(rng.randint(1, 15)))
        ending = rng.choice(ENDINGS).format(g=guess, o=other, t=options[letters.index(guess)][guess])
        reference = {"options": options, "answer": gold}
        if rng.random() < 0.2:
            reference["template_metadata"] = {"output_regex": r"Answer:\s*([A-Za-z])"}
        rows.append((body + "\n\n" + ending, reference))
    return rows


def main() -> None:
    args = parse_bench_args(__doc__.splitlines()[0])
    rows = make_rows(args.rows, args.seed)
    contestants = {}
    for mode in ("auto", "strict_single_letter_boxed", "lenient_boxed", "lenient_answer_colon",
                 "lenient_answer_colon_md"):
        task = McqaTask(grading_mode=mode)
        contestants[f"ours mcqa [{mode}]"] = lambda row, task=task: task.score(row[0], row[1])
    print(f"mcqa: {len(rows)} rows, {args.repeats} interleaved repeats, median repeat")
    print_table("multiple choice (mcqa)", interleaved(contestants, rows, args.repeats),
                "peer: NeMo Gym's mcqa server, not pip-installable on this Python")


if __name__ == "__main__":
    main()
