"""Unit tests for :mod:`reward_service.verifiers.math.answer_extract`."""

from __future__ import annotations

import pytest

from reward_service.verifiers.math import Extraction, ExtractionConfig, extract_answer


def test_gsm8k_marker_gives_number_after_last_marker() -> None:
    text = "#### 3\nmore work\n#### 42"
    assert extract_answer(text) == Extraction("42", "gsm8k")


def test_gsm8k_marker_beats_later_answer_is() -> None:
    text = "so 42.\n#### 42\nThe answer is 40 if we round."
    assert extract_answer(text) == Extraction("42", "gsm8k")


def test_gsm8k_marker_strips_dollar_sign_keeps_digits() -> None:
    assert extract_answer("#### $1,200") == Extraction("1,200", "gsm8k")


def test_last_boxed_wins() -> None:
    assert extract_answer(r"first \boxed{1} then \boxed{2}.") == Extraction("2", "boxed")


def test_boxed_with_nested_braces() -> None:
    text = r"so $\boxed{\frac{1}{\sqrt{2}}}$ done"
    assert extract_answer(text) == Extraction(r"\frac{1}{\sqrt{2}}", "boxed")


def test_fbox_is_accepted() -> None:
    assert extract_answer(r"$\fbox{7}$") == Extraction("7", "boxed")


def test_boxed_without_braces() -> None:
    assert extract_answer(r"the result is $\boxed 5$") == Extraction("5", "boxed")


def test_unbalanced_last_box_falls_back_to_previous_box() -> None:
    assert extract_answer(r"\boxed{3} and then \boxed{4") == Extraction("3", "boxed")


def test_boxed_beats_later_answer_is() -> None:
    text = r"$\boxed{12}$. So the answer is 13."
    assert extract_answer(text) == Extraction("12", "boxed")


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Thus the answer is 17.", "17"),
        ("The answer is: $\\frac{3}{4}$.", "\\frac{3}{4}"),
        ("Answer: 15 (check: 15 + 5 = 20)", "15"),
        ("**Final Answer:** 9", "9"),
        ("Final answer: \\(x = 2\\)", "x = 2"),
        ("THE ANSWER IS 3.5.", "3.5"),
    ],
)
def test_answer_is_phrases(text: str, answer: str) -> None:
    assert extract_answer(text) == Extraction(answer, "answer_is")


def test_answer_is_uses_last_occurrence() -> None:
    assert extract_answer("The answer is 1.\nNo wait, the answer is 2.") == Extraction("2", "answer_is")


def test_answer_is_stops_at_end_of_line() -> None:
    assert extract_answer("Answer: 8\n\nIt took 3 steps.") == Extraction("8", "answer_is")


def test_last_number_fallback() -> None:
    assert extract_answer("We get 3 apples and then 1,250 more") == Extraction("1,250", "last_number")


def test_last_number_decimal() -> None:
    assert extract_answer("It costs $40.50 in total") == Extraction("40.50", "last_number")


def test_last_number_fallback_can_be_disabled() -> None:
    assert extract_answer("there are 5 cats", ExtractionConfig(last_number_fallback=False)) is None


def test_strict_ignores_answer_is_and_numbers() -> None:
    assert extract_answer("The answer is 5", ExtractionConfig(strict=True)) is None


def test_strict_still_reads_boxed() -> None:
    assert extract_answer(r"\boxed{5}", ExtractionConfig(strict=True)) == Extraction("5", "boxed")


@pytest.mark.parametrize("text", ["", "I cannot solve this.", r"\boxed{}"])
def test_nothing_to_extract_returns_none(text: str) -> None:
    assert extract_answer(text) is None


def test_answer_longer_than_hard_cap_is_no_answer() -> None:
    text = r"\boxed{" + "1" * 50 + "}"
    assert extract_answer(text, ExtractionConfig(max_answer_chars=10)) is None


def test_megabyte_text_with_final_box_is_extracted() -> None:
    text = "blah (" * 200_000 + r"\boxed{6}"
    assert extract_answer(text) == Extraction("6", "boxed")


def test_megabyte_text_of_unbalanced_boxes_returns() -> None:
    text = r"\boxed{{" * 100_000
    assert extract_answer(text) is None


def test_megabyte_text_last_number_is_found() -> None:
    text = "x" * 1_000_000 + " 12 " + "y" * 1_000_000
    assert extract_answer(text) == Extraction("12", "last_number")


def test_non_string_input_returns_none() -> None:
    assert extract_answer(None) is None  # type: ignore[arg-type]


def test_answer_is_keeps_every_math_span_on_the_line() -> None:
    assert extract_answer("The answer is $2$ or $3$.") == Extraction("2 or 3", "answer_is")


def test_answer_is_drops_trailing_explanation() -> None:
    assert extract_answer("The answer is $12$ because 3*4=12.") == Extraction("12", "answer_is")


def test_answers_are_phrase() -> None:
    assert extract_answer("The answers are 2 and 3.") == Extraction("2 and 3", "answer_is")


def test_empty_last_box_is_not_a_boxed_answer() -> None:
    assert extract_answer("so \\boxed{}", ExtractionConfig(strict=True)) is None


def test_megabyte_text_answer_is_found() -> None:
    text = "answer " * 200_000 + "\nThe answer is 31."
    assert extract_answer(text) == Extraction("31", "answer_is")
