"""The built-in environments: ``arithmetic_tools`` and ``math_tools`` (splits ``train`` and ``test``).

* ``arithmetic_tools`` -- the product of two 5-7 digit numbers, generated from the seed: a small
  policy cannot multiply them in its head but can with the ``calculator``; the episode benchmark's
  task. Tools: calculator, submit_answer. Reward: the ``math`` task on the submitted answer.
  ``arithmetic_tools_short`` is the same with 3-digit operands (``digits``), 6-digit products
  (``product_digits``) and a shorter system prompt: still beyond a tiny policy's head, short
  enough for it to copy into the call; the trainer's tool-use demo.
* ``math_tools`` -- a math problem with a checkable answer (linear equations, sums of fractions,
  modular powers, sums of squares, generated from the seed), or any MATH/GSM8K-style row a caller
  sends (``{"problem"|"question"|"prompt": ..., "answer": ...}``). Tools: python, calculator,
  submit_answer. Reward: the ``math`` task on the submitted answer.

Rows are a pure function of (environment, split, seed, index); the two splits draw from separate
streams, so a test row is not a train row by construction of its seed. The arithmetic environments
also keep their problems apart: a pair of operands (in either order) belongs to one split only
(``operand_split``), so no test problem is a train problem, whatever the seeds and sizes.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

from reward_service.environments.env_api import Environment, EnvironmentLoadError, InvalidRow, check_index, seeded_rng

SUBMIT_HINT = "When you are sure, call submit_answer with the final answer only."


def operand_split(a: int, b: int) -> str:
    """The split a pair of operands belongs to (either order): ``test`` for one pair in ten, else ``train``."""
    low, high = sorted((a, b))
    return "test" if zlib.crc32(f"{low}*{high}".encode()) % 10 == 0 else "train"


class ArithmeticTools(Environment):
    """Multiply two 5-7 digit numbers exactly (with the calculator)."""

    name = "arithmetic_tools"
    description = "the exact product of two 5-7 digit numbers; a calculator is offered; reward: the math task"
    tools = ("calculator", "submit_answer")
    task = "math"
    max_turns = 8
    version = "2"  # 2: a pair of operands belongs to one split only (operand_split)
    system_prompt = "You can call tools. " + SUBMIT_HINT
    #: How many digits each operand has: drawn uniformly from this range (both ends included).
    digits: ClassVar[tuple[int, int]] = (5, 7)
    #: How many digits the product may have (both ends included; None: whatever the operands give).
    product_digits: ClassVar[tuple[int, int] | None] = None

    def splits(self) -> Mapping[str, int]:
        return {"train": 100_000, "test": 1_000}

    def row(self, split: str, index: int, seed: int) -> Mapping[str, Any]:
        check_index(self, split, index)
        rng = seeded_rng(self.name, split, seed, index)
        low, high = self.digits
        longest = self.product_digits or (1, 2 * high)
        while True:  # redraw a pair of the other split (one in ten for train, nine in ten for test) or size
            a, b = (rng.randrange(10 ** (d - 1), 10 ** d) for d in (rng.randint(low, high), rng.randint(low, high)))
            if operand_split(a, b) == split and longest[0] <= len(str(a * b)) <= longest[1]:
                return {"prompt": f"What is {a} * {b}?", "reference": {"answer": str(a * b)}, "operands": [a, b]}

    def check(self) -> None:
        super().check()
        low, high = self.digits
        if not 2 <= low <= high:
            raise EnvironmentLoadError(f"environment {self.name!r}: digits={self.digits} must be (low, high) with "
                                       "2 <= low <= high (fewer than 2 digits leaves too few pairs per split)")
        if self.product_digits is not None and not (
                2 * low - 1 <= self.product_digits[0] <= self.product_digits[1] <= 2 * high):
            raise EnvironmentLoadError(f"environment {self.name!r}: product_digits={self.product_digits} must be "
                                       f"(low, high) with {2 * low - 1} <= low <= high <= {2 * high} "
                                       f"(digits={self.digits})")


class ArithmeticToolsShort(ArithmeticTools):
    """``arithmetic_tools`` with 3-digit operands, 6-digit products and a one-line system prompt (the tool-use
    demo's task: every answer the same length, so a tiny policy copies it at one offset)."""

    name = "arithmetic_tools_short"
    description = ("the exact product of two 3-digit numbers (a 6-digit product); a calculator is offered; "
                   "reward: the math task")
    digits = (3, 3)
    product_digits = (6, 6)
    system_prompt = "Tools: calculator, submit_answer."


class MathTools(Environment):
    """A math problem with a checkable answer; Python and a calculator are offered."""

    name = "math_tools"
    description = ("a math problem (generated, or a MATH/GSM8K-style row sent by the caller); python and a "
                   "calculator are offered; reward: the math task")
    tools = ("python", "calculator", "submit_answer")
    task = "math"
    max_turns = 16
    system_prompt = "You can call tools: python (state is kept between calls) and a calculator. " + SUBMIT_HINT

    def splits(self) -> Mapping[str, int]:
        return {"train": 100_000, "test": 1_000}

    def row(self, split: str, index: int, seed: int) -> Mapping[str, Any]:
        check_index(self, split, index)
        rng = seeded_rng(self.name, split, seed, index)
        kind = rng.randrange(4)
        if kind == 0:
            a, x, b = rng.randint(2, 19), rng.randint(-50, 50), rng.randint(-99, 99)
            prompt, answer = f"Solve for x: {a}x + {b} = {a * x + b}.", str(x)
        elif kind == 1:
            (p, q), (r, s) = ((rng.randint(1, 20), rng.randint(2, 30)) for _ in range(2))
            total = Fraction(p, q) + Fraction(r, s)
            prompt = f"Compute {p}/{q} + {r}/{s} as a fraction in lowest terms."
            num, den = total.numerator, total.denominator
            answer = str(num) if den == 1 else f"\\frac{{{num}}}{{{den}}}"
        elif kind == 2:
            base, power, modulus = rng.randint(2, 30), rng.randint(50, 500), rng.randint(7, 997)
            prompt, answer = f"What is the remainder when {base}^{{{power}}} is divided by {modulus}?", \
                str(pow(base, power, modulus))
        else:
            n = rng.randint(20, 400)
            prompt, answer = f"What is 1^2 + 2^2 + ... + {n}^2?", str(n * (n + 1) * (2 * n + 1) // 6)
        return {"prompt": prompt, "reference": {"answer": answer}}

    def prompt(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        text = row.get("prompt") or row.get("problem") or row.get("question")
        return super().prompt({**row, "prompt": text})

    def reference(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        if isinstance(row.get("reference"), Mapping):
            return row["reference"]
        answer = row.get("answer")
        if answer is None or answer == "" or (isinstance(answer, float) and math.isnan(answer)):
            raise InvalidRow("environment 'math_tools': a row needs a 'reference' object or an 'answer'")
        return {"answer": str(answer)}
