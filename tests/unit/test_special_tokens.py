"""Chat-template special tokens never change a math verdict."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.verifiers.math import grade, grade_numeric
from reward_service.verifiers.math.special_tokens import DEFAULT_SPECIAL_TOKENS, _token_pattern, strip_special_tokens


@pytest.mark.parametrize("completion", [
    "#### 624<|im_end|>",
    "The answer is 624<|eot_id|>",
    "So we get $\\boxed{624}$.</s>",
    "624<｜end▁of▁sentence｜>",
    "Final answer: 624<end_of_turn><pad><pad>",
    "<|im_start|>assistant\nThe total is 624.<|im_end|>\n<|endoftext|>",
    "<|start_header_id|>assistant<|end_header_id|>\n\n#### 624<|eot_id|>",
])
def test_a_trailing_or_leading_special_token_is_ignored(completion: str) -> None:
    assert grade(completion, "624").correct
    assert grade_numeric(completion, "624").correct


def test_a_token_between_digits_does_not_glue_them() -> None:
    assert not grade("The answer is 1<|eot_id|>2", "12").correct


def test_tokens_are_replaced_by_a_line_break() -> None:
    assert strip_special_tokens("a<|im_end|>b") == "a\nb"


def test_the_literal_token_list_is_configurable() -> None:
    assert strip_special_tokens("5 <END>", ("<END>",)) == "5"
    assert strip_special_tokens("5 <END>", ()) == "5 <END>"


def test_special_tokens_in_the_gold_are_stripped_too() -> None:
    assert grade("\\boxed{7}", "7<|im_end|>").correct


def test_text_without_tokens_is_unchanged() -> None:
    text = "if a < b and [1, 2] then 3 > 2"
    assert strip_special_tokens(text) == text


#: Pieces texts are drawn from: every default token, near misses, the characters tokens begin with.
_PIECES = (*DEFAULT_SPECIAL_TOKENS, "<|", "|>", "<｜", "｜>", "<<", ">>", "[", "]", "<", "assistant", " user",
           "<|im_start|>", "<start_of_turn>model", "<|start_header_id|>", "<|x y|>", "<|" + "a" * 70 + "|>",
           "<SYS>", "[PAD", "a", " ", "\n", "12", "*", "END", "##")


def by_regex(text: str, tokens: tuple[str, ...]) -> str:
    """The definition: one ``re.sub`` pass of the token pattern over the whole text, then trimmed."""
    return _token_pattern(tokens)[0].sub("\n", text).strip()


@given(st.lists(st.sampled_from(_PIECES), max_size=40), st.sampled_from([DEFAULT_SPECIAL_TOKENS, ("END", "##"), ()]))
@settings(max_examples=400, deadline=None)
def test_trying_only_where_a_token_can_begin_finds_what_the_regex_finds(pieces: list[str],
                                                                         tokens: tuple[str, ...]) -> None:
    text = "".join(pieces)
    expected = by_regex(text, tokens) if any(c in text for c in ("<", "[", *(t[0] for t in tokens))) else text
    assert strip_special_tokens(text, tokens) == expected


def test_many_openings_are_stripped_as_a_few_are() -> None:
    text = "[1] " * 40 + "12<|im_end|>" + " <a>" * 40
    assert strip_special_tokens(text) == by_regex(text, DEFAULT_SPECIAL_TOKENS)
    assert "<|im_end|>" not in strip_special_tokens(text)


def test_a_configured_token_without_a_bracket_is_stripped() -> None:
    assert strip_special_tokens("5 END", ("END",)) == "5"
