"""Finding math-delimited spans: the places a final answer without \\boxed lives."""

from __future__ import annotations

from reward_service.verifiers.math.math_spans import mask_spans, math_spans


def _contents(text: str) -> list[str]:
    return [s.content for s in math_spans(text)]


def test_all_four_delimiter_kinds_are_found_in_order() -> None:
    assert _contents(r"$a$ then $$b$$ then \(c\) then \[d\]") == ["a", "b", "c", "d"]


def test_an_escaped_dollar_is_currency_not_a_delimiter() -> None:
    assert _contents(r"It costs \$5 and $x$ more") == ["x"]


def test_an_unclosed_inline_dollar_ends_at_the_line_break() -> None:
    assert _contents("It costs $5.\nSo $x = 2$.") == ["x = 2"]


def test_display_math_may_span_lines() -> None:
    assert _contents("Thus\n\\[\n 9 \n\\]") == ["9"]


def test_empty_spans_are_skipped() -> None:
    assert _contents("$$ $$ and $1$") == ["1"]


def test_masking_keeps_positions_and_hides_the_inside() -> None:
    text = "so $(7, 1)$ ok"
    masked = mask_spans(text, math_spans(text))
    assert len(masked) == len(text) and "7" not in masked and masked.endswith(" ok")
