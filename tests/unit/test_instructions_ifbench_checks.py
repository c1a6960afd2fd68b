"""IFBench's constraints we implement, one property each (hand-computed), and the ifbench task."""

from __future__ import annotations

import pytest
import regex

from reward_core.contract import RolloutStatus
from reward_service.tasks.ifbench_task import IfbenchTask
from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions import (
    IFBENCH_INSTRUCTIONS,
    BadInstruction,
    build_instructions,
    count_words,
    split_into_sentences,
)


def follows(instruction_id: str, response: str, **kwargs) -> bool:
    [built] = build_instructions([instruction_id], [kwargs], IFBENCH_INSTRUCTIONS)
    return built.check(response, ENGLISH_TOOLS)


def test_regex_splitter_keeps_titles_and_decimals():
    assert split_into_sentences("Mr. Smith paid 3.5 dollars. Was it fair? Yes!") == [
        "Mr. Smith paid 3.5 dollars.", "Was it fair?", "Yes!"]


def test_word_count_range_is_inclusive():
    assert follows("count:word_count_range", "one two three", min_words=3, max_words=3)
    assert not follows("count:word_count_range", "one two", min_words=3, max_words=5)


def test_numbers_are_counted_after_dropping_punctuation():
    # "3.5" becomes "35": one number; "12" another -> 2
    assert follows("count:numbers", "Pay 3.5 or 12.", N=2)


def test_sentence_type_needs_twice_as_many_statements_as_questions():
    assert follows("ratio:sentence_type", "It rains. It pours. Why?")
    assert not follows("ratio:sentence_type", "It rains. Why?")


def test_alphabet_loop_wraps_from_z_to_a():
    assert follows("words:alphabet", "Yes, zebras are bold.")
    assert not follows("words:alphabet", "Yes, apples.")


def test_nested_parentheses_need_five_levels():
    assert follows("format:parentheses", "((([[{x}]])))")
    assert not follows("format:parentheses", "(([{x}]))")


def test_keyword_in_nth_sentence():
    assert follows("sentence:keyword", "First one. The Cat sat.", word="cat", N=2)
    assert not follows("sentence:keyword", "A cat. Second.", word="cat", N=2)


def test_punctuation_cover_needs_interrobang_and_all_six_marks():
    assert follows("count:punctuation", "Really?! Yes, sure; ok: fine. Wow! What?")
    assert not follows("count:punctuation", "Yes, sure; ok: fine. Wow! What?")


def test_word_count_takes_marks_as_nltk_does():
    # nltk's RegexpTokenizer(r"\w+") runs on the `regex` engine: U+FE0F (after ❤) is a word character there
    assert count_words("I \u2764\ufe0f it") == 3


def test_word_count_of_ascii_text_is_the_regex_count_for_every_character():
    every = "".join(map(chr, range(128)))
    for text in (every, every[::-1], " ".join(every), "a_b c-d 3.5 x\ty\x1cz"):
        assert count_words(text) == len(regex.findall(r"\w+", text))


def test_trigram_overlap_is_the_share_of_the_responses_character_trigrams():
    # response "abcx": trigrams {abc, bcx}; the reference "abcd" shares abc -> 50%, +-2 points
    assert follows("ratio:overlap", "abcx", reference_text="abcd", percentage=52)
    assert not follows("ratio:overlap", "abcx", reference_text="abcd", percentage=53)


def test_overlap_of_a_response_under_three_characters_is_not_followed():
    assert not follows("ratio:overlap", "ab", reference_text="abc", percentage=0)


def test_every_nth_word_japanese_skips_numbers():
    assert follows("count:words_japanese", "a 猫 b 12", N=2)
    assert not follows("count:words_japanese", "a cat", N=2)


def test_syllable_parity_alternates():
    assert follows("words:odd_even_syllables", "Cat apple dog.")  # 1, 2, 1
    assert not follows("words:odd_even_syllables", "Cat dog apple.")


def test_last_word_of_a_sentence_opens_the_next():
    assert follows("words:last_first", "I like cats. Cats like fish.")
    assert not follows("words:last_first", "I like cats. Dogs like fish.")


def test_sentence_increment_counts_words_without_punctuation():
    assert follows("sentence:increment", "Go. I go. We all go.", small_n=1)
    assert not follows("sentence:increment", "Go. I go. We all go.", small_n=2)


def test_alliteration_must_grow_sentence_by_sentence():
    assert follows("sentence:alliteration_increment", "Hi there. Big bad bears.")  # 0, then 3
    assert not follows("sentence:alliteration_increment", "Big bad bears. Hi there.")


def test_an_emoji_may_open_the_next_sentence_but_must_close_the_last():
    assert follows("format:emoji", "Hi. 😀 Bye 😀.")
    assert not follows("format:emoji", "Hi 😀. Bye.")


def test_two_blank_lines_break_the_stairs_as_in_the_reference():
    # the reference removes blank lines while iterating: the second of two is never looked at
    assert follows("format:line_indent", "a\n\n b")
    assert not follows("format:line_indent", "a\n\n\n b")


