"""Answer forms of issue 21's last mile: text case, short decimals, sentence golds, bare answers,
markdown bold, listed boxes, and the task option for decimal approximations."""

from __future__ import annotations

import pytest

from reward_service.task_api import InvalidTaskOptions
from reward_service.tasks.math_task import MathTask
from reward_service.verifiers.math import Extraction, extract_answer, gold_answer, grade, grade_numeric

# --- text answers: case does not matter, for words only -------------------------------------------


@pytest.mark.parametrize(("completion", "gold"), [
    ("\\boxed{\\text{Yes}}", "yes"), ("\\boxed{yes}", "\\text{Yes}"), ("\\boxed{\\text{NO}}", "No"),
    ("\\boxed{\\textbf{No}}", "\\text{no}"), ("The answer is $\\text{EVEN}$.", "\\text{even}"),
    ("\\boxed{\\text{(C)}}", "\\text{C}"), ("\\boxed{\\text{(A)}}", "A"),
    ("\\boxed{no solution}", "\\text{No Solution}"),
])
def test_text_answers_match_whatever_their_case(completion: str, gold: str) -> None:
    assert grade(completion, gold).correct


@pytest.mark.parametrize(("completion", "gold"), [
    ("\\boxed{x}", "X"), ("\\boxed{a}", "A"), ("\\boxed{ab}", "AB"), ("\\boxed{\\text{b}}", "B"),
    ("\\boxed{\\text{No}}", "yes"), ("\\boxed{\\text{even}}", "\\text{odd}"), ("\\boxed{2a}", "2A"),
])
def test_case_still_matters_for_variables_letters_and_other_words(completion: str, gold: str) -> None:
    assert not grade(completion, gold).correct


# --- short decimals: strict by default, allowed by the task option --------------------------------

def test_math_task_rejects_a_short_decimal_for_an_exact_value_by_default() -> None:
    assert MathTask().score("\\boxed{0.333}", {"answer": "\\frac{1}{3}"}).score == 0.0
    assert MathTask().score("\\boxed{3.142}", {"answer": "\\pi"}).score == 0.0


def test_math_task_accepts_a_short_decimal_when_approximations_are_allowed() -> None:
    task = MathTask(decimal_approximations="allow")
    assert task.score("\\boxed{0.333}", {"answer": "\\frac{1}{3}"}).score == 1.0
    assert task.score("\\boxed{3.142}", {"answer": "\\pi"}).score == 1.0
    assert task.score("\\boxed{0.334}", {"answer": "\\frac{1}{3}"}).score == 0.0


def test_math_task_decimal_approximations_option_is_checked() -> None:
    with pytest.raises(InvalidTaskOptions, match="decimal_approximations"):
        MathTask(decimal_approximations=True)  # type: ignore[arg-type]


def test_math_task_self_check_passes_in_both_decimal_modes() -> None:
    assert MathTask().self_check() == [] and MathTask(decimal_approximations="allow").self_check() == []


# --- golds written as sentences or solutions: the same extraction as a completion -----------------

@pytest.mark.parametrize(("gold", "answer"), [
    ("So the total is 12.", "12"), ("There are 4 ways to seat them.", "4"),
    ("We compute 3+4 = 7, so the answer is 7.", "7"), ("The final answer is **2**.", "2"),
    ("Final Answer: The final answer is $\\frac{3}{4}$. I hope it is correct.", "\\frac{3}{4}"),
    ("She reads 15 pages a day for 3 days.", "She reads 15 pages a day for 3 days."),  # two numbers: as given
    ("no solution", "no solution"), ("\\text{Evelyn}", "\\text{Evelyn}"), ("12 and 13", "12 and 13"),
])
def test_a_sentence_gold_gives_the_answer_a_completion_would(gold: str, answer: str) -> None:
    assert gold_answer(gold) == answer


def test_a_sentence_gold_does_not_match_its_other_numbers() -> None:
    gold = "In 3 days she reads 45 pages, so the answer is 45."
    assert grade("\\boxed{45}", gold).correct and not grade("\\boxed{3}", gold).correct


@pytest.mark.parametrize(("gold", "answer"), [
    ("The roots are $\\boxed{2}$ and $\\boxed{3}$.", "2, 3"), ("\\boxed{1}, \\boxed{2}", "1, 2"),
    ("$\\boxed{1}\\boxed{2}$", "1, 2"), ("\\boxed{1} papers and \\boxed{2} bins", "1, 2"),
    ("$x = \\boxed{2}$ or $x = \\boxed{3}$", "2, 3"), ("$\\boxed{35} + \\boxed{4}$", "35, 4"),
    ("First $\\boxed{1}$. No, that is wrong: the answer is $\\boxed{2}$.", "2"),
    ("\\boxed{1} no no no no no \\boxed{2}", "2"),
])
def test_a_gold_with_several_boxes_lists_only_the_boxes_listed_together(gold: str, answer: str) -> None:
    assert gold_answer(gold) == answer


