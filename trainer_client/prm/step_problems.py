"""Procedural multi-step word problems with known-correct and corrupted steps, labelled per step.

Why: a process reward model needs step-level labels that are *right*; here they are computed,
not annotated. A problem is a start quantity and 3-5 actions ("buys 7 more", "gives away 4",
"gets 3 times as many", "splits them into 2 equal piles and keeps one pile"); a solution is
one line per action, ``<Action>: a op b = c``. Each step is corrupted with probability
``corrupt_prob`` (default 0.2: about 16% of steps end up wrong and half the solutions have an
error; a draw that does not apply, e.g. a slip below zero, leaves the step correct):

- ``slip``          the result is off (``12 + 5 = 18``);
- ``wrong_op``      the wrong operation, computed correctly (``Buys 5 more: 12 - 5 = 7``);
- ``wrong_operand`` a number 1-3 off the action's, computed correctly (``Buys 5 more: 12 + 6 = 18``);
- ``wrong_carry``   the step does not start from the previous step's result (uses an older value).

Labels (``true`` = correct) come from one checker, :func:`step_is_correct`, applied to the
rendered step values, never from the corruption bookkeeping: a step is correct when it
starts from the previous step's *shown* result (the start quantity for step 1), applies the
action's operation to the action's number, and shows the exact result. Policy for the steps
after a wrong one (``after_error``):

- ``local`` (default): every step by its own local correctness. A step after an error that
  correctly carries the wrong value forward is ``true``: it is a valid step, and the error is
  blamed on the step that made it, so a PRM learns to find *where* a solution went wrong.
- ``first_error``: every step after the first wrong one is ``false`` (PRM800K / Math-Shepherd
  style: the solution can no longer reach the right answer).

The test split uses other names, items and a disjoint range of start values and addends, so
held-out accuracy measures generalization rather than memory. Deterministic: the same
``(n, seed, split, after_error)`` gives the same examples.

    trainer-client make-steps --out-dir data/steps --n-train 3000 --n-test 600 --seed 0
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trainer_client.prm.step_data import StepwiseExample, write_examples

CORRUPTIONS = ("slip", "wrong_op", "wrong_operand", "wrong_carry")
AFTER_ERROR_POLICIES = ("local", "first_error")
DEFAULT_CORRUPT_PROB = 0.2

# Phrases per operation; "{b}" is the action's number.
PHRASES: dict[str, tuple[str, ...]] = {
    "+": ("buys {b} more", "finds {b} more", "is given {b} more", "wins {b} more"),
    "-": ("gives away {b}", "sells {b}", "loses {b}", "uses up {b}"),
    "×": ("gets {b} times as many", "ends up with {b} times as many"),
    "÷": ("splits them into {b} equal piles and keeps one pile",
          "shares them equally among {b} boxes and keeps one box"),
}
WRONG_OPS = {"+": ("-", "×"), "-": ("+",), "×": ("+",), "÷": ("×", "-")}


@dataclass(frozen=True)
class SplitSpec:
    names: tuple[str, ...]
    items: tuple[str, ...]
    start: tuple[int, int]  # start quantity range
    addend: tuple[int, int]  # range of + and - numbers


SPLITS = {
    "train": SplitSpec(("Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas"),
                       ("apples", "marbles", "stickers", "books", "pencils"), (6, 40), (2, 19)),
    "test": SplitSpec(("Kemi", "Liam", "Mara", "Nico", "Olu", "Priya", "Quinn", "Rosa"),
                      ("cards", "shells", "coins", "stamps"), (41, 90), (20, 35)),
}


def apply_op(op: str, a: int, b: int) -> int | None:
    """``a op b`` when it is a non-negative integer, else None."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b if b <= a else None
    if op == "×":
        return a * b
    if op == "÷":
        return a // b if b and a % b == 0 else None
    raise ValueError(f"unknown op {op!r}")


@dataclass(frozen=True)
class Action:
    op: str
    b: int
    phrase: str  # with the number filled in

    def label(self) -> str:
        return self.phrase[0].upper() + self.phrase[1:]


@dataclass(frozen=True)
class Problem:
    name: str
    item: str
    start: int
    actions: tuple[Action, ...]

    def prompt(self) -> str:
        chain = ", then ".join(a.phrase for a in self.actions)
        return (f"{self.name} has {self.start} {self.item}. {self.name} {chain}. "
                f"How many {self.item} does {self.name} have now? Solve it one step per line.")


@dataclass(frozen=True)
class ShownStep:
    """One solution line as written: ``<label>: a op b = c``."""

    label: str
    a: int
    op: str
    b: int
    c: int

    def text(self) -> str:
        return f"{self.label}: {self.a} {self.op} {self.b} = {self.c}"


def step_is_correct(problem: Problem, shown: Sequence[ShownStep], i: int) -> bool:
    """Local correctness of step ``i``: right start value, operation, number and result."""
    step, action = shown[i], problem.actions[i]
    expected_a = problem.start if i == 0 else shown[i - 1].c
    return (step.a == expected_a and step.op == action.op and step.b == action.b
            and apply_op(step.op, step.a, step.b) == step.c)


def label_steps(problem: Problem, shown: Sequence[ShownStep], after_error: str = "local") -> list[bool]:
    """One label per step under the ``after_error`` policy (module docstring)."""
    if after_error not in AFTER_ERROR_POLICIES:
        raise ValueError(f"after_error must be one of {AFTER_ERROR_POLICIES}, got {after_error!r}")
    local = [step_is_correct(problem, shown, i) for i in range(len(shown))]
    if after_error == "local":
        return local
    return [all(local[: i + 1]) for i in range(len(local))]


