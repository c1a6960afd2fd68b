"""The plain-data codec: exact round trips, strict decoding, no behaviour crosses."""

from __future__ import annotations

import math

import pytest

from sandbox.runtime import codec, framing
from sandbox.runtime.check_split import CheckCodeError, count_cases, plan_check


def roundtrip(value):
    return codec.decode(codec.loads_json(codec.dumps_json(codec.encode(value))))


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 2 ** 53 - 1, 2 ** 200, -(3 ** 300), 1.5, -0.0, "", "héllo\n\x00", b"\x00\xff",
    [1, [2, [3]]], (1, "a"), (), {"a": 1, 2: [3], (1, 2): None}, {1, 2}, frozenset({"x"}), complex(1, -2),
    {"nested": ({1}, [frozenset()], {"k": b""})},
])
def test_plain_values_round_trip_exactly(value):
    out = roundtrip(value)
    assert out == value and type(out) is type(value)


def test_non_finite_floats_round_trip():
    assert math.isnan(roundtrip(float("nan")))
    assert roundtrip(float("inf")) == float("inf") and roundtrip(float("-inf")) == float("-inf")


def test_tuple_and_list_stay_distinct():
    assert type(roundtrip((1,))) is tuple and type(roundtrip([1])) is list


def test_big_ints_travel_as_hex_beyond_the_decimal_digit_limit():
    n = 10 ** 5000
    assert codec.encode(n) == {"int": format(n, "x")} and roundtrip(n) == n


class Sneaky(int):
    def __eq__(self, other):
        return True


class AlwaysEqual:
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [Sneaky(3), AlwaysEqual(), [AlwaysEqual()], {"k": object()}, print,
                                   type("S", (str,), {})("x"), range(3)])
def test_subclasses_and_objects_are_unserializable(value):
    with pytest.raises(codec.Unserializable):
        codec.encode(value)


def test_cycles_are_unserializable():
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(codec.Unserializable):
        codec.encode(cyclic)


@pytest.mark.parametrize("obj", [
    {"tuple": [1], "set": [2]},            # two keys
    {"object": []},                        # unknown tag
    {"set": [[1]]},                        # unhashable element
    {"dict": [[[1], 2]]},                  # unhashable key
    {"dict": [[1]]},                       # not a pair
    {"int": "xyz"},                        # not hex
    {"int": 5},                            # wrong payload type
    {"float": "1.5"},                      # the float tag is only for non-finite values
    {"bytes": "***"},                      # not base64
    {"complex": [1]},                      # wrong arity
    {"complex": ["a", 1]},                 # not numbers
    float("inf"),                          # untagged non-finite float
    {"tuple": 1},                          # payload not a list
])
def test_strict_decoder_rejects_malformed_values(obj):
    with pytest.raises(codec.CodecError):
        codec.decode(obj)


def test_decoder_limits_depth():
    deep: object = 1
    for _ in range(codec.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(codec.CodecError):
        codec.decode(deep)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", "{", "1" * 5000, "[" * 100000 + "]" * 100000])
def test_json_parsing_is_strict(text):
    with pytest.raises(codec.CodecError):
        codec.loads_json(text)


def test_frames_are_length_prefixed_and_read_incrementally():
    data = framing.pack({"a": 1}) + framing.pack({"b": "x\ny"})
    reader = framing.FrameReader()
    out = []
    for i in range(len(data)):
        reader.feed(data[i:i + 1])
        frame = reader.pop()
        if frame is not None:
            out.append(frame)
    assert out == [{"a": 1}, {"b": "x\ny"}] and reader.pending == 0


def test_oversized_or_non_object_frames_are_rejected():
    reader = framing.FrameReader(max_len=10)
    with pytest.raises(framing.FrameError):
        reader.feed(framing.pack({"long": "x" * 100}))
    with pytest.raises(framing.FrameError):
        framing.unpack(b"[1, 2]")


CHECK = """
METADATA = {}

def check(candidate):
    assert True, "decoration"
    x = 3
    assert candidate(x) == 4
    for i in range(3):
        assert candidate(i) == i + 1
"""


def test_each_top_level_assert_statement_of_check_is_a_case():
    plan = plan_check(CHECK)
    assert plan.param == "candidate" and plan.n_cases == 2 == count_cases(CHECK)
    assert [s.is_case for s in plan.steps] == [False, False, True, True]
    assert plan.steps[2].source == "assert candidate(x) == 4"


def test_a_check_without_asserts_is_one_case():
    plan = plan_check("def check(f):\n    if f(1) != 2:\n        raise ValueError\n")
    assert plan.n_cases == 1 and plan.steps[0].source == "check(f)"


def test_a_check_whose_statements_cannot_stand_alone_is_one_case():
    assert count_cases("def check(c):\n    assert c(1)\n    return\n") == 1


@pytest.mark.parametrize("code", ["def check(:\n", "x = 1\n", "def check():\n    assert True\n"])
def test_unusable_check_code_is_rejected(code):
    with pytest.raises(CheckCodeError):
        plan_check(code)
