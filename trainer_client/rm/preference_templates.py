"""Problem templates for the synthetic preference set (see ``preference_data``).

A template draws numbers and returns a :class:`Program`: the question text plus a short
program of arithmetic steps (``StepSpec``), whose operands are literals or earlier results
(``Ref``). Evaluating the program gives the worked solution; evaluating it with one step
altered (operands swapped, operation replaced, result off by one) gives a wrong solution
that is still self-consistent. ``held_out=True`` templates appear only in the test split.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Ref:
    """The result of an earlier step."""

    index: int


Operand = int | Ref


@dataclass(frozen=True)
class StepSpec:
    label: str
    op: str  # + - × ÷ max min
    a: Operand
    b: Operand


@dataclass(frozen=True)
class Step:
    label: str
    op: str
    x: Fraction
    y: Fraction
    result: Fraction

    def expr(self) -> str:
        if self.op in ("max", "min"):
            return f"{self.op}({fmt(self.x)}, {fmt(self.y)})"
        return f"{fmt(self.x)} {self.op} {fmt(self.y)}"


def fmt(value: Fraction) -> str:
    """An integer as is; anything else as a decimal with at most two places."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.2f}".rstrip("0").rstrip(".")


def apply(op: str, x: Fraction, y: Fraction) -> Fraction:
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "×":
        return x * y
    if op == "÷":
        return x / y if y != 0 else Fraction(0)
    if op == "max":
        return max(x, y)
    if op == "min":
        return min(x, y)
    raise ValueError(f"unknown op {op!r}")


@dataclass(frozen=True)
class Program:
    question: str
    specs: tuple[StepSpec, ...]
    steps: tuple[Step, ...] = ()

    def __post_init__(self) -> None:
        if not self.steps:
            object.__setattr__(self, "steps", self._evaluate(None, False, None, 0))

    def answer(self) -> Fraction:
        return self.steps[-1].result

    def with_step(self, k: int, swap: bool = False, op: str | None = None, slip: int = 0) -> Program:
        """The same program with step ``k`` altered; later steps use its altered result."""
        return Program(self.question, self.specs, self._evaluate(k, swap, op, slip))

    def _evaluate(self, k: int | None, swap: bool, op: str | None, slip: int) -> tuple[Step, ...]:
        results: list[Fraction] = []
        steps = []
        for i, spec in enumerate(self.specs):
            x, y = (results[v.index] if isinstance(v, Ref) else Fraction(v) for v in (spec.a, spec.b))
            this_op = spec.op
            if i == k:
                if swap:
                    x, y = y, x
                this_op = op or this_op
            result = apply(this_op, x, y) + (slip if i == k else 0)
            results.append(result)
            steps.append(Step(spec.label, this_op, x, y, result))
        return tuple(steps)


@dataclass(frozen=True)
class Template:
    family: str
    name: str
    build: Callable[[random.Random, int, int], Program]
    held_out: bool = False


NAMES = ("Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi", "Liam",
         "Mara", "Nico", "Olu", "Priya", "Quinn", "Rosa", "Sami", "Tara")
ITEMS = ("apples", "marbles", "stickers", "books", "pencils", "cards", "shells", "coins", "cookies", "stamps")

_R = Ref


def _n(rng: random.Random, lo: int, hi: int) -> int:
    return rng.randint(lo, hi)


def _two(rng: random.Random, lo: int, hi: int) -> tuple[int, int]:
    """Two distinct numbers, larger first."""
    a, b = rng.sample(range(lo, hi + 1), 2)
    return max(a, b), min(a, b)


def _small(rng: random.Random, lo: int, hi: int) -> int:
    """A small factor (2..12) scaled mildly with the range, for products and divisions."""
    return rng.randint(2, 12 if hi <= 60 else 19)


def _p(question: str, *specs: StepSpec) -> Program:
    return Program(question, tuple(specs))


def _S(label: str, op: str, a: Operand, b: Operand) -> StepSpec:
    return StepSpec(label, op, a, b)


# ---- arithmetic word problems
def gift(rng, lo, hi):
    a, b, who, other, item = _n(rng, lo, hi), _n(rng, lo, hi), *rng.sample(NAMES, 2), rng.choice(ITEMS)
    return _p(f"{who} has {a} {item}. {other} gives {who} {b} more. How many {item} does {who} have now?",
              _S(f"{item} in total", "+", a, b))


def two_days(rng, lo, hi):
    a, b, item = _n(rng, lo, hi), _n(rng, lo, hi), rng.choice(ITEMS)
    return _p(f"A shop sold {a} {item} on Monday and {b} {item} on Tuesday. How many {item} did it sell in all?",
              _S("total sold", "+", a, b))


