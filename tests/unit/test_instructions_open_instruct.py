"""Tulu 3's if_functions (open-instruct), one property each, hand-computed."""

from __future__ import annotations

import pytest

from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions import OPEN_INSTRUCT_FUNCTIONS, BadInstruction, build_instructions


def follows(func_name: str, response: str, **kwargs) -> bool:
    [built] = build_instructions([func_name], [kwargs], OPEN_INSTRUCT_FUNCTIONS)
    return built.check(response, ENGLISH_TOOLS)


def test_table_has_the_25_functions():
    assert len(OPEN_INSTRUCT_FUNCTIONS) == 25


def test_keywords_are_substrings_not_regexes():
    assert follows("verify_keywords", "A colour chart", keyword_list=["COLOUR"])
    assert not follows("verify_keywords", "A color chart", keyword_list=["colou?r"])


def test_keyword_frequency_counts_whole_words_exactly():
    assert follows("verify_keyword_frequency", "Cat cat concatenate cat.", word="cat", N=3)
    assert not follows("verify_keyword_frequency", "Cat cat concatenate cat.", word="cat", N=4)


def test_forbidden_words_are_substrings():
    assert not follows("validate_forbidden_words", "concatenate", forbidden_words=["cat"])


def test_letter_frequency_is_case_sensitive_and_exact():
    assert follows("verify_letter_frequency", "Aaa", letter="a", N=2)


def test_word_constraint_around_allows_ten_percent():
    text = " ".join(["w"] * 22)  # 22 words; around 20 allows |22 - 20| <= 2
    assert follows("validate_word_constraint", text, N=20, quantifier="around")
    assert not follows("validate_word_constraint", text, N=19, quantifier="around")


def test_unknown_quantifier_is_not_followed():
    assert not follows("validate_word_constraint", "a b", N=2, quantifier="exactly")


def test_sentences_split_after_terminal_punctuation():
    assert follows("verify_sentence_constraint", "One. Two! Three?", N=3, quantifier="at least")
    assert not follows("verify_sentence_constraint", "One. Two! Three?", N=2, quantifier="at most")


def test_paragraph_count_uses_spaced_dividers():
    assert follows("verify_paragraph_count", "A\n* * *\nB", N=2)
    assert not follows("verify_paragraph_count", "A\n* * *\n\n* * *\nB", N=3)


def test_paragraphs_check_count_and_first_word():
    assert follows("validate_paragraphs", "First.\n\nSecond one.", N=2, first_word="Second", i=2)
    assert not follows("validate_paragraphs", "First.\n\nsecond one.", N=2, first_word="Second", i=2)


def test_postscript_needs_text_after_the_marker():
    assert follows("verify_postscript", "Hi.\nP.S. more", postscript_marker="P.S.")
    assert not follows("verify_postscript", "Hi.\nP.S.", postscript_marker="P.S.")


def test_bullets_count_star_or_dash_lines():
    assert follows("verify_bullet_points", "* a\n- b\ntext", N=2)


def test_sections_count_splitter_and_number_ignoring_case():
    assert follows("validate_sections", "section 1 a SECTION 2 b", N=2, section_splitter="Section")


def test_choice_needs_an_option_substring():
    assert follows("validate_choice", "I pick b)", options=["a)", "b)"])
    assert not follows("validate_choice", "I pick e)", options=["a)", "b)"])


def test_two_responses_need_exactly_one_separator():
    assert follows("validate_two_responses", "A ****** B")
    assert not follows("validate_two_responses", "A ****** B ****** C")


def test_uppercase_is_equality_with_upper():
    assert follows("validate_uppercase", "ALL CAPS 123")
    assert not follows("validate_uppercase", "Not caps")


def test_capital_words_count_ascii_capital_runs():
    assert follows("validate_frequency_capital_words", "NASA and USA", N=2, quantifier="at least")


def test_end_and_quotation_are_exact():
    assert follows("validate_end", "Bye now.", end_phrase="now.")
    assert not follows("validate_end", "Bye now. ", end_phrase="now.")
    assert not follows("validate_quotation", ' "x"')


def test_response_language_failure_is_not_followed():
    assert not follows("validate_response_language", "12345", language="en")


@pytest.mark.parametrize("func_name,kwargs", [
    ("verify_letter_frequency", {"letter": "ab", "N": 1}),
    ("validate_paragraphs", {"N": 2, "first_word": "x", "i": 3}),
    ("validate_choice", {"options": "A, B"}),
    ("validate_end", {}),
])
def test_bad_arguments_are_rejected(func_name, kwargs):
    with pytest.raises(BadInstruction):
        build_instructions([func_name], [kwargs], OPEN_INSTRUCT_FUNCTIONS)
