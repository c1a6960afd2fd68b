"""The soak's rollouts: GRPO-like groups whose right score is known by construction.

Every rollout comes with an :class:`Expect`: the score a correct verifier must give it
when it scores it at all. Math and gsm8k groups mix right and wrong answers written in
the forms docs/math-verifier.md says are equal (``\\frac{6}{4}`` = ``3/2``, ``\\sqrt{8}`` =
``2\\sqrt{2}``, ``x^2+2x+1`` = ``(x+1)^2``); code groups mix a right and a wrong
program against function-call, HumanEval and stdin/stdout tests. Pathological items
(a program that loops forever, one that touches 2 GiB, one that forks, a tower of
exponents, a very long completion) replace one rollout of a group now and then: each
has a known verdict too (0, or 1 for the long-but-right completion), and an unscored
status is acceptable for them, as for any rollout a fault hit.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

GROUP_SIZES = (8, 16)            # rollouts per group (GRPO's G), inclusive range
GROUPS_PER_BATCH = (1, 3)
LONG_COMPLETION_CHARS = 200_000
PATHOLOGICAL = ("loop", "memory", "fork", "huge_math", "long_completion")


@dataclass(frozen=True)
class Expect:
    """What the rollout is and the score it must get when scored."""

    kind: str           # math | gsm8k | code | loop | memory | fork | huge_math | long_completion
    score: float

    @property
    def pathological(self) -> bool:
        return self.kind in PATHOLOGICAL


# --- math ------------------------------------------------------------------------------

def _math_problem(rng: random.Random) -> tuple[str, list[str], list[str]]:
    """(gold, right answers, wrong answers) in LaTeX, all known by construction."""
    kind = rng.choice(("integer", "fraction", "sqrt", "poly"))
    if kind == "integer":
        n = rng.randint(-500, 5000)
        return str(n), [str(n), f"{n}.0"], [str(n + d) for d in (1, -1, 10, 100)]
    if kind == "fraction":
        q = rng.choice((2, 3, 4, 5, 7, 8, 9, 11))
        p = rng.choice([k for k in range(1, 4 * q) if math.gcd(k, q) == 1])
        m = rng.randint(2, 6)
        right = [f"\\frac{{{m * p}}}{{{m * q}}}", f"{p}/{q}", f"\\dfrac{{{p}}}{{{q}}}"]
        if q in (2, 4, 5, 8):
            right.append(f"{p / q:g}")
        return f"\\frac{{{p}}}{{{q}}}", right, [f"\\frac{{{p + 1}}}{{{q}}}", f"{p}/{q + 1}", f"\\frac{{{q}}}{{{p}}}"]
    if kind == "sqrt":
        a, b = rng.randint(2, 9), rng.choice((2, 3, 5, 6, 7, 10, 11))
        return (f"{a}\\sqrt{{{b}}}", [f"\\sqrt{{{a * a * b}}}", f"{a}\\sqrt{{{b}}}"],
                [f"{a}\\sqrt{{{b + 1 if b + 1 not in (4, 9) else b + 2}}}", f"{a + 1}\\sqrt{{{b}}}"])
    a = rng.randint(1, 9)
    return (f"(x+{a})^2", [f"x^2+{2 * a}x+{a * a}", f"(x+{a})^{{2}}"],
            [f"x^2+{a}x+{a * a}", f"x^2+{2 * a}x+{a * a + 1}"])


def _math_completion(answer: str, k: int, rng: random.Random) -> str:
    form = rng.choice(("boxed", "answer_is"))
    lead = f"Let me work through this carefully, attempt {k}.\n"
    if form == "boxed":
        return lead + f"Putting it together gives $\\boxed{{{answer}}}$."
    return lead + f"The answer is ${answer}$."


def math_group(rng: random.Random, gid: str, size: int) -> list[tuple[dict, Expect]]:
    gold, right, wrong = _math_problem(rng)
    out = []
    for k in range(size):
        ok = rng.random() < 0.5
        answer = rng.choice(right if ok else wrong)
        rollout = {"task": "math", "completion": _math_completion(answer, k, rng), "reference": {"answer": gold}}
        out.append((rollout, Expect("math", 1.0 if ok else 0.0)))
    return out


def gsm8k_group(rng: random.Random, gid: str, size: int) -> list[tuple[dict, Expect]]:
    a, b, c = rng.randint(10, 99), rng.randint(2, 9), rng.randint(1, 50)
    gold = a * b + c
    out = []
    for k in range(size):
        ok = rng.random() < 0.5
        answer = gold if ok else gold + rng.choice((-10, -1, 1, 2, 100))
        completion = (f"Step 1: {a} * {b} = {a * b}. Step 2: {a * b} + {c} = {answer}. "
                      f"Attempt {k}, so the total is {answer:,}.\n#### {answer}")
        out.append(({"task": "gsm8k", "completion": completion, "reference": {"answer": str(gold)}},
                    Expect("gsm8k", 1.0 if ok else 0.0)))
    return out


# --- code ------------------------------------------------------------------------------

def _fenced(body: str, k: int) -> str:
    return f"Here is my solution (attempt {k}).\n```python\n# attempt {k}\n{body}\n```\n"


def _code_problem(rng: random.Random) -> tuple[dict, str, str, str]:
    """(reference, right body, wrong body, entry point): the wrong one fails at least one test."""
    style = rng.choice(("call", "humaneval", "stdio"))
    if style == "call":
        pairs = [[rng.randint(-50, 50), rng.randint(1, 50)] for _ in range(4)]
        ref = {"cases": [{"args": p, "expected": p[0] + p[1]} for p in pairs], "entry_point": "add"}
        return ref, "def add(a, b):\n    return a + b", "def add(a, b):\n    return a - b", "add"
    if style == "humaneval":
        lists = [[rng.randint(1, 20) for _ in range(rng.randint(1, 6))] for _ in range(3)]
        asserts = "".join(f"    assert candidate({xs}) == {sum(xs)}\n" for xs in lists)
        ref = {"tests": f"def check(candidate):\n{asserts}", "entry_point": "total"}
        return ref, "def total(xs):\n    return sum(xs)", "def total(xs):\n    return sum(xs[1:])", "total"
    pairs = [(rng.randint(0, 99), rng.randint(100, 199)) for _ in range(3)]
    ref = {"cases": [{"stdin": f"{x} {y}\n", "expected_stdout": f"{max(x, y)}\n"} for x, y in pairs]}
    right = "x, y = map(int, input().split())\nprint(max(x, y))"
    wrong = "x, y = map(int, input().split())\nprint(min(x, y))"
    return ref, right, wrong, ""


def code_group(rng: random.Random, gid: str, size: int) -> list[tuple[dict, Expect]]:
    reference, right, wrong, _ = _code_problem(rng)
    out = []
    for k in range(size):
        ok = rng.random() < 0.5
        out.append(({"task": "code", "completion": _fenced(right if ok else wrong, k), "reference": reference},
                    Expect("code", 1.0 if ok else 0.0)))
    return out


# --- pathological ------------------------------------------------------------------------

ADD_REFERENCE = {"cases": [{"args": [2, 3], "expected": 5}, {"args": [7, -1], "expected": 6}], "entry_point": "add"}
LOOP = "def add(a, b):\n    while True:\n        a += 1\n    return a + b"
# Touches every page (a zero-filled bytearray would be lazily mapped), then returns the right answer:
# it must never pass under a 512 MB limit.
MEMORY = "def add(a, b):\n    blob = b'\\x01' * (2 * 1024 ** 3)\n    return a + b + (len(blob) - len(blob))"
FORK = ("import os, time\n"
        "def add(a, b):\n"
        "    for _ in range(64):\n"
        "        try:\n"
        "            if os.fork() == 0:\n"
        "                time.sleep(60)\n"
        "                os._exit(0)\n"
        "        except OSError:\n"
        "            break\n"
        "    return a - b")


def pathological(rng: random.Random, kind: str, k: int) -> tuple[dict, Expect]:
    if kind in ("loop", "memory", "fork"):
        body = {"loop": LOOP, "memory": MEMORY, "fork": FORK}[kind]
        return {"task": "code", "completion": _fenced(body, k), "reference": ADD_REFERENCE}, Expect(kind, 0.0)
    if kind == "huge_math":
        gold = rng.choice(("9^{9^{9^9}}+1", "42", "9^{9^{9^{9^9}}}"))
        completion = "So the value is $\\boxed{9^{9^{9^9}}}$."
        return {"task": "math", "completion": completion, "reference": {"answer": gold}}, Expect(kind, 0.0)
    n = rng.randint(2, 999)
    filler = ("Let us reconsider every step once more. " * (LONG_COMPLETION_CHARS // 40))[:LONG_COMPLETION_CHARS]
    return ({"task": "math", "completion": f"{filler}\nFinally, $\\boxed{{{n}}}$.", "reference": {"answer": str(n)}},
            Expect(kind, 1.0))


GROUP_MAKERS = {"math": math_group, "gsm8k": gsm8k_group, "code": code_group}
GROUP_WEIGHTS = {"math": 0.35, "gsm8k": 0.3, "code": 0.35}


def make_batch(rng: random.Random, prefix: str, pathological_rate: float) -> list[list[tuple[dict, Expect]]]:
    """One call's worth: 1-3 groups; ids ``<prefix>-g<i>-<k>``, group ids ``<prefix>-g<i>``.

    With probability ``pathological_rate`` one rollout of one group is replaced by a pathological item.
    """
    groups = []
    for g in range(rng.randint(*GROUPS_PER_BATCH)):
        kind = rng.choices(list(GROUP_WEIGHTS), weights=list(GROUP_WEIGHTS.values()))[0]
        gid = f"{prefix}-g{g}"
        groups.append(GROUP_MAKERS[kind](rng, gid, rng.randint(*GROUP_SIZES)))
    if rng.random() < pathological_rate:
        group = rng.choice(groups)
        k = rng.randrange(len(group))
        group[k] = pathological(rng, rng.choice(PATHOLOGICAL), k)
    for g, group in enumerate(groups):
        for k, (rollout, _) in enumerate(group):
            rollout["id"] = f"{prefix}-g{g}-{k}"
            rollout["group_id"] = f"{prefix}-g{g}"
    return groups