def give_away(rng, lo, hi):
    a, b = _two(rng, lo, hi)
    who, item = rng.choice(NAMES), rng.choice(ITEMS)
    return _p(f"{who} had {a} {item} and gave away {b} of them. How many {item} are left?",
              _S(f"{item} left", "-", a, b))


def boxes(rng, lo, hi):
    a, b, item = _n(rng, lo, hi), _small(rng, lo, hi), rng.choice(ITEMS)
    return _p(f"There are {a} boxes with {b} {item} in each box. How many {item} are there altogether?",
              _S(f"number of {item}", "×", a, b))


def share(rng, lo, hi):
    q, d, item = _n(rng, lo, hi), _small(rng, lo, hi), rng.choice(ITEMS)
    return _p(f"{q * d} {item} are shared equally among {d} friends. How many {item} does each friend get?",
              _S("share per friend", "÷", q * d, d))


def packs_eaten(rng, lo, hi):
    a, b = _small(rng, lo, hi), _n(rng, lo, hi)
    c = rng.randint(1, a * b - 1)
    who = rng.choice(NAMES)
    return _p(f"{who} buys {a} packs of {b} cookies and eats {c} of them. How many cookies are left?",
              _S("cookies bought", "×", a, b), _S("cookies left", "-", _R(0), c))


def tank(rng, lo, hi):
    a, b = _two(rng, lo, hi)
    c = _n(rng, lo, hi)
    return _p(f"A tank holds {a} liters. {b} liters are drained and then {c} liters are added. "
              f"How many liters are in the tank now?",
              _S("liters after draining", "-", a, b), _S("liters now", "+", _R(0), c))


def bus(rng, lo, hi):
    a, b = _two(rng, lo, hi)
    c = _n(rng, lo, hi)
    return _p(f"A bus has {a} passengers. At the first stop {b} get off and {c} get on. "
              f"How many passengers are on the bus?",
              _S("passengers after the drop-off", "-", a, b), _S("passengers now", "+", _R(0), c))


# ---- unit conversion
def _convert(unit_from: str, unit_to: str, factor: int, label: str):
    def build(rng, lo, hi):
        a = _n(rng, lo, hi)
        return _p(f"How many {unit_to} are in {a} {unit_from}?", _S(label, "×", a, factor))
    return build


def _convert_back(unit_from: str, unit_to: str, factor: int, label: str):
    def build(rng, lo, hi):
        a = _n(rng, lo, hi)
        return _p(f"Convert {a * factor} {unit_from} to {unit_to}.", _S(label, "÷", a * factor, factor))
    return build


# ---- simple algebra
def linear(rng, lo, hi):
    a, x = _small(rng, lo, hi), _n(rng, lo, hi)
    b = _n(rng, lo, hi)
    return _p(f"Solve for x: {a}x + {b} = {a * x + b}.",
              _S("value of " f"{a}x", "-", a * x + b, b), _S("value of x", "÷", _R(0), a))


def minus_eq(rng, lo, hi):
    b, c = _n(rng, lo, hi), _n(rng, lo, hi)
    return _p(f"If x - {b} = {c}, what is x?", _S("value of x", "+", c, b))


def times_number(rng, lo, hi):
    a, x = _small(rng, lo, hi), _n(rng, lo, hi)
    return _p(f"{a} times a number is {a * x}. What is the number?", _S("the number", "÷", a * x, a))


