"""Data for the SFT and DPO tests: the tiny arithmetic task as demonstrations and as preference pairs."""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Sequence
from pathlib import Path

from examples.tiny import make_problems
from examples.tiny.arithmetic_task import Problem, completion_for


def held_out_expression(problem: Problem) -> bool:
    """About a quarter of the expressions are held out (a stable hash of the expression)."""
    return zlib.crc32(problem.expression.encode()) % 4 == 0


def split_problems(n_train: int, n_test: int, seed: int = 0) -> tuple[list[Problem], list[Problem]]:
    """Training problems, and held-out problems whose expressions no training problem has."""
    drawn = make_problems(8 * (n_train + n_test), seed=seed)
    train = [p for p in drawn if not held_out_expression(p)][:n_train]
    test = [p for p in drawn if held_out_expression(p)][:n_test]
    assert len(train) == n_train and len(test) == n_test, "too few problems drawn for the split"
    return train, test


def wrong_completion(problem: Problem) -> str:
    """The worked solution with a result one too high, carried into the answer line."""
    right = completion_for(problem)
    wrong = str(int(problem.answer) + 1)
    head, _, _ = right.rpartition(problem.answer)  # the last step's result and the answer line
    return head.rpartition(problem.answer)[0] + wrong + "\n#### " + wrong


def write_sft(path: Path, problems: Sequence[Problem]) -> Path:
    path.write_text("".join(json.dumps({"prompt": p.prompt, "completion": completion_for(p)}) + "\n"
                            for p in problems))
    return path


def write_pairs(path: Path, problems: Sequence[Problem]) -> Path:
    path.write_text("".join(json.dumps({"prompt": p.prompt, "chosen": completion_for(p),
                                        "rejected": wrong_completion(p)}) + "\n" for p in problems))
    return path


def mean_and_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (sample standard deviation / sqrt(n))."""
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)
