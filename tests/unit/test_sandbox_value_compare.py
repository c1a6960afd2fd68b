"""FUNCTION_CALL comparison: JSON expected vs a decoded return value."""

from __future__ import annotations

import pytest

from sandbox.value_compare import describe_mismatch, values_equal


@pytest.mark.parametrize("expected, actual", [
    (None, None), (True, True), (3, 3), (3, 3.0), (2.5, 2.5), ("a", "a"),
    ([1, 2], [1, 2]), ([1, 2], (1, 2)), ([[1], [2]], ((1,), [2])),
    ({"a": 1}, {"a": 1}), ({"1": "x"}, {1: "x"}), ({"true": 1, "null": 2}, {True: 1, None: 2}),
    (float("nan"), float("nan")), (float("inf"), float("inf")),
    ((1, 2), [1, 2]), ({1, 2}, {2, 1}),
])
def test_equal(expected, actual):
    assert values_equal(expected, actual)


@pytest.mark.parametrize("expected, actual", [
    (None, 0), (None, []), (True, 1), (1, True), (0, False), (3, "3"), ("3", 3), ([1, 2], [2, 1]),
    ([1, 2], {1, 2}), ([1], [1, 2]), ({"a": 1}, {"a": 1, "b": 2}), ({"1": 1}, {1: 1, "1": 1}),
    ({"a": 1}, [("a", 1)]), (2.5, 2.6), ([1], "1"), ({1, 2}, frozenset({1, 2})), ("a", b"a"),
    (float("inf"), float("-inf")), ({"a": 1}, {object(): 1}),
])
def test_not_equal(expected, actual):
    assert not values_equal(expected, actual)


def test_float_tolerance_is_absolute_below_one_and_relative_above():
    assert values_equal(0.3, 0.1 + 0.2, tolerance=1e-9)
    assert values_equal(1e9, 1e9 + 0.5, tolerance=1e-9)
    assert not values_equal(1e9, 1e9 + 5, tolerance=1e-9)
    assert values_equal([1.0, {"x": 2.0}], (1.0000001, {"x": 2.0000001}), tolerance=1e-6)
    assert not values_equal(0.1 + 0.2, 0.3)          # exact without a tolerance


def test_tolerance_does_not_make_bools_numbers():
    assert not values_equal(1.0, True, tolerance=0.5)


def test_mismatch_description_is_short():
    text = describe_mismatch([1] * 1000, None)
    assert text.startswith("expected [1, 1") and text.endswith("got None") and len(text) < 300
