"""Option letters, number words and prose in answers."""

from __future__ import annotations

import pytest

from reward_service.verifiers.math.text_answers import number_word_value, option_letter, prose_key


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
