"""The canaries of the math-like tasks (``math``, ``gsm8k``, ``steps``): the self-check's first gold (72,
the answer to GSM8K's first training question) hedged among other candidates in every form a grader
reads, the question echoed back, and the generic ones (``reward_service.tasks.canaries``).

An echoed gold *is* a right answer here, so the echo canaries are the gold among other candidates
and the question itself.
"""

from __future__ import annotations

from reward_service.task_api import Canary
from reward_service.tasks.canaries import HUGE_CHARS, each, generic_canaries, hedge_canaries, joined
from reward_service.verifiers.math.self_check import NUMERIC_SELF_CHECK

GOLD = NUMERIC_SELF_CHECK[0].gold
QUESTION = ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
            "How many clips did Natalia sell altogether in April and May?")
OTHERS = ("70", "71", "73", "74")
FORMS = (
    ("'the answer is' a list", joined("The answer is {}.", " or ")),
    ("a comma list", joined("The answer is {}.", ", ")),
    ("'####' a list", joined("#### {}", " or ")),
    ("every candidate boxed", each("\\boxed{{{}}}")),
    ("boxes joined by 'or'", each("$\\boxed{{{}}}$", " or ")),
    ("one box with 'or'", joined("\\boxed{{{}}}", " \\text{ or } ")),
    ("a set of every candidate", joined("\\boxed{{\\{{{}\\}}}}", ", ")),
    ("equations joined by 'or'", each("$x = {}$", " or ")),
    ("a disjunction in a box", joined("\\boxed{{x = {}}}", " \\vee x = ")),
)


def math_canaries(ceiling: float = 0.0) -> list[Canary]:
    """The math-like tasks' canaries; each may score at most ``ceiling`` (the task's wrong-answer score)."""
    reference = {"answer": GOLD}
    tail = f" \\boxed{{{GOLD}}}"
    every_number = " ".join(f"\\boxed{{{n}}}" for n in range(HUGE_CHARS // 10) if str(n) != GOLD)
    every_number = every_number[:every_number.rfind(" \\boxed", 0, HUGE_CHARS - len(tail))]
    return [
        *generic_canaries(reference, prompt=QUESTION, ceiling=ceiling),
        *hedge_canaries(reference, GOLD, OTHERS, FORMS, prompt=QUESTION, ceiling=ceiling),
        Canary("the question echoed", QUESTION, reference, QUESTION, ceiling),
        Canary("huge hedge: every number boxed, the gold last", every_number + tail, reference,
               QUESTION, ceiling),
    ]
