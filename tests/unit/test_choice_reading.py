"""The ``auto`` reading of multiple-choice answers: the forms models write, hedges, options and golds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.verifiers.choice import BadChoices, Choices, gold_letter, parse_choices, read_choice

OPTIONS = [{"A": "Circle"}, {"B": "Square"}, {"C": "Triangle"}, {"D": "A polygenic risk score"}]
CHOICES = parse_choices(OPTIONS)


@pytest.mark.parametrize("completion", [
    "Answer: C", "ANSWER: C", "answer: c", "The answer is C.", "the answer is (C)", "The answer is (c).",
    "Thus the final answer is **C**.", "**Answer:** C", "**Final Answer**: (C)", "The correct option is C",
    "Option Selected: C", "Final Choice: c", "I choose C.", "\\boxed{C}", "$\\boxed{\\text{C}}$",
    "\\boxed{C: Triangle}", "<answer>C</answer>", "C", "(C)", "[C]", "**C**", "C.", "C. C", "C) Triangle",
    "(C) Triangle", "Reasoning...\n\nC", "Ｃ", "The answer is Triangle.", "Answer: triangle",
    "<think>maybe A</think>\nThe answer is C", "\\boxed{B} ... wait, no. The answer is C",
    "The answer is C, not B.", "I think the answer is C because the triangle has three sides",
])
def test_the_forms_models_write_read_as_the_letter(completion: str) -> None:
    assert read_choice(completion, CHOICES).letter == "C"


@pytest.mark.parametrize("completion", [
    "The answer is A or C", "Answer: (A) and (C)", "B/D", "A, C", "\\boxed{A or C}", "Answer: C or D",
    "The answer is either B or C.", "Answer: **A** / **C**",
])
def test_a_hedge_listing_several_options_reads_no_letter(completion: str) -> None:
    read = read_choice(completion, CHOICES)
    assert read.letter is None and len(read.hedge) >= 2


@pytest.mark.parametrize("completion", ["", "   ", "I do not know.", "Let me think about shapes."])
def test_text_without_an_answer_reads_nothing(completion: str) -> None:
    read = read_choice(completion, CHOICES)
    assert read.letter is None and read.hedge == ()


def test_an_article_a_before_option_text_is_that_option_not_letter_a() -> None:
    assert read_choice("Answer: A polygenic risk score", CHOICES).letter == "D"


def test_a_capital_a_after_the_answer_marker_is_letter_a() -> None:
    assert read_choice("The answer is A because circles are round", CHOICES).letter == "A"


def test_a_pronoun_i_before_a_word_gives_way_to_the_one_letter_after_it() -> None:
    ten = parse_choices(list("abcdefghij"))
    assert read_choice("Answer: I think B", ten).letter == "B"
    assert read_choice("Answer: I", ten).letter == "I"


def test_a_later_marker_that_reads_nothing_leaves_the_box_in_charge() -> None:
    assert read_choice("\\boxed{B}. The other option is wrong.", CHOICES).letter == "B"


def test_a_letter_outside_the_options_is_not_read() -> None:
    assert read_choice("Answer: E", CHOICES).letter is None


def test_the_source_says_where_the_letter_was_read() -> None:
    assert read_choice("x \\boxed{B}", CHOICES).source == "boxed"
    assert read_choice("Answer: B", CHOICES).source == "marker"
    assert read_choice("B", CHOICES).source == "last_line"


@pytest.mark.parametrize("options,letters", [
    ([{"A": "x"}, {"B": "y"}], ("A", "B")), ({"a": "x", "b": "y", "c": "z"}, ("A", "B", "C")),
    (["x", "y", "z"], ("A", "B", "C")), ([{"A": "x"}, {"B": None}, {"C": "z"}], ("A", "C")),
    (None, ("A", "B", "C", "D")),
])
def test_options_come_in_gym_object_and_list_shapes(options, letters) -> None:
    assert parse_choices(options).letters == letters


@pytest.mark.parametrize("options", [[], [{"AB": "x"}], "A: x", [1, {"A": "x"}], [{"A": None}]])
def test_unusable_options_are_rejected(options) -> None:
    with pytest.raises(BadChoices):
        parse_choices(options)


@pytest.mark.parametrize("answer,letter", [("C", "C"), (" c ", "C"), ("(C)", "C"), ("C.", "C"), (2, "C"),
                                           ("Triangle", "C"), ("triangle", "C")])
def test_the_gold_is_a_letter_an_index_or_an_option_text(answer, letter) -> None:
    assert gold_letter(answer, CHOICES) == letter


@pytest.mark.parametrize("answer", ["E", 4, -1, True, "", "Pentagon", None])
def test_a_gold_outside_the_options_is_rejected(answer) -> None:
    with pytest.raises(BadChoices):
        gold_letter(answer, CHOICES)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_reading_never_raises_on_arbitrary_text(text: str) -> None:
    read = read_choice(text, CHOICES)
    assert read.letter is None or read.letter in CHOICES.letters


@settings(max_examples=200, deadline=None)
@given(st.sampled_from("ABCD"), st.sampled_from("ABCD"),
       st.sampled_from([" or ", ", ", "/", " and ", " | "]), st.sampled_from(["Answer: ", "The answer is ", ""]))
def test_two_distinct_listed_letters_never_read_as_one(first: str, second: str, separator: str, lead: str) -> None:
    read = read_choice(f"{lead}{first}{separator}{second}", CHOICES)
    if first != second:
        assert read.letter is None and set(read.hedge) == {first, second}
    else:
        assert read.hedge == () and read.letter in (first, None)


def test_without_options_the_default_letters_are_the_choices() -> None:
    assert read_choice("Answer: J", Choices(tuple("ABCDEFGHIJ"))).letter == "J"
