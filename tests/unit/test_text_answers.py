"""Option letters, number words and prose in answers."""

from __future__ import annotations

import pytest

from reward_service.verifiers.math.text_answers import (
    is_text_command,
    is_words,
    number_word_value,
    option_letter,
    prose_key,
)


@pytest.mark.parametrize("text,letter", [
    ("D", "D"), ("(D)", "D"), ("(B) 15", "B"), ("B: 15", "B"), ("option D", "D"), ("choice (d)", "D"),
])
def test_option_letters_are_read_in_their_common_forms(text: str, letter: str) -> None:
    assert option_letter(text) == letter


@pytest.mark.parametrize("text", ["x", "e", "15", "Evelyn", "(1, 2)"])
def test_variables_numbers_and_words_are_not_options(text: str) -> None:
    assert option_letter(text) is None


@pytest.mark.parametrize("text,value", [
    ("fourteen", 14), ("twenty-one", 21), ("one hundred five", 105), ("two thousand", 2000),
    ("minus three", -3), ("zero", 0),
])
def test_number_words_have_their_value(text: str, value: int) -> None:
    assert number_word_value(text) == value


@pytest.mark.parametrize("text", ["hello", "and", "", "fourteen apples"])
def test_other_words_are_not_numbers(text: str) -> None:
    assert number_word_value(text) is None


def test_prose_ignores_case_punctuation_and_spacing() -> None:
    assert prose_key("No  solution.") == prose_key("no solution")


@pytest.mark.parametrize(("raw", "expected"), [
    ("\\text{NO}", True), ("\\textbf{Yes}", True), (" \\mbox{even} ", True), ("\\mathrm{e}", False),
    ("\\text{a} + 1", False), ("No", False),
])
def test_a_text_command_answer_is_recognised(raw: str, expected: bool) -> None:
    assert is_text_command(raw) is expected


@pytest.mark.parametrize(("answer", "text_command", "expected"), [
    ("No", False, True), ("Yes", False, True), ("no solution", False, True), ("NO", True, True),
    ("ab", False, False), ("ab", True, True), ("x", True, False), ("x^2", True, False), ("12", True, False),
])
def test_words_whose_case_does_not_matter(answer: str, text_command: bool, expected: bool) -> None:
    assert is_words(answer, text_command) is expected