def sample_problem(rng: random.Random, spec: SplitSpec) -> Problem:
    start = value = rng.randint(*spec.start)
    actions = []
    for _ in range(rng.randint(3, 5)):
        while True:
            op = rng.choices(("+", "-", "×", "÷"), (3, 3, 1.5, 1.5))[0]
            b = rng.randint(*spec.addend) if op in "+-" else rng.randint(2, 5)
            result = apply_op(op, value, b)
            if result is not None and result <= 2000:
                break
        actions.append(Action(op, b, rng.choice(PHRASES[op]).format(b=b)))
        value = result
    return Problem(rng.choice(spec.names), rng.choice(spec.items), start, tuple(actions))


def _corrupt(step: ShownStep, kind: str, older: Sequence[int], rng: random.Random) -> ShownStep | None:
    """``step`` with one error of ``kind`` (a wrong value, consistently computed unless a slip), or None."""
    if kind == "slip":
        c = step.c + rng.choice((-10, -2, -1, 1, 2, 10))
        return ShownStep(step.label, step.a, step.op, step.b, c) if c >= 0 else None
    if kind == "wrong_op":
        op = rng.choice(WRONG_OPS[step.op])
        c = apply_op(op, step.a, step.b)
        return ShownStep(step.label, step.a, op, step.b, c) if c is not None and c != step.c else None
    if kind == "wrong_operand":
        b = step.b + rng.choice((-3, -2, -1, 1, 2, 3))
        c = apply_op(step.op, step.a, b) if b > 0 else None
        return ShownStep(step.label, step.a, step.op, b, c) if c is not None and c != step.c else None
    if kind == "wrong_carry":
        candidates = [v for v in older if v != step.a]
        if not candidates:
            return None
        a = rng.choice(candidates)
        c = apply_op(step.op, a, step.b)
        return ShownStep(step.label, a, step.op, step.b, c) if c is not None and c != step.c else None
    raise ValueError(f"unknown corruption {kind!r}")


def solve(problem: Problem, corrupt: dict[int, str],
          rng: random.Random) -> tuple[list[ShownStep], list[str | None]] | None:
    """The solution lines, steps in ``corrupt`` altered; later steps carry the shown value forward.

    Returns the steps and, per step, the corruption applied (None where it could not apply);
    None when a carried wrong value leaves a later action inexact (negative, or not divisible).
    """
    shown: list[ShownStep] = []
    kinds: list[str | None] = []
    values = [problem.start]  # the shown results so far (start first)
    for i, action in enumerate(problem.actions):
        c = apply_op(action.op, values[-1], action.b)
        if c is None:
            return None
        step = ShownStep(action.label(), values[-1], action.op, action.b, c)
        kind = corrupt.get(i)
        bad = _corrupt(step, kind, values[:-1], rng) if kind else None
        shown.append(bad or step)
        kinds.append(kind if bad else None)
        values.append((bad or step).c)
    return shown, kinds


def make_example(rng: random.Random, spec: SplitSpec, split: str, after_error: str,
                 kinds: Sequence[str] = CORRUPTIONS, corrupt_prob: float = DEFAULT_CORRUPT_PROB) -> StepwiseExample:
    problem = sample_problem(rng, spec)
    solution = None
    while solution is None:  # a corruption whose carried value breaks a later action: draw again
        corrupt = {i: rng.choice(kinds) for i in range(len(problem.actions)) if rng.random() < corrupt_prob}
        solution = solve(problem, corrupt, rng)
    shown, step_kinds = solution
    labels = label_steps(problem, shown, after_error)
    meta = {"split": split, "step_kinds": step_kinds, "after_error": after_error}
    return StepwiseExample(problem.prompt(), tuple(s.text() for s in shown), tuple(labels), meta)


def generate_examples(n: int, seed: int, split: str, after_error: str = "local", kinds: Sequence[str] = CORRUPTIONS,
                      corrupt_prob: float = DEFAULT_CORRUPT_PROB) -> list[StepwiseExample]:
    """``n`` deterministic examples (same arguments -> same examples).

    ``kinds``: the corruptions to draw from; ``corrupt_prob``: the chance that each step is
    corrupted (independently; a few draws do not apply, so slightly fewer steps end up wrong).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    if after_error not in AFTER_ERROR_POLICIES:
        raise ValueError(f"after_error must be one of {AFTER_ERROR_POLICIES}, got {after_error!r}")
    unknown = sorted(set(kinds) - set(CORRUPTIONS))
    if unknown or not kinds:
        raise ValueError(f"kinds must be a non-empty subset of {CORRUPTIONS}, got {list(kinds)}")
    if not 0.0 <= corrupt_prob <= 1.0:
        raise ValueError(f"corrupt_prob must be in [0, 1], got {corrupt_prob}")
    rng = random.Random(f"{seed}:{split}")
    return [make_example(rng, SPLITS[split], split, after_error, tuple(kinds), corrupt_prob) for _ in range(n)]


def write_splits(out_dir: str | Path, n_train: int, n_test: int, seed: int, after_error: str = "local",
                 kinds: Sequence[str] = CORRUPTIONS, corrupt_prob: float = DEFAULT_CORRUPT_PROB) -> dict[str, Path]:
    """Write ``out_dir/train.jsonl`` and ``out_dir/test.jsonl``; returns their paths."""
    if n_train < 1 or n_test < 1:
        raise ValueError(f"n_train and n_test must be >= 1, got {n_train} and {n_test}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"train": out / "train.jsonl", "test": out / "test.jsonl"}
    write_examples(paths["train"], generate_examples(n_train, seed, "train", after_error, kinds, corrupt_prob))
    write_examples(paths["test"], generate_examples(n_test, seed, "test", after_error, kinds, corrupt_prob))
    return paths
