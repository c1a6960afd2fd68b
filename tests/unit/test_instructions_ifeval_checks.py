"""IFEval's 25 checks, one property each, on hand-made responses (values worked out by hand)."""

from __future__ import annotations

import pytest

from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions import IFEVAL_INSTRUCTIONS, BadInstruction, build_instructions


def follows(instruction_id: str, response: str, **kwargs) -> bool:
    [built] = build_instructions([instruction_id], [kwargs], IFEVAL_INSTRUCTIONS)
    return built.check(response, ENGLISH_TOOLS)


def test_registry_has_ifevals_25_instructions():
    assert len(IFEVAL_INSTRUCTIONS) == 25


def test_keywords_existence_needs_every_keyword_case_insensitively():
    assert follows("keywords:existence", "An APPLE and a pear.", keywords=["apple", "pear"])
    assert not follows("keywords:existence", "An apple only.", keywords=["apple", "pear"])


def test_keywords_are_regexes_as_in_ifeval():
    assert follows("keywords:existence", "colour", keywords=["colou?r"])


def test_keyword_frequency_counts_substring_matches():
    # "cat" occurs in "cat", "Cats" and "concatenate": 3 matches
    text = "cat Cats concatenate"
    assert follows("keywords:frequency", text, keyword="cat", frequency=3, relation="at least")
    assert not follows("keywords:frequency", text, keyword="cat", frequency=3, relation="less than")


def test_forbidden_words_match_whole_words_only():
    assert follows("keywords:forbidden_words", "The category is fine.", forbidden_words=["cat"])
    assert not follows("keywords:forbidden_words", "The Cat sat.", forbidden_words=["cat"])


def test_letter_frequency_counts_both_cases():
    # "Banana bread": a, a, a, a (B-a-n-a-n-a, bre-a-d) -> 4 a's
    assert follows("keywords:letter_frequency", "Banana bread", letter="A", let_frequency=4, let_relation="at least")
    assert not follows("keywords:letter_frequency", "Banana bread", letter="a", let_frequency=5,
                       let_relation="at least")


def test_response_language_compares_detected_code():
    text = "Bonjour tout le monde, je suis très content de vous voir aujourd'hui."
    assert follows("language:response_language", text, language="fr")
    assert not follows("language:response_language", text, language="en")


def test_undetectable_language_counts_as_followed():
    assert follows("language:response_language", "12345 67890", language="de")


def test_number_sentences_uses_punkt_abbreviations():
    # Punkt keeps "Dr." inside the sentence: 2 sentences, not 3
    text = "Dr. Smith went home. He slept."
    assert follows("length_constraints:number_sentences", text, num_sentences=3, relation="less than")
    assert follows("length_constraints:number_sentences", text, num_sentences=2, relation="at least")


def test_number_paragraphs_splits_on_three_asterisks():
    assert follows("length_constraints:number_paragraphs", "One.\n***\nTwo.\n***\nThree.", num_paragraphs=3)
    assert not follows("length_constraints:number_paragraphs", "One.\n***\nTwo.", num_paragraphs=3)


def test_empty_inner_paragraph_fails_but_empty_ends_do_not_count():
    assert not follows("length_constraints:number_paragraphs", "One.\n***\n***\nTwo.", num_paragraphs=2)
    assert follows("length_constraints:number_paragraphs", "***\nOne.\n***\nTwo.\n***", num_paragraphs=2)


def test_number_words_counts_word_character_runs():
    # "It's 3-sided" -> It, s, 3, sided = 4 words
    assert follows("length_constraints:number_words", "It's 3-sided", num_words=4, relation="at least")
    assert not follows("length_constraints:number_words", "It's 3-sided", num_words=4, relation="less than")


def test_nth_paragraph_first_word_strips_quotes_and_punctuation():
    text = "Intro here.\n\n\"Hello, world\" she said.\n\nEnd."
    assert follows("length_constraints:nth_paragraph_first_word", text, num_paragraphs=3, nth_paragraph=2,
                   first_word="hello")