def half_plus(rng, lo, hi):
    x2, b = 2 * _n(rng, lo, hi), _n(rng, lo, hi)
    return _p(f"Half of a number plus {b} equals {x2 // 2 + b}. What is the number?",
              _S("half of the number", "-", x2 // 2 + b, b), _S("the number", "×", _R(0), 2))


# ---- comparisons
def larger(rng, lo, hi):
    a, b = rng.sample(range(lo, hi + 1), 2)
    return _p(f"Which is larger, {a} or {b}?", _S("larger number", "max", a, b))


def how_much_more(rng, lo, hi):
    a, b = _two(rng, lo, hi)
    p, q = rng.sample(NAMES, 2)
    return _p(f"{p} scored {a} points and {q} scored {b} points. How many more points did {p} score?",
              _S("difference in points", "-", a, b))


def smallest_of_three(rng, lo, hi):
    a, b, c = rng.sample(range(lo, hi + 1), 3)
    return _p(f"What is the smallest of {a}, {b} and {c}?",
              _S("smaller of the first two", "min", a, b), _S("smallest of all three", "min", _R(0), c))


def taller_gap(rng, lo, hi):
    a, b = _two(rng, lo, hi)
    return _p(f"One tree is {a} meters tall and another is {b} meters tall. How much taller is the first tree?",
              _S("height difference", "-", a, b))


# ---- facts you can compute
def perimeter(rng, lo, hi):
    a, b = _n(rng, lo, hi), _n(rng, lo, hi)
    return _p(f"A rectangle is {a} cm long and {b} cm wide. What is its perimeter in cm?",
              _S("length plus width", "+", a, b), _S("perimeter", "×", _R(0), 2))


def area(rng, lo, hi):
    a, b = _n(rng, lo, hi), _small(rng, lo, hi)
    return _p(f"A garden is {a} m long and {b} m wide. What is its area in square meters?",
              _S("area", "×", a, b))


def average3(rng, lo, hi):
    a, b = _n(rng, lo, hi), _n(rng, lo, hi)
    c = _n(rng, lo, hi)
    c += (3 - (a + b + c) % 3) % 3
    return _p(f"What is the average of {a}, {b} and {c}?",
              _S("sum of the first two", "+", a, b), _S("sum of all three", "+", _R(0), c),
              _S("average", "÷", _R(1), 3))


def legs(rng, lo, hi):
    a = _n(rng, lo, hi)
    animal, count = rng.choice((("spiders", 8), ("dogs", 4), ("ants", 6), ("chickens", 2)))
    return _p(f"How many legs do {a} {animal} have in total?", _S("total legs", "×", a, count))


def percent(rng, lo, hi):
    pct, n = rng.choice((10, 20, 25, 50)), 20 * _n(rng, max(1, lo // 4), max(2, hi // 4))
    return _p(f"What is {pct}% of {n}?", _S(f"{n} times {pct}", "×", n, pct), _S("percentage", "÷", _R(0), 100))


def weeks_days(rng, lo, hi):
    a, b = _n(rng, lo, hi), rng.randint(1, 6)
    return _p(f"How many days are in {a} weeks and {b} days?",
              _S("days in the weeks", "×", a, 7), _S("total days", "+", _R(0), b))


TEMPLATES: tuple[Template, ...] = (
    Template("word_problem", "gift", gift),
    Template("word_problem", "two_days", two_days),
    Template("word_problem", "give_away", give_away),
    Template("word_problem", "boxes", boxes),
    Template("word_problem", "share", share),
    Template("word_problem", "packs_eaten", packs_eaten),
    Template("word_problem", "tank", tank, held_out=True),
    Template("word_problem", "bus", bus, held_out=True),
    Template("unit_conversion", "km_m", _convert("kilometers", "meters", 1000, "number of meters")),
    Template("unit_conversion", "h_min", _convert("hours", "minutes", 60, "number of minutes")),
    Template("unit_conversion", "kg_g", _convert("kilograms", "grams", 1000, "number of grams")),
    Template("unit_conversion", "dollar_cent", _convert("dollars", "cents", 100, "number of cents")),
    Template("unit_conversion", "min_h", _convert_back("minutes", "hours", 60, "number of hours")),
    Template("unit_conversion", "ft_in", _convert("feet", "inches", 12, "number of inches"), held_out=True),
    Template("unit_conversion", "cm_m", _convert_back("centimeters", "meters", 100, "number of meters"), held_out=True),
    Template("algebra", "linear", linear),
    Template("algebra", "minus_eq", minus_eq),
    Template("algebra", "times_number", times_number),
    Template("algebra", "half_plus", half_plus, held_out=True),
    Template("comparison", "larger", larger),
    Template("comparison", "how_much_more", how_much_more),
    Template("comparison", "smallest_of_three", smallest_of_three),
    Template("comparison", "taller_gap", taller_gap, held_out=True),
    Template("fact", "perimeter", perimeter),
    Template("fact", "area", area),
    Template("fact", "average3", average3),
    Template("fact", "legs", legs),
    Template("fact", "percent", percent, held_out=True),
    Template("fact", "weeks_days", weeks_days, held_out=True),
)

FILLERS_TRAIN = (
    "Hmm, let me think about this for a moment.", "This is a really interesting question honestly.",
    "Math can be tricky sometimes, you know.", "I remember doing problems like this in school.",
    "Okay so basically, well, let me see.", "Numbers are fascinating when you think about them.",
    "Let me double check, or actually maybe not.", "Anyway, moving on to the next part of this.",
)
FILLERS_TEST = (
    "Wow, what a fun little puzzle this is.", "I could go on about arithmetic all day long.",
    "So, um, where was I again?", "Fun fact: people have counted things for thousands of years.",
)
