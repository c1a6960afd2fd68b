"""False positives and hangs reported against HF math-verify (its issues and pull requests since
0.9.0, and torchtitan's power-tower hang): ours gives the right verdict, in bounded time, with its
own guards (no signals, no timeouts)."""

from __future__ import annotations

import time

import pytest

from reward_service.verifiers.math import grade

#: A hang guard, not a speed check: the verdicts take milliseconds (the first one also imports sympy),
#: while the reported hangs ran for minutes; no loaded machine comes near this.
BOUND_S = 60.0


def _timed_grade(completion: str, gold: str) -> bool:
    start = time.perf_counter()
    verdict = grade(completion, gold).correct
    assert time.perf_counter() - start < BOUND_S
    return verdict


@pytest.mark.parametrize(("completion", "gold"), [
    # Math-Verify issue #14 (equal under math-verify's default parse and verify)
    ("$\\frac{1}{2006!}$", "$\\frac{1}{2004!}$"), ("$\\frac{1}{2^{98}}$", "$\\frac{1}{2^{99}}$"),
    ("$n=1, 2, 3$", "$n=2, 3, 4$"), ("$D = (0, 1.5)$", "$D = (0, 1)$"),
    ("$21, 36, and 82$", "$19, 46, \\text{ and } 82$"),
    ("$\\frac{1}{3 \\cdot 2^{2006}}$", "$\\frac{2^{2005}+1}{3 \\cdot 2^{2006}}$"),
    ("$2021$", "$\\pm 2021$"), ("$1:00$", "$12:00$"),
    ("$1, 3, 5, \\ldots, 2n-1$", "$1, 2, \\ldots, n$"), ("$1:4:9:\\ldots$", "$1:2:3:\\ldots$"),
    # issue #60: two different lines
    ("3x + 4y + 14=0", "3*x-1*y+13=0"),
    # pull request #82: a formula that fails to parse never lends its numbers
    ("$1 + \\frac{1}{\\mathrm{e}}$", "$1 - \\frac{1}{\\mathrm{e}}$"),
    ("$\\sum_{k=0}^n\\bigl(k\\bigr)$", "0"), ("Final answer is $\\sum_{k=0}^n\\bigl(k\\bigr)$. I hope.", "0"),
    # pull request #81: a mixed number is one value, never its whole part, numerator or denominator
    ("The answer is 2 2/3.", "2"), ("The answer is 4 10/3.", "10"), ("The answer is 4 4/9.", "4"),
    ("The answer is 4 4/9.", "9"), ("11 6/6", "12"), ("4 4/0", "4"), ("11/10 4/9", "139/90"),
    ("11/10\n4/9", "139/90"), ("She needs 2 1/2 cups.", "21/2"),
    # trailing punctuation inside the delimiters (math-verify's later tests)
    ("$2^{10}.$", "2"), ("The answer is $1/3.$", "1"), ("$1, 2, 3, ...$", "1, 2, 3"),
])
def test_reported_false_positives_are_rejected(completion: str, gold: str) -> None:
    assert not _timed_grade(completion, gold)


@pytest.mark.parametrize(("completion", "gold"), [
    ("The answer is 4 4/9.", "40/9"), ("4 4/9%", "40/900"), ("-4 4/9", "-40/9"),
    ("$\\frac{1}{3}.$", "\\frac{1}{3}"), ("The answer is $\\frac{1}{3}.$", "1/3"), ("$(1,2).$", "(1,2)"),
    ("$5 \\text{ cm}.$", "5"), ("$\\frac{1}{3},$", "\\frac13"),
])
def test_reported_forms_of_right_answers_match(completion: str, gold: str) -> None:
    assert _timed_grade(completion, gold)


TOWER = "\\dfrac{5^{\\left(5^{\\left(5^{\\left(5^5\\right)}\\right)} - 4\\right)} - 5}{16}"


@pytest.mark.parametrize(("completion", "gold", "expected"), [
    (f"\\boxed{{{TOWER}}}", "1", False),  # Math-Verify issue #65: parse hung despite its timeout
    (f"\\boxed{{{TOWER}}}", TOWER, True),  # literally identical: the one way a tower matches
    # torchtitan: a power tower in the text before the answer hung the reward thread
    (" Final Answer:\n  The last three digits of \\(2003^{2002^{2001}}\\) are:\n  \\[Answer: 009\\]", "9", True),
    ("The last three digits of $2003^{2002^{2001}}$ are $\\boxed{241}$.", "2003^{2002^{2001}}", False),
    ("{@Neillier 1276915 4951077 ник增高人权 국 {1,1-3-10鼓励不停);5个_GENERAL2全校。 _HEADERS1 Orchestra}",
     "92.5857658508735", False),  # issue #65: verify hung on this pair
])
def test_reported_hangs_are_bounded_by_our_own_guards(completion: str, gold: str, expected: bool) -> None:
    assert _timed_grade(completion, gold) is expected
