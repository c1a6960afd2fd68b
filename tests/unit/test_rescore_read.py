"""``read_scored`` reads every line as the stdlib reads it: the short path it takes for lines of the common
shape and the general one it takes for the rest agree with ``Rollout.from_dict(json.loads(line))`` and the old
verdict's own reading, on lines chosen to sit just inside and just outside the short path."""

import json
import math

import pytest

from reward_core.contract import Rollout, RolloutStatus
from reward_service.jsonl_io import JsonlError
from reward_service.rescore import OldResult, read_scored

VERSION = "f85ce21a814f2d63"
BASE = {"id": "r1", "task": "gsm8k", "completion": "#### 72", "reference": {"answer": "72"}, "group_id": "g0",
        "score": 1.0, "status": "OK", "scored": True, "components": {"gsm8k": 1.0}, "extracted": "72", "error": "",
        "explanation": "x", "elapsed_ms": 0.25, "verifier_version": VERSION}
VARIANTS = [
    {},  # the common shape: the short path
    {"score": 0.0, "status": "NO_ANSWER"},
    {"score": -0.0},  # read as 0.0, as float(score or 0.0) reads it
    {"score": 1},  # an integer score: the general path
    {"score": "0.5"},
    {"score": None},
    {"score": 1e300},
    {"status": "ok"},  # other spellings of a status
    {"status": "ROLLOUT_STATUS_NO_ANSWER"},
    {"verifier_version": None},
    {"verifier_version": 12},
    {"group_id": ""},
    {"group_id": 5},
    {"prompt": "Ünï? null", "completion": "ответ 😀 \\boxed{2}"},
    {"prompt": 3},
    {"metadata": {"n": 3, "source": "x"}},
    {"metadata": {}},
    {"id": 7},
    {"reference": "72"},  # a bare gold
    {"reference": {"answer": 51090942171709440000}},  # past 64 bits: kept exact
    {"reference": {"answer": "1", "cases": [[1, 2], {"x": 98765432109876543210}]}},
    {"reference": {"answer": "1", "tolerance": 1e-6}},
    {"reference": None},
    {"components": {"gsm8k": 51090942171709440000}},  # a key read_scored does not read
]


def expected(line: str, default_task: str = "") -> tuple[Rollout, OldResult]:
    """What the stdlib reads: the rollout ``from_dict`` makes, and the old verdict's fields."""
    data = json.loads(line)
    rollout = Rollout.from_dict(data, default_task=default_task)
    name = data["status"]
    status = RolloutStatus[name] if name in RolloutStatus.__members__ else RolloutStatus.from_name(str(name))
    return rollout, OldResult(rollout.id, rollout.task, status, float(data.get("score") or 0.0),
                              str(data.get("verifier_version") or ""))


@pytest.mark.parametrize("compact", [True, False], ids=["compact", "spaced"])
def test_each_line_reads_as_the_stdlib_reads_it(tmp_path, compact):
    rows = [{**BASE, **variant, "id": variant.get("id", f"r{i}")} for i, variant in enumerate(VARIANTS)]
    dump = (lambda row: json.dumps(row, ensure_ascii=False, separators=(",", ":"))) if compact else json.dumps
    text = "".join(dump(row) + "\n" + ("\n  \n" if i == 3 else "") for i, row in enumerate(rows))
    path = tmp_path / "old.jsonl"
    path.write_text(text + '{"id": "nan", "task": "gsm8k", "completion": "a \\ud800 b", "reference": {}, '
                    '"score": NaN, "status": "OK"}\n', encoding="utf-8")
    got = read_scored(path)
    want = [expected(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(got) == len(want) == len(rows) + 1
    for (rollout, old), (want_rollout, want_old) in zip(got, want):
        assert rollout == want_rollout and type(rollout.id) is str
        assert tuple(old[:3]) == tuple(want_old[:3]) and old.verifier_version == want_old.verifier_version
        assert repr(old.score) == repr(want_old.score)  # -0.0 read as 0.0, NaN as NaN
        assert repr(rollout.reference) == repr(want_rollout.reference)
    assert got[2][1].score == 0.0 and math.copysign(1.0, got[2][1].score) == 1.0
    assert got[19][0].reference == {"answer": 51090942171709440000} and type(got[19][0].reference["answer"]) is int


def test_a_default_task_fills_lines_without_one(tmp_path):
    path = tmp_path / "old.jsonl"
    row = {key: value for key, value in BASE.items() if key != "task"}
    path.write_text(json.dumps(row) + "\n")
    [(rollout, old)] = read_scored(path, default_task="math")
    assert rollout.task == old.task == "math"


@pytest.mark.parametrize(("bad", "message"), [
    ({"id": "r0"}, r"old.jsonl:2: duplicate id 'r0'"),  # the first line took the short path
    ({"status": None}, r"old.jsonl:2: unknown rollout status 'None'"),
    ({"status": "FINE"}, r"old.jsonl:2: unknown rollout status 'FINE'"),
    ({"score": "high"}, r"old.jsonl:2: could not convert string to float"),
    ({"completion": 5}, r"old.jsonl:2: rollout 'r1': 'completion' must be a string"),
    ({"id": ""}, r"old.jsonl:2: a results line must be a JSON object with an 'id'"),
])
def test_a_bad_line_is_named_as_the_general_path_names_it(tmp_path, bad, message):
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({**BASE, "id": "r0"}) + "\n" + json.dumps({**BASE, "id": "r1", **bad}) + "\n")
    with pytest.raises(JsonlError, match=message):
        read_scored(path)


def test_a_line_without_status_is_not_a_results_line(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({key: value for key, value in BASE.items() if key != "status"}) + "\n")
    with pytest.raises(JsonlError, match=r"old.jsonl:1: no 'status'"):
        read_scored(path)
