"""Inequalities rewritten as intervals (pure string work)."""

from __future__ import annotations

import pytest

from reward_service.verifiers.math.relations import canonical_relations, relation_as_interval


def _interval(s: str) -> str:
    return relation_as_interval(canonical_relations(s))


@pytest.mark.parametrize("relation,interval", [
    ("x \\geq 7", "[7, \\infty)"),
    ("x >= 7", "[7, \\infty)"),
    ("3 > x", "(-\\infty, 3)"),
    ("x \\leqslant 5", "(-\\infty, 5]"),
    ("-2 < x < 6", "(-2, 6)"),
    ("5 \\ge x \\ge -1", "[-1, 5]"),
    ("x < 1 or x > 3", "(-\\infty, 1) \\cup (3, \\infty)"),
    ("\\mathbb{R}", "(-\\infty, \\infty)"),
    ("all real numbers", "(-\\infty, \\infty)"),
])
def test_one_variable_inequalities_become_intervals(relation: str, interval: str) -> None:
    assert _interval(relation) == interval


@pytest.mark.parametrize("text", ["x < y", "2 < 3", "1 < x > 2", "(1, 2)"])
def test_anything_else_is_left_unchanged(text: str) -> None:
    assert _interval(text) == canonical_relations(text)


def test_not_equal_spellings_are_one() -> None:
    assert canonical_relations("x != 3") == canonical_relations("x \\neq 3") == canonical_relations("x ≠ 3")