def test_a_quote_needs_an_unquoted_explanation_after_it():
    assert follows("format:quote_unquote", '"To be" is the question.')
    assert not follows("format:quote_unquote", 'The question: "to be".')


def test_a_blank_line_ends_the_prose_before_the_bullets():
    assert follows("format:no_bullets_bullets", "One. Two.\n* a\n* b")
    assert not follows("format:no_bullets_bullets", "One.\n\nTwo.\n* a\n* b")


def test_letter_options_must_be_answered_exactly():
    assert follows("format:options", "a)", options="a), b), c), d)")
    assert not follows("format:options", "a) because", options="a), b), c), d)")
    assert follows("format:options", "Maybe!", options="yes/no/maybe")


def test_title_case_fails_on_a_lowercase_word_of_two_letters_or_more():
    assert follows("format:title_case", "The a Wolf")
    assert not follows("format:title_case", "The big Wolf")


def test_multiples_of_seven_from_ten_to_fifty_and_nothing_else():
    assert follows("custom:multiples", "14,21,28,35,42,49")
    assert not follows("custom:multiples", "7, 14, 21, 28, 35, 42, 49")


def test_dates_within_napoleons_life_and_their_month():
    assert follows("custom:date_format_list", "1796-04-12, 1805-02-29")
    assert not follows("custom:date_format_list", "1805-04-31")
    assert not follows("custom:date_format_list", "1822-01-01")


def test_capitals_compared_without_accents():
    capitals = ("Reykjavík, Helsinki, Oslo, Tallinn, Stockholm, Riga, Moscow, Copenhagen, Vilnius, Minsk, Dublin, "
                "Berlin, Amsterdam, Warsaw, London, Brussels, Prague, Luxembourg, Paris, Vienna, Bratislava, Budapest, "
                "Vaduz, Chișinău, Bern, Ljubljana, Zagreb")
    assert follows("custom:european_capitals_sort", capitals)
    assert not follows("custom:european_capitals_sort", capitals.replace("Oslo, Tallinn", "Tallinn, Oslo"))


def test_city_csv_needs_its_header_and_seven_rows():
    table = "ID,Country,City,Year,Count\n" + "\n".join(f"{n},France,Paris,2020,{n}" for n in range(7))
    assert follows("custom:csv_city", table)
    assert not follows("custom:csv_city", table.rsplit("\n", 1)[0])


def test_keywords_multiple_counts_substrings_ignoring_case():
    wanted = {"keyword1": "ant", "keyword2": "bee", "keyword3": "cow", "keyword4": "doe", "keyword5": "elk"}
    text = "Ant " + "bee " * 2 + "cow " * 3 + "doe " * 5 + "elk " * 7
    assert follows("count:keywords_multiple", text, **wanted)
    assert not follows("count:keywords_multiple", text + " giant", **wanted)  # "ant" twice now


def test_keyword_position_counts_word_tokens_in_the_nth_sentence():
    assert follows("words:keywords_specific_position", "First one. The cat sat.", keyword="cat", n=2, m=2)
    assert not follows("words:keywords_specific_position", "First one. The cat sat.", keyword="cat", n=2, m=3)


def test_repeat_span_is_a_slice_of_the_prompts_words():
    prompt = "The cat sat on the mat"
    assert follows("repeat:repeat_span", "cat SAT", prompt_to_repeat=prompt, n_start=1, n_end=3)
    assert not follows("repeat:repeat_span", "cat sat on", prompt_to_repeat=prompt, n_start=1, n_end=3)


def test_repeat_span_start_zero_is_the_first_word():
    assert follows("repeat:repeat_span", "the cat", prompt_to_repeat="The cat sat", n_start=0, n_end=2)


def test_repeat_change_keeps_all_but_the_first_word():
    assert follows("repeat:repeat_change", "Give me a story.", prompt_to_repeat="Tell me a story.")
    assert not follows("repeat:repeat_change", "Tell me a story.", prompt_to_repeat="Tell me a story.")


def test_an_empty_keyword_is_a_bad_reference():
    with pytest.raises(BadInstruction):
        follows("words:words_position", "a cat", keyword="  ")


def test_custom_constraints_ignore_arguments_as_the_reference_does():
    assert follows("custom:character_reverse", "Elgae dlab!", anything="ignored")


@pytest.mark.parametrize("instruction_id", ["words:start_verb", "ratio:stop_words"])
def test_unsupported_ifbench_id_is_error_not_zero(instruction_id):
    outcome = IfbenchTask().score("x", {"instruction_id_list": [instruction_id], "kwargs": [{}]})
    assert outcome.status == RolloutStatus.ERROR and not outcome.status.scored
    assert "no PyPI package ships" in outcome.detail


def test_ifbench_task_self_check_passes():
    assert IfbenchTask().self_check() == []


def test_ifbench_task_also_knows_ifeval_ids():
    reference = {"instruction_id_list": ["count:person_names", "punctuation:no_comma"], "kwargs": [{"N": 2}, {}]}
    assert IfbenchTask().score("Emma met Liam.", reference).score == 1.0