def test_nth_paragraph_first_word_needs_the_paragraph_count():
    text = "Intro here.\n\nHello there."
    assert not follows("length_constraints:nth_paragraph_first_word", text, num_paragraphs=3, nth_paragraph=2,
                       first_word="hello")


def test_nth_paragraph_indexes_the_raw_split_as_ifeval_does():
    # split: ["A.", "", "Hello."] -> 2 non-empty paragraphs; paragraph 2 of the raw split is empty
    assert not follows("length_constraints:nth_paragraph_first_word", "A.\n\n\n\nHello.", num_paragraphs=2,
                       nth_paragraph=2, first_word="hello")


def test_placeholders_count_square_brackets():
    assert follows("detectable_content:number_placeholders", "Dear [name], at [address].", num_placeholders=2)
    assert not follows("detectable_content:number_placeholders", "Dear [name].", num_placeholders=2)


def test_postscript_ps_marker_matches_lowercase_variants():
    assert follows("detectable_content:postscript", "Bye.\np.s. see you", postscript_marker="P.S.")
    assert not follows("detectable_content:postscript", "Bye. PS see you", postscript_marker="P.S.")


def test_postscript_pps_marker_allows_spaces():
    assert follows("detectable_content:postscript", "Bye.\nP. P. S note", postscript_marker="P.P.S")


def test_bullet_lists_count_star_and_dash_lines_exactly():
    text = "* one\n* two\n- three\n**bold** line"
    assert follows("detectable_format:number_bullet_lists", text, num_bullets=3)
    assert not follows("detectable_format:number_bullet_lists", text, num_bullets=4)


def test_constrained_response_needs_one_option():
    assert follows("detectable_format:constrained_response", "Well. My answer is maybe.")
    assert not follows("detectable_format:constrained_response", "My answer is perhaps.")


def test_highlights_count_single_and_double_star_spans():
    # *a* -> 1 single; **b** -> findall of \*[^\n*]*\* sees "**" (empty) and "**": 0 single, 1 double
    assert follows("detectable_format:number_highlighted_sections", "*a* and **b**", num_highlights=2)
    assert not follows("detectable_format:number_highlighted_sections", "*a* and ** **", num_highlights=2)


def test_multiple_sections_counts_splitter_with_number():
    text = "SECTION 1\nfoo\nSECTION 2\nbar"
    assert follows("detectable_format:multiple_sections", text, section_spliter="SECTION", num_sections=2)
    assert not follows("detectable_format:multiple_sections", text, section_spliter="Section", num_sections=1)


def test_multiple_sections_splitter_is_a_regex_and_zero_sections_always_follow():
    text = "Part 1 foo. Chapter 2 bar."
    assert follows("detectable_format:multiple_sections", text, section_spliter="(Part|Chapter)", num_sections=2)
    assert follows("detectable_format:multiple_sections", "no sections", section_spliter="SECTION", num_sections=0)
    assert not follows("detectable_format:multiple_sections", "no sections", section_spliter="SECTION", num_sections=1)


def test_a_text_without_a_divider_is_one_paragraph_unless_blank():
    assert follows("length_constraints:number_paragraphs", "One. ** Two.\n\nThree.", num_paragraphs=1)
    assert follows("length_constraints:number_paragraphs", " \n ", num_paragraphs=0)


def test_postscript_with_an_own_marker_is_a_lowercased_regex():
    assert follows("detectable_content:postscript", "Bye.\n  NOTE: later", postscript_marker="Note:")
    assert not follows("detectable_content:postscript", "Bye. No te", postscript_marker="Note:")


def test_json_format_accepts_fenced_json():
    assert follows("detectable_format:json_format", '```json\n{"a": 1}\n```')
    assert not follows("detectable_format:json_format", "{'a': 1}")


