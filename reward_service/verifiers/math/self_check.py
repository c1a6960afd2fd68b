"""Registration self-check for math-like tasks.

A math task that cannot recognise its own gold is broken for every rollout
it scores, silently.  :func:`check_grader` grades each gold of a small fixed
set against itself in the forms models commonly write it (boxed, in ``$…$``,
after "The answer is", in display math, with ``\\dfrac``, with an
end-of-turn token left in) and against known-wrong variants; it returns one
line per failure.  Tasks run it through ``Task.self_check()``, and the
server logs every failure at start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SelfCheckCase", "MATH_SELF_CHECK", "NUMERIC_SELF_CHECK", "gold_rewrites", "check_grader"]

#: ``grade(completion, gold) -> bool | None`` (``None``: the grader could not score).
GradeFn = Callable[[str, str], "bool | None"]


@dataclass(frozen=True)
class SelfCheckCase:
    """A gold and answers that must *not* match it."""

    gold: str
    wrong: tuple[str, ...]


MATH_SELF_CHECK: tuple[SelfCheckCase, ...] = (
    SelfCheckCase("72", ("73", "7.2")),
    SelfCheckCase("-3", ("3", "-4")),
    SelfCheckCase("\\frac{3}{4}", ("\\frac{4}{3}", "0.7")),
    SelfCheckCase("0.25", ("0.26", "2.5")),
    SelfCheckCase("2\\sqrt{3}", ("3\\sqrt{2}", "2")),
    SelfCheckCase("3\\pi", ("3", "\\pi")),
    SelfCheckCase("(1, -2)", ("(-2, 1)", "(1, 2)")),
    SelfCheckCase("[0, 5)", ("(0, 5]", "[0, 5]")),
    SelfCheckCase("\\{1, 2, 3\\}", ("\\{1, 2\\}", "\\{1, 2, 4\\}")),
    SelfCheckCase("x^2 + 1", ("x^2 - 1", "x^2")),
    SelfCheckCase("25\\%", ("35\\%", "2.5")),
    SelfCheckCase("x \\ge 7", ("x > 7", "x \\le 7")),
    SelfCheckCase("\\text{Evelyn}", ("\\text{Briana}",)),
)

NUMERIC_SELF_CHECK: tuple[SelfCheckCase, ...] = (
    SelfCheckCase("72", ("73", "7.2")),
    SelfCheckCase("-3", ("3", "-4")),
    SelfCheckCase("1200", ("120", "1201")),
    SelfCheckCase("18.5", ("18", "185")),
)


def gold_rewrites(gold: str, strict: bool = False) -> list[str]:
    """Completions that state ``gold`` as the answer, in common model styles.

    With ``strict``, only the forms a strict extractor accepts (boxed, ``####``).
    """
    forms = [
        f"We simplify step by step. So the answer is $\\boxed{{{gold}}}$.",
        f"\\boxed{{{gold.replace(chr(92) + 'frac', chr(92) + 'dfrac')}}}",
        f"Putting it together gives $\\boxed{{{gold}}}$.<|im_end|>",
    ]
    if not strict:
        forms += [
            f"${gold}$",
            f"After checking the cases, the answer is ${gold}$.",
            f"Combining both results:\n\\[ {gold} \\]",
            f"**Final Answer:** ${gold}$",
        ]
    return forms


def check_grader(grade: GradeFn, cases: tuple[SelfCheckCase, ...], strict: bool = False) -> list[str]:
    """One line per failed check: a rewrite of a gold that does not match it, or a wrong answer that does."""
    failures = []
    for case in cases:
        for completion in gold_rewrites(case.gold, strict):
            if grade(completion, case.gold) is not True:
                failures.append(f"gold {case.gold!r} does not match its own rewrite {completion!r}")
        for wrong in case.wrong:
            for completion in gold_rewrites(wrong, strict)[:1]:
                if grade(completion, case.gold) is not False:
                    failures.append(f"gold {case.gold!r} is not rejected for wrong answer {completion!r}")
    return failures
