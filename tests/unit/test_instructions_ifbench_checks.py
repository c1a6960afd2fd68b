"""IFBench's constraints we implement, one property each (hand-computed), and the ifbench task."""

from __future__ import annotations

from reward_core.contract import RolloutStatus
from reward_service.tasks.ifbench_task import IfbenchTask
from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions import IFBENCH_INSTRUCTIONS, build_instructions, split_into_sentences


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


def test_unsupported_ifbench_id_is_error_not_zero():
    outcome = IfbenchTask().score("x", {"instruction_id_list": ["words:start_verb"], "kwargs": [{}]})
    assert outcome.status == RolloutStatus.ERROR and not outcome.status.scored


def test_ifbench_task_also_knows_ifeval_ids():
    reference = {"instruction_id_list": ["count:person_names", "punctuation:no_comma"], "kwargs": [{"N": 2}, {}]}
    assert IfbenchTask().score("Emma met Liam.", reference).score == 1.0
