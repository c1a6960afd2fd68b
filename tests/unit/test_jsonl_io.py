"""JSONL lines read and written with orjson hold exactly what the stdlib ``json`` reads and writes."""

from __future__ import annotations

import io
import json
import math

import pytest

from reward_core.contract import Rollout, RolloutResult, RolloutStatus, StepScore, canonical_json
from reward_service.jsonl_io import WRITE_LINES, atomic_text_file, dump_line, parse_line, write_lines, write_results

LINES = [
    '{"id": "a", "score": 1.0, "n": 3, "neg": -7, "f": 0.1, "tiny": 5e-324, "huge": 1.7976931348623157e308}',
    '{"text": "ответ \\u00bd \\ud83d\\ude00 é", "raw": "½ 😀", "esc": "a\\"b\\\\c\\n\\t"}',
    '{"big": 51090942171709440000, "edge": 18446744073709551616, "low": -9223372036854775809}',
    '{"u64": 18446744073709551615, "i64": -9223372036854775808, "float_big": 1e19}',
    '{"nan": NaN, "inf": Infinity, "ninf": -Infinity}',
    '{"lone": "\\ud800"}',
    '{"dup": 1, "dup": 2, "nested": {"a": [1, 2.5, {"b": null, "c": true}]}}',
    '[1, "two", 3.0]',
]


def same(a, b) -> bool:
    """Equal values of the same types (1 is not 1.0), NaN equal to NaN."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize("line", LINES)
def test_a_line_parses_to_what_json_loads_gives(line):
    assert same(parse_line(line.encode("utf-8")), json.loads(line))


def test_an_integer_past_64_bits_stays_an_exact_integer():
    value = parse_line(b'{"answer": 51090942171709440000}')["answer"]
    assert type(value) is int and value == 51090942171709440000


@pytest.mark.parametrize("line", [b'{"a": ', b'{"a": 1} x', b"{'a': 1}", b'{"a": nan}'])
def test_a_malformed_line_raises_the_stdlib_error(line):
    with pytest.raises(json.JSONDecodeError):
        parse_line(line)


@pytest.mark.parametrize("line", LINES[:5] + LINES[6:])
def test_a_written_line_reads_back_to_the_same_values(line):
    value = json.loads(line)
    written = dump_line(value)
    assert written.endswith(b"\n") and same(json.loads(written), value)


def test_nan_and_infinities_are_written_as_json_writes_them_not_as_null():
    written = json.loads(dump_line({"a": math.nan, "b": math.inf, "c": None}))
    assert math.isnan(written["a"]) and written["b"] == math.inf and written["c"] is None


def test_a_lone_surrogate_fails_to_write_as_before():
    with pytest.raises(UnicodeEncodeError):
        dump_line({"a": "\ud800"})


ROLLOUTS = [Rollout("r1", "math", "so \\boxed{½} 😀", {"answer": "1/2", "n": 3}, "Ünï?", {"k": "null"}, "g1"),
            Rollout("r2", "gsm8k", "#### 5", {"answer": 51090942171709440000})]
RESULTS = [RolloutResult("r1", RolloutStatus.OK, 1.0, {"math": 1.0}, "1/2", "", 0.1234567, "math", "g1",
                         (StepScore(0, 3, 0.5),), "extracted '1/2'", "v1"),
           RolloutResult("r2", RolloutStatus.TIMEOUT, 0.0, {}, "", "took too long", 0.0, "gsm8k", "", (), "", "")]


@pytest.mark.parametrize("out_kind", ["file", "stringio"])
def test_results_lines_hold_what_json_dumps_of_the_same_dict_held(out_kind, tmp_path):
    if out_kind == "file":
        path = tmp_path / "out.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            assert write_results(out, RESULTS, ROLLOUTS) == 2
        text = path.read_text(encoding="utf-8")
    else:
        out = io.StringIO()
        write_results(out, RESULTS, ROLLOUTS)
        text = out.getvalue()
    rows = [json.loads(line) for line in text.splitlines()]
    expected = [json.loads(json.dumps({**r.to_dict(), **res.to_dict()}, ensure_ascii=False))
                for r, res in zip(ROLLOUTS, RESULTS)]
    assert rows == expected and [list(row) for row in rows] == [list(row) for row in expected]
    assert type(rows[1]["reference"]["answer"]) is int


def test_equal_references_share_a_canonical_form_and_different_ones_never_do():
    assert canonical_json({"b": "1", "a": "é"}) == canonical_json({"a": "é", "b": "1"})
    forms = [canonical_json(v) for v in ({"x": math.nan}, {"x": None}, {"x": "null"}, {"x": 10**20},
                                         {"x": 1e20}, {"x": 1}, {"x": 1.0}, {"x": "1"}, {})]
    assert len(set(forms)) == len(forms)


def test_keys_make_only_their_values_exact():
    line = b'{"big": 51090942171709440000, "text": "x", "nested": {"n": [98765432109876543210]}}'
    assert parse_line(line, ("big",))["big"] == 51090942171709440000
    assert parse_line(line, ("nested",))["nested"] == {"n": [98765432109876543210]}
    assert type(parse_line(line, ("nested",))["nested"]["n"][0]) is int
    assert parse_line(line, ("text",))["text"] == "x"  # (the others may hold orjson's floats)


def test_many_blocks_are_written_in_order_and_a_failure_writes_nothing(tmp_path):
    lines = [dump_line({"i": i, "t": "é" * (i % 7)}) for i in range(3 * WRITE_LINES + 5)]
    path = tmp_path / "out.jsonl"
    with atomic_text_file(path) as out:
        assert write_lines(out, iter(lines)) == len(lines)
    assert path.read_bytes() == b"".join(lines)

    def failing():
        yield from lines[:2 * WRITE_LINES + 1]
        raise RuntimeError("the scorer went away")

    with pytest.raises(RuntimeError, match="went away"), atomic_text_file(tmp_path / "failed.jsonl") as out:
        write_lines(out, failing())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
    text = io.StringIO()  # a text file without a binary buffer under it: decoded, in order
    assert write_lines(text, iter(lines)) == len(lines) and text.getvalue().encode("utf-8") == b"".join(lines)
