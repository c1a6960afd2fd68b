"""Procedural arithmetic problems answered GSM8K-style (``#### N``).

Why: the tiny policy needs a task it can partly learn in seconds, that the project's own
``gsm8k`` reward task grades, and that RL can then improve. Problems are integer
expressions of one or two operations (``+ - *``, usual precedence); the target completion
works them out one operation per line and ends with the answer line::

    What is 17 * 3 - 5?          ->   17 * 3 = 51
                                      51 - 5 = 46
                                      #### 46

Difficulty knobs live in :class:`TaskConfig` (operand ranges, number of operations,
operators, negatives). Everything is a pure function of ``(n, seed, config)``.

    problems = make_problems(256, seed=1)
    write_jsonl("rl_train.jsonl", problems)   # {"id", "prompt", "reference": {"answer"}, "task": "gsm8k"}
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ANSWER_MARKER = "####"
TASK_NAME = "gsm8k"
OPERATORS = "+-*"
PROMPT_TEMPLATES = ("What is {expr}?", "{expr} = ?", "Compute {expr}.")


@dataclass(frozen=True)
class TaskConfig:
    """Difficulty knobs of the arithmetic task.

    The defaults (one operation on single digits, e.g. ``7 + 8``, ``9 - 4``, ``6 * 7``) are
    the task of the tiny start checkpoint (``make_start``): a 113k-parameter model learns
    part of it in a few hundred steps. ``max_operand=99, max_ops=2`` is a much harder task.
    """

    max_operand: int = field(default=9, metadata={"help": "largest operand of + and - (smallest is 1)"})
    max_factor: int = field(default=9, metadata={"help": "largest operand next to a * (smallest is 2)"})
    min_ops: int = field(default=1, metadata={"help": "fewest operations per problem"})
    max_ops: int = field(default=1, metadata={"help": "most operations per problem"})
    operators: str = field(default=OPERATORS, metadata={"help": "operators to draw from, a subset of '+-*'"})
    allow_negative: bool = field(default=False, metadata={"help": "allow negative intermediate results"})

    def __post_init__(self) -> None:
        if not self.operators or set(self.operators) - set(OPERATORS):
            raise ValueError(f"operators must be a non-empty subset of {OPERATORS!r}, got {self.operators!r}")
        if not 1 <= self.min_ops <= self.max_ops:
            raise ValueError(f"need 1 <= min_ops <= max_ops, got {self.min_ops}, {self.max_ops}")
        if self.max_operand < 1 or self.max_factor < 2:
            raise ValueError(f"need max_operand >= 1 and max_factor >= 2, got {self.max_operand}, {self.max_factor}")


@dataclass(frozen=True)
class Problem:
    """One problem: its prompt text, its integer answer (as a string), and its expression."""

    prompt: str
    answer: str
    operands: tuple[int, ...]
    operators: tuple[str, ...]

    @property
    def expression(self) -> str:
        return format_expression(self.operands, self.operators)


def format_expression(operands: Sequence[int], operators: Sequence[str]) -> str:
    """``(17, 3, 5), ('*', '-')`` -> ``'17 * 3 - 5'``."""
    parts = [str(operands[0])]
    for op, value in zip(operators, operands[1:]):
        parts.append(f"{op} {value}")
    return " ".join(parts)


def _apply(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a - b if op == "-" else a * b


def solution_steps(operands: Sequence[int], operators: Sequence[str]) -> list[tuple[int, str, int, int]]:
    """The operations in evaluation order (``*`` first, then left to right) as (a, op, b, result)."""
    values, ops = list(operands), list(operators)
    steps = []
    while ops:
        i = ops.index("*") if "*" in ops else 0
        a, op, b = values[i], ops[i], values[i + 1]
        result = _apply(a, op, b)
        steps.append((a, op, b, result))
        values[i: i + 2] = [result]
        del ops[i]
    return steps


def completion_for(problem: Problem) -> str:
    """The target completion: one line per operation, then ``#### N``."""
    lines = [f"{a} {op} {b} = {r}" for a, op, b, r in solution_steps(problem.operands, problem.operators)]
    lines.append(f"{ANSWER_MARKER} {problem.answer}")
    return "\n".join(lines)


def _draw(rng: random.Random, config: TaskConfig) -> Problem | None:
    n_ops = rng.randint(config.min_ops, config.max_ops)
    operators = tuple(rng.choice(config.operators) for _ in range(n_ops))
    operands = []
    for i in range(n_ops + 1):
        next_to_mul = (i > 0 and operators[i - 1] == "*") or (i < n_ops and operators[i] == "*")
        operands.append(rng.randint(2, config.max_factor) if next_to_mul else rng.randint(1, config.max_operand))
    steps = solution_steps(operands, operators)
    if not config.allow_negative and any(r < 0 for *_, r in steps):
        return None
    expression = format_expression(operands, operators)
    prompt = rng.choice(PROMPT_TEMPLATES).format(expr=expression)
    return Problem(prompt=prompt, answer=str(steps[-1][3]), operands=tuple(operands), operators=operators)


def make_problems(n: int, seed: int, config: TaskConfig = TaskConfig()) -> list[Problem]:
    """``n`` problems drawn from ``random.Random(seed)``: the same arguments give the same list."""
    rng = random.Random(seed)
    problems: list[Problem] = []
    while len(problems) < n:
        problem = _draw(rng, config)
        if problem is not None:
            problems.append(problem)
    return problems


def dataset_rows(problems: Iterable[Problem], id_prefix: str = "arith") -> list[dict]:
    """The trainer's dataset rows: ``{"id", "prompt", "reference": {"answer": "N"}, "task": "gsm8k"}``."""
    return [{"id": f"{id_prefix}-{i:06d}", "prompt": p.prompt, "reference": {"answer": p.answer}, "task": TASK_NAME}
            for i, p in enumerate(problems)]


def write_jsonl(path: str | Path, problems: Iterable[Problem], id_prefix: str = "arith") -> int:
    """Writes one dataset row per problem; returns how many were written."""
    rows = dataset_rows(problems, id_prefix)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return len(rows)
