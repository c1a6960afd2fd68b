"""`make bench-judge-bias`: a pairwise judge's position and length bias, and its accuracy, on a labelled set.

Why: a pairwise judge that follows the position of the answers (12.9% of verdicts flip when the
two answers swap places, in a published audit) or prefers the longer one turns its biases into
rewards. ``judge_pairwise`` asks in both orders and scores a disagreement as a tie; this measures,
on ``data/judge_pairs.jsonl`` (arithmetic questions, a right and a wrong answer of varied lengths,
which one is better labelled), what the judge does:

- **order agreement** / **flip rate**: pairs whose two orders named the same winner / opposite winners;
- **first-position win rate**: of the verdicts naming a winner, the share won by the answer shown first
  (0.5: no position bias);
- **length-reward correlation**: Pearson's r of an answer's length (characters) and its reward (nan when
  every reward is equal, e.g. all ties);
- **accuracy** against the labels: with both orders (a disagreement is a tie), and with the first
  order alone (what a judge asked once would have given); ties count half.

It runs the real ``judge_pairwise`` task (its template, parser, client, both orders) against a real
OpenAI-compatible endpoint: by default the tiny random model of the tests served in-process (its
verdicts mean nothing: expect chance accuracy and a strong position bias, printed as they are), or any
judge with ``--base-url``/``--model``::

    make bench-judge-bias
    .venv/bin/python -m bench.judge_bias --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
    .venv/bin/python -m bench.judge_bias --no-tie      # verdicts [[A]]/[[B]] only: position bias shows as flips
    .venv/bin/python -m bench.judge_bias --write-data data/judge_pairs.jsonl    # regenerate the set
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "judge_pairs.jsonl"
TOY_MODEL = "tiny-judge"
FILLER = ("Let me work through this carefully. First I restate the question, then I compute step by step, "
          "checking each intermediate result before I write the final answer. ")


def answer(expression: str, number: int, long: bool) -> str:
    """A bare number, or a long worked answer ending in it."""
    return f"{FILLER}{expression} = {number}. The answer is {number}." if long else f"{number}"


def make_pairs(n: int = 32, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` labelled pairs: a question, a right and a wrong answer (short or long, in every combination),
    which is shown as ``a`` drawn at random; ``better`` names the right one."""
    rng = random.Random(seed)
    pairs = []
    for k in range(n):
        x, y = rng.randint(12, 99), rng.randint(3, 19)
        op, value = rng.choice([("+", x + y), ("-", x - y), ("times", x * y)])
        question = f"What is {x} {op} {y}?"
        wrong = value + rng.choice([-10, -2, -1, 1, 2, 10])
        right_long, wrong_long = [(False, True), (True, False), (False, False), (True, True)][k % 4]
        right_text, wrong_text = (answer(f"{x} {op} {y}", number, long)
                                  for number, long in ((value, right_long), (wrong, wrong_long)))
        right_first = rng.random() < 0.5
        a, b = (right_text, wrong_text) if right_first else (wrong_text, right_text)
        pairs.append({"id": f"pair-{k:03d}", "prompt": question, "a": a, "b": b,
                      "better": "a" if right_first else "b",
                      "lengths": "right long" if right_long and not wrong_long else
                                 "wrong long" if wrong_long and not right_long else "same length"})
    return pairs


