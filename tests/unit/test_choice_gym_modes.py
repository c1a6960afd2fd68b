"""NeMo Gym's ``mcqa`` grading modes and template regex, case by case as its README and tests state them
(``resources_servers/mcqa``), plus where we deliberately part from it (hedges)."""

from __future__ import annotations

import pytest

from reward_service.verifiers.choice import grade_choice, parse_choices
from reward_service.verifiers.choice.gym_modes import grade_mode

OPT = parse_choices([{"A": "optA"}, {"B": "optB"}, {"C": "optC"}, {"D": "optD"}])
SHAPES = parse_choices([{"A": "Circle"}, {"B": "Square"}])
DIABETES = parse_choices([{k: v} for k, v in zip("ABCDE", ["single gene test", "exact age", "all individuals",
                                                           "environment", "A polygenic risk score"])])


@pytest.mark.parametrize("text,letter", [
    ("Final: \\boxed{C}", "C"), ("Final: \\boxed{ [C] }", "C"), ("\\boxed{C} ... \\boxed{E}", "E"),
    ("\\boxed{\\text{E}}", "E"), ("\\boxed{\\text{E: A polygenic risk score}}", "E"),
    ("\\boxed{E: A polygenic risk score can...}", "E"), ("\\boxed{E) x}", "E"), ("\\boxed{E. x}", "E"),
])
def test_strict_boxed_reads_the_last_box_letter_label_and_text_wrapper(text: str, letter: str) -> None:
    assert grade_mode(text, "strict_single_letter_boxed", DIABETES) == letter


@pytest.mark.parametrize("text", [
    "The answer is C.", "\\boxed{A polygenic risk score}", "\\boxed{c}", "\\boxed{F}", "Answer: B", "\\boxed{C",
])
def test_strict_boxed_reads_no_bare_text_lower_case_outside_letter_or_open_box(text: str) -> None:
    assert grade_mode(text, "strict_single_letter_boxed", DIABETES) is None


def test_strict_boxed_ignores_fbox() -> None:
    assert grade_mode("\\fbox{C}", "strict_single_letter_boxed", OPT) is None


@pytest.mark.parametrize("text,letter", [("\\boxed{Square}", "B"), ("\\boxed{B}", "B"), ("Final: \\boxed{ optC }", "C"),
                                         ("\\boxed{\\text{square}}", "B")])
def test_lenient_boxed_matches_one_option_text_inside_the_box(text: str, letter: str) -> None:
    choices = OPT if "opt" in text else SHAPES
    assert grade_mode(text, "lenient_boxed", choices) == letter


def test_lenient_boxed_with_two_option_texts_in_the_box_reads_nothing() -> None:
    assert grade_mode("\\boxed{Circle or Square}", "lenient_boxed", SHAPES) is None


@pytest.mark.parametrize("text,letter", [("Answer: c", "C"), ("Answer: optC", "C"), ("answer: B", "B"),
                                         ("Answer: Square", None), ("Answer: \\text{B}", "B"),
                                         ("Answer: B because", None), ("no marker B", None)])
def test_lenient_answer_colon_takes_the_first_marker_letter_or_exact_text(text: str, letter) -> None:
    assert grade_mode(text, "lenient_answer_colon", OPT) == letter


def test_lenient_answer_colon_reads_the_first_marker_not_the_last() -> None:
    assert grade_mode("Answer: A\nActually, Answer: B", "lenient_answer_colon", OPT) == "A"


@pytest.mark.parametrize("text,letter", [
    ("**Answer:** B", "B"), ("__Answer__: b", "B"), ("Answer: B because it is", "B"), ("Answer: the best is C", "C"),
    ("Answer: A\nlater\nAnswer: D", "D"), ("Answer: Ｃ", "C"),
])
def test_lenient_answer_colon_md_reads_the_last_markdown_answer_line(text: str, letter: str) -> None:
    assert grade_mode(text, "lenient_answer_colon_md", OPT) == letter


@pytest.mark.parametrize("text", ["Answer: A/C", "Answer: A or B", "Answer: B, D", "Answer: A and C"])
def test_lenient_answer_colon_md_reads_no_letter_from_a_list(text: str) -> None:
    assert grade_mode(text, "lenient_answer_colon_md", OPT) is None


def test_lenient_answer_colon_md_with_a_prefix_falls_back_to_the_box() -> None:
    assert grade_mode("Respuesta final: \\boxed{B}", "lenient_answer_colon_md", OPT, "Respuesta:") == "B"
    assert grade_mode("Respuesta: C", "lenient_answer_colon_md", OPT, "Respuesta:") == "C"
    assert grade_mode("\\boxed{B}", "lenient_answer_colon_md", OPT) is None


def test_an_empty_response_reads_nothing_in_every_mode() -> None:
    for mode in ("strict_single_letter_boxed", "lenient_boxed", "lenient_answer_colon", "lenient_answer_colon_md"):
        assert grade_mode("   ", mode, OPT) is None


@pytest.mark.parametrize("text,pattern,letter", [
    ("Option Selected: B", r"Option Selected:\s*([A-Za-z])", "B"), ("ANSWER IS b", r"ANSWER IS\s*([A-Za-z])", "B"),
    ("Antwort: B", [r"Answer\s*:\s*([A-Za-z])", r"Antwort\s*:\s*([A-Za-z])"], "B"),
    ("الإجابة: ب", [r"الإجابة:\s*([أ-د])"], "B"), ("Maybe Answer: A? Final Answer: B", r"Answer:\s*([A-Za-z])", "B"),
    ("Final Choice: Z", r"Final Choice:\s*([A-Za-z])", "Z"),
])
def test_the_template_regex_takes_the_last_match_case_insensitively(text: str, pattern, letter: str) -> None:
    grade = grade_choice(text, letter, OPT, "strict_single_letter_boxed", template_patterns=pattern)
    assert (grade.letter, grade.correct, grade.rule) == (letter, True, "template_regex")


def test_a_template_regex_that_matches_nothing_falls_back_to_the_mode() -> None:
    grade = grade_choice("\\boxed{B}", "B", OPT, "strict_single_letter_boxed", template_patterns=r"Pick:\s*([A-Z])")
    assert (grade.letter, grade.rule) == ("B", "strict_single_letter_boxed")


def test_a_template_regex_that_does_not_compile_is_skipped() -> None:
    grade = grade_choice("\\boxed{B}", "B", OPT, "strict_single_letter_boxed", template_patterns="(unclosed")
    assert grade.letter == "B"


def test_a_template_regex_letter_followed_by_another_option_is_a_hedge_unlike_gym() -> None:
    grade = grade_choice("ANSWER IS B or C", "B", OPT, template_patterns=r"ANSWER IS\s*([A-Za-z])")
    assert (grade.letter, grade.correct, grade.hedge) == (None, False, ("B", "C"))


def test_the_template_regex_matches_option_text_when_the_capture_is_not_a_letter() -> None:
    grade = grade_choice("Final: optD", "D", OPT, template_patterns=r"Final:\s*(\w+)")
    assert grade.letter == "D"