# --- bare answers: the whole completion is the answer ---------------------------------------------

@pytest.mark.parametrize(("completion", "answer"), [
    ("x^2+1", "x^2+1"), ("yes", "yes"), ("No.", "No"), ("Evelyn", "Evelyn"), ("**Yes**", "**Yes**"),
    ("\\text{No}", "\\text{No}"), ("$\\text{even}$", "$\\text{even}$"),
])
def test_a_completion_of_one_expression_or_one_word_is_its_answer(completion: str, answer: str) -> None:
    assert extract_answer(completion) == Extraction(answer, "bare")


@pytest.mark.parametrize("completion", ["no number", "I don't know", "I give up."])
def test_a_short_phrase_without_a_marker_is_no_answer(completion: str) -> None:
    assert extract_answer(completion) is None


@pytest.mark.parametrize(("completion", "gold", "expected"), [
    ("yes", "\\text{Yes}", True), ("No", "no", True), ("Evelyn", "\\text{Evelyn}", True),
    ("x^2 + 1", "1+x^2", True), ("yes", "no", False), ("Even", "\\text{odd}", False), ("x^2-1", "x^2+1", False),
])
def test_bare_answers_are_graded_like_any_answer(completion: str, gold: str, expected: bool) -> None:
    assert grade(completion, gold).correct is expected


# --- markdown bold -------------------------------------------------------------------------------

@pytest.mark.parametrize(("completion", "answer"), [
    ("Thus the result is **x^2+1**.", "x^2+1"), ("**Final Answer**\n\n**\\frac{3}{4}**", "\\frac{3}{4}"),
    ("We get $x = $ **5**.", "5"), ("So the area is **12\\pi**", "12\\pi"),
])
def test_the_last_bold_math_is_an_answer(completion: str, answer: str) -> None:
    assert extract_answer(completion) == Extraction(answer, "bold")


@pytest.mark.parametrize(("completion", "gold", "expected"), [
    ("the answer is **x = 3**", "3", True), ("✅ Final Answer: **73**", "73", True),
    ("The number of residents who own all four is **73**.\n\n---\n\n✅ Final Answer: **73**", "73", True),
    ("**Step 1: 12 cups.** Half of them are left, so 6 cups remain.", "12", False),
    ("We first find **12**, then subtract 5 to get 7.", "12", False),
    ("The area is 12.\n\n**Verification**\nAll sides check out.", "12", True),
])
def test_bold_answers_and_bold_headings(completion: str, gold: str, expected: bool) -> None:
    assert grade(completion, gold).correct is expected


# --- several boxes in a completion --------------------------------------------------------------

@pytest.mark.parametrize("completion", [
    "\\boxed{70} \\boxed{71} \\boxed{73} \\boxed{74} \\boxed{72}",
    "$\\boxed{70}$ or $\\boxed{71}$ or $\\boxed{72}$",
    "\\boxed{x = 70 \\vee x = 71 \\vee x = 72}",
])
def test_listed_boxes_are_candidates_that_never_match_a_single_gold(completion: str) -> None:
    assert not grade(completion, "72").correct


def test_listed_boxes_of_the_same_value_are_one_answer() -> None:
    assert grade("So $\\boxed{6}$, i.e. $\\boxed{6}$.", "6").correct


def test_gsm8k_never_reads_one_number_out_of_a_list_of_equations() -> None:
    assert not grade_numeric("$x = 70$ or $x = 71$ or $x = 72$", "72").correct
    assert grade_numeric("so $x = 72$", "72").correct


def test_a_minerva_closing_sentence_after_boxes_is_the_final_answer() -> None:
    completion = ("The first CD earns $\\boxed{200}$ and the second $\\boxed{255}$, so she has $10,455$.\n"
                  "Final Answer: The final answer is $10,455$. I hope it is correct.")
    assert grade(completion, "10455").correct


def test_a_final_answer_sentence_with_one_number_states_that_number() -> None:
    assert grade("Final Answer: Jane started growing Sphere 3 hours ago. I hope it is correct.", "3").correct
    assert not grade("Final Answer: Jane needs at least 3 hours.", "3").correct


def test_a_quoted_final_answer_is_unquoted() -> None:
    completion = 'Final Answer: The final answer is "$12$ and $13$". I hope it is correct.'
    assert grade(completion, "12 \\text{ and } 13").correct