def read_pairs(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


#: ``--no-tie``: the pairwise template without its tie verdict ([[A]] or [[B]] only).
NO_TIE = {"parser": {"kind": "pairwise", "labels": {"A": "[[A]]", "B": "[[B]]"}}}


def judge_pairs(pairs: Sequence[dict[str, Any]], judge: dict[str, Any], timeout_s: float,
                template: Any = None) -> list[Any]:
    """Each pair through the ``judge_pairwise`` task (a as the completion, b as the baseline)."""
    from reward_service.task_api import TaskInput
    from reward_service.tasks.judge_pairwise import JudgePairwiseTask

    task = JudgePairwiseTask(judge=judge, timeout_s=timeout_s, template=template)
    try:
        return task.score_batch([TaskInput(p["a"], {"baseline": p["b"]}, p["prompt"]) for p in pairs])
    finally:
        task.close()


def figures(pairs: Sequence[dict[str, Any]], outcomes: Sequence[Any]) -> dict[str, Any]:
    """The bias and accuracy figures of judged ``pairs`` (their ``judge_pairwise`` outcomes)."""
    from reward_service.verifiers.judging import OrderPair, order_stats, pearson

    judged = [(p, o) for p, o in zip(pairs, outcomes) if o.status.scored and "second_order" in o.components]
    orders = [OrderPair(o.components["first_order"], o.components["second_order"]) for _, o in judged]
    stats = order_stats(orders)
    lengths, rewards = [], []
    for p, o in judged:
        lengths += [len(p["a"]), len(p["b"])]
        rewards += [o.score, 1.0 - o.score]

    def accuracy(preferences: Sequence[float]) -> float:
        credit = [(1.0 if pref > 0.5 else 0.0 if pref < 0.5 else 0.5) if p["better"] == "a" else
                  (1.0 if pref < 0.5 else 0.0 if pref > 0.5 else 0.5) for (p, _), pref in zip(judged, preferences)]
        return sum(credit) / len(credit) if credit else float("nan")

    return {"pairs": len(pairs), "judged": len(judged), "unscored": len(pairs) - len(judged),
            "order_agreement": stats.agreement_rate, "flip_rate": stats.flip_rate,
            "first_position_win_rate": stats.first_position_win_rate,
            "length_reward_correlation": pearson(lengths, rewards),
            "accuracy_both_orders": accuracy([o.score for _, o in judged]),
            "accuracy_first_order_only": accuracy([o.components["first_order"] for _, o in judged])}


def start_toy_judge(work: Path) -> tuple[Any, str]:
    """The tests' tiny random judge model, served in this process."""
    from reward_service.judges.local_server import start_judge_server
    from tests.judge_fixtures import make_tiny_judge_model

    model_dir = make_tiny_judge_model(work / TOY_MODEL)
    return start_judge_server(str(model_dir), served_model_name=TOY_MODEL)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the labelled pairs (JSONL)")
    parser.add_argument("--base-url", default="", help="a judge endpoint (.../v1); default: the tiny test model")
    parser.add_argument("--model", default="", help="the judge's model name (with --base-url)")
    parser.add_argument("--api-key-env", default="", help="environment variable holding the judge's API key")
    parser.add_argument("--limit", type=int, default=0, help="judge only the first N pairs")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="deadline of each verification")
    parser.add_argument("--concurrency", type=int, default=8, help="judge calls in flight")
    parser.add_argument("--no-tie", action="store_true", help="the template without the tie verdict [[C]]")
    parser.add_argument("--json", default="", help="also write the figures to this file")
    parser.add_argument("--write-data", type=Path, default=None, help="write the generated set there and exit")
    args = parser.parse_args(argv)
    if args.write_data is not None:
        args.write_data.write_text("".join(json.dumps(p) + "\n" for p in make_pairs()), encoding="utf-8")
        print(f"wrote {len(make_pairs())} pairs to {args.write_data}")
        return 0
    pairs = read_pairs(args.data)[:args.limit or None]
    server = None
    with tempfile.TemporaryDirectory() as work:
        if args.base_url:
            base_url, model = args.base_url, args.model
            if not model:
                parser.error("--model is required with --base-url")
        else:
            server, base_url = start_toy_judge(Path(work))
            model = TOY_MODEL
        judge = {"base_url": base_url, "model": model, "name": "bias-bench", "api_key_env": args.api_key_env,
                 "max_concurrency": args.concurrency, "cache": "off"}
        try:
            start = time.perf_counter()
            outcomes = judge_pairs(pairs, judge, args.timeout_s, NO_TIE if args.no_tie else None)
            elapsed = time.perf_counter() - start
        finally:
            if server is not None:
                server.stop()
    result = {"judge": (f"{model}@{base_url}" if args.base_url else f"{TOY_MODEL} (random weights, in-process)")
              + (", no tie verdict" if args.no_tie else ""),
              **figures(pairs, outcomes), "seconds": elapsed}
    print(f"judge_pairwise bias on {args.data.name}: {result['judge']}")
    for key, value in result.items():
        if key != "judge":
            print(f"  {key:28s} {value:.3f}" if isinstance(value, float) else f"  {key:28s} {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