def test_json_format_deep_nesting_is_not_an_exception():
    assert not follows("detectable_format:json_format", "[" * 100000 + "]" * 100000)


def test_title_needs_text_inside_double_angles():
    assert follows("detectable_format:title", "<<My Poem>>\nroses")
    assert not follows("detectable_format:title", "<< >> and <<two\nlines>>")


def test_two_responses_must_differ():
    assert follows("combination:two_responses", "First.\n******\nSecond.")
    assert not follows("combination:two_responses", "Same.\n******\nSame.")
    assert not follows("combination:two_responses", "A\n******\n******\nB")


def test_repeat_prompt_is_a_case_insensitive_prefix():
    assert follows("combination:repeat_prompt", "  write a POEM. Here it is.", prompt_to_repeat="Write a poem.")
    assert not follows("combination:repeat_prompt", "Sure! Write a poem.", prompt_to_repeat="Write a poem.")


def test_end_checker_ignores_case_and_closing_quotes():
    assert follows("startend:end_checker", 'He said "Any other questions?"', end_phrase="any other questions?")
    assert not follows("startend:end_checker", "Any other questions? Bye.", end_phrase="Any other questions?")


def test_capital_word_frequency_uses_nltk_words():
    # word_tokenize: The, USA, and, NASA-led, work, ., OK, ? -> USA, OK are upper: 2
    text = "The USA and NASA-led work. OK?"
    assert follows("change_case:capital_word_frequency", text, capital_frequency=2, capital_relation="at least")
    assert follows("change_case:capital_word_frequency", text, capital_frequency=3, capital_relation="less than")


def test_english_capital_needs_upper_case_english():
    assert follows("change_case:english_capital", "THIS IS A LOUD ENGLISH SENTENCE ABOUT THE WEATHER.")
    assert not follows("change_case:english_capital", "THIS IS Mostly LOUD.")


def test_english_lowercase_needs_lower_case():
    assert follows("change_case:english_lowercase", "this is a quiet english sentence about the weather.")
    assert not follows("change_case:english_lowercase", "this is Not all lowercase.")


def test_no_comma():
    assert follows("punctuation:no_comma", "No commas here.")
    assert not follows("punctuation:no_comma", "Yes, one.")


def test_quotation_needs_wrapping_double_quotes():
    assert follows("startend:quotation", '  "quoted"  ')
    assert not follows("startend:quotation", '"')


@pytest.mark.parametrize("instruction_id,kwargs", [
    ("keywords:existence", {}),
    ("keywords:existence", {"keywords": []}),
    ("keywords:frequency", {"keyword": "x", "frequency": 2}),
    ("keywords:frequency", {"keyword": "x", "frequency": -1, "relation": "at least"}),
    ("keywords:frequency", {"keyword": "x", "frequency": 2, "relation": "at most"}),
    ("keywords:letter_frequency", {"letter": "ab", "let_frequency": 1, "let_relation": "at least"}),
    ("language:response_language", {"language": "xx"}),
    ("length_constraints:number_words", {"num_words": "100", "relation": "at least"}),
    ("length_constraints:number_words", {"num_words": 1.5, "relation": "at least"}),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "a"}),
    ("keywords:existence", {"keywords": ["(unclosed"]}),
    ("punctuation:no_comma", {"surprise": 1}),
])
def test_missing_or_malformed_arguments_are_rejected(instruction_id, kwargs):
    with pytest.raises(BadInstruction):
        build_instructions([instruction_id], [kwargs], IFEVAL_INSTRUCTIONS)


def test_integral_floats_are_integers():
    assert follows("length_constraints:number_words", "one two", num_words=2.0, relation="at least")


def test_unknown_instruction_is_rejected():
    with pytest.raises(BadInstruction, match="unknown instruction"):
        build_instructions(["keywords:nope"], [{}], IFEVAL_INSTRUCTIONS)
