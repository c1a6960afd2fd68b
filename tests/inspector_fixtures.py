"""Rollouts files shaped like a trainer's ``rollouts.jsonl``, for the inspector's tests and benchmark."""

from __future__ import annotations

import json
import random
from pathlib import Path

TASKS = ("gsm8k", "math", "code")
WORDS = ("first", "we", "add", "the", "numbers", "so", "then", "multiply", "by", "answer", "is", "total", "each",
         "left", "gives", "therefore", "check", "again", "step", "value")


def _status_and_reward(rng: random.Random, task: str) -> tuple[str, float | None, str, str]:
    """(status, reward, error, explanation) drawn like a run's mix: mostly scored, a few unscored."""
    roll = rng.random()
    if roll < 0.03:
        return "ERROR", None, "sandbox: exit 137 (killed)", "the sandbox failed before any test ran"
    if roll < 0.05:
        return "TIMEOUT", None, "verifier exceeded 10 s", "no verdict: the item timed out"
    if roll < 0.15:
        return "NO_ANSWER", 0.0, "", "no \\boxed{} and no 'answer is' line: nothing to compare"
    if task == "code":
        passed = rng.randint(0, 5)
        return "OK", passed / 5, "", f"{passed}/5 tests passed" + ("" if passed == 5 else "; test 3: expected 6, got 5")
    right = rng.random() < 0.45
    answer = rng.randint(1, 99)
    return "OK", 1.0 if right else 0.0, "", (f"extracted {answer} from the last line; matches the reference"
                                             if right else f"extracted {answer}; reference {answer + 1}: not equal")


def write_rollouts(path: Path, n: int, group_size: int = 8, groups_per_step: int = 4, seed: int = 0,
                   completion_words: int = 120) -> Path:
    """``n`` rollout lines, ``group_size`` per group, ``groups_per_step`` groups per step (steps from 1)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        for start in range(0, n, group_size):
            g = start // group_size
            step, task = g // groups_per_step + 1, TASKS[g % len(TASKS)]
            gid = f"s{step - 1}-r0-c0-g{g % groups_per_step}"
            prompt = f"Question {g}: Tom has {g % 17 + 2} apples and buys {g % 5 + 1} more. How many now?"
            for k in range(min(group_size, n - start)):
                status, reward, error, explanation = _status_and_reward(rng, task)
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(completion_words // 2,
                                                                              completion_words * 3 // 2)))
                out.write(json.dumps({  # the trainer's key order (trainer_client.train.rollout_log)
                    "step": step, "group_id": gid, "id": f"{gid}-{k}", "task": task, "reward": reward,
                    "status": status, "advantage": None if reward is None else round(reward - 0.5, 3),
                    "kept": True, "prompt_id": f"p{g}", "prompt": prompt,
                    "reference": {"answer": str(g % 17 + g % 5 + 3)},
                    "completion": f"{words}. The answer is {rng.randint(1, 99)}.", "extracted": "", "error": error,
                    "explanation": explanation, "components": {}}) + "\n")
    return path
