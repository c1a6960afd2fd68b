"""``rescore`` of a file read by worker processes (``router/rows_from_cache.py``) writes the bytes, prints the
report and refuses what one process does: on a file of hits and misses, several tasks, non-ASCII text, a text
holding ``null``, integers past 64 bits, NaN, prompts, metadata, groups, unscored and groupwise rows, blank
lines; a bad line or an id seen twice is named as one process names it; a small file is read in one process."""

import argparse
import contextlib
import io
import json
import re
import shutil
import sqlite3

import pytest

from reward_service.cli import main
from reward_service.jsonl_io import JsonlError
from reward_service.rescore import MixedVersions, rescore
from reward_service.router import rows_from_cache
from reward_service.router.config import ScorerConfig
from reward_service.router.rows_from_cache import scan_file, split_ranges
from reward_service.router.scoring import Scorer

ONE_PROCESS = 2**62  # parallel_min_bytes: no file is that large
ROLLOUTS = [
    {"id": "right", "task": "gsm8k", "completion": "#### 72", "reference": {"answer": "72"}, "group_id": "g1"},
    {"id": "wrong", "task": "gsm8k", "completion": "#### 5", "reference": {"answer": "72"}, "group_id": "g1"},
    {"id": "none", "task": "gsm8k", "completion": "no number here", "reference": {"answer": "72"}},
    {"id": "uni", "task": "math", "completion": "ответ: \\boxed{\\frac{1}{2}} 😀", "reference": {"answer": "1/2"}},
    {"id": "uni-prompt", "task": "math", "completion": "\\boxed{2}", "prompt": "Ünï? null",
     "reference": {"answer": "2"}, "metadata": {"source": "null", "n": 3}, "group_id": "g2"},
    {"id": "null-text", "task": "math", "completion": "null, so \\boxed{3}", "reference": {"answer": "3"}},
    {"id": "steps", "task": "math", "completion": "Step 1: 1+1=2.\n\nStep 2: so \\boxed{2}",
     "reference": {"answer": "2"}},
    {"id": "big", "task": "gsm8k", "completion": "#### 51090942171709440000",
     "reference": {"answer": 51090942171709440000}},
    {"id": "nan", "task": "gsm8k", "completion": "#### 3", "reference": {"answer": "3", "tolerance": float("nan")}},
    {"id": 7, "task": "gsm8k", "completion": "#### 7", "reference": "7"},  # an integer id, a bare gold
    {"id": "unknown", "task": "no_such_task", "completion": "x", "reference": {"answer": "1"}},
    {"id": "no-gold", "task": "math", "completion": "\\boxed{1}", "reference": {}},
    {"id": "grouped-1", "task": "kimi_length", "completion": "\\boxed{4}", "reference": {"answer": "4"},
     "group_id": "k"},
    {"id": "grouped-2", "task": "kimi_length", "completion": "so \\boxed{4} it is", "reference": {"answer": "4"},
     "group_id": "k"},
] + [{"id": f"m{i}", "task": "math" if i % 3 else "gsm8k", "completion": f"so \\boxed{{{i}}} and #### {i}",
      "reference": {"answer": str(i % 4)}, "group_id": f"q{i // 4}"} for i in range(24)]
#: Lines whose completion is edited after the cache was filled: the workers leave them to the parent, which scores
#: them (the rest of the file is answered from the cache).
EDITED = {"wrong", "m5", "m17"}


def args_for(in_path, out_path, force=False, task="") -> argparse.Namespace:
    return argparse.Namespace(in_path=str(in_path), out_path=str(out_path), rollouts=None, task=task, force=force,
                              epsilon=1e-6, examples=2, fail_on_flip=False, quiet=True)


def engine_path(scorer: Scorer):
    def score(rollouts, args, bar):
        for start in range(0, len(rollouts), 256):
            yield from scorer.score(rollouts[start:start + 256]).results
    return score


class Recording:
    """The engine as ``rescore`` sees it, noting whether workers answered rows (``scan_rows``)."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self.scanned = 0
        self.placed: list[bool] = []

    def answer_from_cache(self, rollouts):
        return self.scorer.answer_from_cache(rollouts)

    def answer_rows(self, rows):
        return self.scorer.answer_rows(rows)

    def scan_rows(self, path, default_task, parts, out_dir):
        scans = self.scorer.scan_rows(path, default_task, parts, out_dir)
        self.scanned += sum(len(scan.ids) for scan in scans or ())
        self.placed = [scan.placed for scan in scans or ()]
        return scans


def run(fn, *args, **kwargs) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = fn(*args, **kwargs)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """(the old results file, the reward cache file a cold rescore of it filled), with some lines then edited
    (completions, so not in the cache; scores, so they flip) and blank lines between some."""
    tmp = tmp_path_factory.mktemp("parallel")
    rollouts = tmp / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps(r, ensure_ascii=i % 2 == 0) + "\n" for i, r in enumerate(ROLLOUTS)),
                        encoding="utf-8")
    old = tmp / "old.jsonl"
    assert main(["score", "--in", str(rollouts), "--out", str(old), "--keep-inputs", "--workers", "1", "--quiet"]) == 0
    db = tmp / "cache.sqlite"
    with Scorer(ScorerConfig(workers=1, reward_cache=str(db))) as scorer:
        assert run(rescore, args_for(old, tmp / "cold.jsonl"), engine_path(scorer), scorer)[0] == 0
        scorer.cache.flush()
    lines = []
    for n, line in enumerate(old.read_text(encoding="utf-8").splitlines(keepends=True)):
        data = json.loads(line)
        if data["id"] in EDITED:
            data["completion"] += " (edited)"
        if n % 5 == 1:  # an old verdict the cache now contradicts: a flip, in file order in the report
            data["score"] = 1.0 - data["score"]
        lines.append(json.dumps(data, ensure_ascii=False) + "\n" + ("\n" if n % 9 == 4 else ""))
    old.write_text("".join(lines), encoding="utf-8")
    return old, db


def copy_of(db, tmp_path, name):
    """A copy of the cache file, so that what one run stores in it is not there for the next."""
    copy = tmp_path / f"{name}.sqlite"
    shutil.copyfile(db, copy)
    return copy


def timeless(data: bytes | None) -> bytes | None:
    """The lines without the time a verification took (a rollout verified again takes its own)."""
    return re.sub(rb'"elapsed_ms":[0-9.e+-]+', b'"elapsed_ms":T', data) if data is not None else None


def both_ways(old_path, db, tmp_path, force=False, placed=None, task=""):
    """(exit code, stdout, output bytes, rows the workers answered) of one process and of three workers, each
    on a new engine over a copy of ``db``; ``placed`` (a list) gets which workers' outputs were placed."""
    results = []
    for name, min_bytes in (("one", ONE_PROCESS), ("workers", 0)):
        out = tmp_path / f"{name}.jsonl"
        with Scorer(ScorerConfig(workers=1, reward_cache=str(copy_of(db, tmp_path, name)))) as scorer:
            engine = Recording(scorer)
            code, report = run(rescore, args_for(old_path, out, force, task), engine_path(scorer), engine,
                               parallel_min_bytes=min_bytes, read_workers=3)
        results.append((code, report, timeless(out.read_bytes()) if out.exists() else None, engine.scanned))
        if placed is not None and min_bytes == 0:
            placed[:] = engine.placed
    return results


#: Lines every worker answers (a task of the plan, a reference it takes, an outcome in the cache file).
ANSWERED = {"right", "none", "uni", "null-text", "steps"} | {f"m{i}" for i in range(24)}


def answered_lines(old) -> list[bytes]:
    return [line for line in old.read_bytes().splitlines(keepends=True)
            if line.strip() and json.loads(line)["id"] in ANSWERED - EDITED]


def test_workers_write_the_bytes_and_report_one_process_writes(stored, tmp_path):
    old, db = stored
    (code_one, report_one, bytes_one, scanned_one), (code_par, report_par, bytes_par, scanned_par) = \
        both_ways(old, db, tmp_path)
    assert scanned_one == 0 and scanned_par > len(ROLLOUTS) // 2  # the workers answered most lines
    assert bytes_par == bytes_one
    assert report_par == report_one and code_par == code_one == 0
    assert "changed" in report_one and "(e.g." in report_one  # flips, with examples in file order
    assert len(bytes_one.splitlines()) == len(ROLLOUTS)


def test_a_small_file_is_read_in_one_process(stored, tmp_path):
    old, db = stored
    with Scorer(ScorerConfig(workers=1, reward_cache=str(db))) as scorer:
        engine = Recording(scorer)
        assert run(rescore, args_for(old, tmp_path / "out.jsonl"), engine_path(scorer), engine)[0] == 0
    assert engine.scanned == 0
    assert old.stat().st_size < 2**20


def test_a_bad_line_is_named_as_one_process_names_it(stored, tmp_path):
    old, db = stored
    lines = old.read_bytes().splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines[:-3]) + b'{"id": "x", "task": "math"\n' + b"".join(lines[-3:]))
    errors = []
    for min_bytes in (ONE_PROCESS, 0):
        with Scorer(ScorerConfig(workers=1, reward_cache=str(db))) as scorer:
            with pytest.raises(JsonlError) as caught:
                run(rescore, args_for(broken, tmp_path / "out.jsonl"), engine_path(scorer), scorer,
                    parallel_min_bytes=min_bytes, read_workers=3)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and f"broken.jsonl:{len(lines) - 2}:" in errors[0]
    assert not (tmp_path / "out.jsonl").exists()
    assert not list(tmp_path.glob(".*.part"))  # the workers' part files are gone


def test_an_id_seen_twice_in_two_ranges_is_named_as_one_process_names_it(stored, tmp_path):
    old, db = stored
    lines = old.read_bytes().splitlines(keepends=True)
    twice = tmp_path / "twice.jsonl"
    twice.write_bytes(b"".join(lines) + lines[0])  # the first line again, in the last range
    errors = []
    for min_bytes in (ONE_PROCESS, 0):
        with Scorer(ScorerConfig(workers=1, reward_cache=str(db))) as scorer:
            with pytest.raises(JsonlError) as caught:
                run(rescore, args_for(twice, tmp_path / "out.jsonl"), engine_path(scorer), scorer,
                    parallel_min_bytes=min_bytes, read_workers=3)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "duplicate id" in errors[0]


def test_old_lines_of_two_versions_are_refused_by_workers_too(stored, tmp_path):
    old, db = stored
    lines = old.read_text(encoding="utf-8").splitlines(keepends=True)
    last = json.loads(lines[-1])
    last["verifier_version"] = "0123456789abcdef"
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(lines[:-1]) + json.dumps(last) + "\n", encoding="utf-8")
    for min_bytes in (ONE_PROCESS, 0):
        with Scorer(ScorerConfig(workers=1, reward_cache=str(db))) as scorer:
            with pytest.raises(MixedVersions, match=last["task"]):
                run(rescore, args_for(mixed, tmp_path / "out.jsonl"), engine_path(scorer), scorer,
                    parallel_min_bytes=min_bytes, read_workers=3)
    assert not (tmp_path / "out.jsonl").exists()
    (_, report_one, bytes_one, _), (_, report_par, bytes_par, _) = both_ways(mixed, db, tmp_path, force=True)
    assert bytes_par == bytes_one and report_par == report_one


def test_ranges_cover_the_file_and_start_at_line_starts(tmp_path):
    path = tmp_path / "lines.jsonl"
    data = b"".join(b"x" * (n % 7) + b"\n" for n in range(50)) + b"last without a newline"
    path.write_bytes(data)
    for parts in (1, 2, 3, 7, 200):
        ranges = split_ranges(path, parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data) and len(ranges) <= parts
        assert all(end == start for (_, end), (start, _) in zip(ranges, ranges[1:]))
        assert all(data[start - 1:start] == b"\n" for start, _ in ranges[1:])


def test_workers_that_cannot_open_the_cache_file_leave_every_line_to_the_parent(stored, tmp_path):
    old, _ = stored
    ranges = split_ranges(old, 3)
    plan = {"math": ("v", ("answer",)), "gsm8k": ("v", ("answer",))}
    assert scan_file(old, ranges, "", str(tmp_path / "missing.sqlite"), plan, tmp_path) is None
    assert not list(tmp_path.glob(".*.part"))


def test_outcomes_without_an_answer_of_this_code_are_decoded_by_the_workers(stored, tmp_path):
    old, db = stored
    older = tmp_path / "older.sqlite"
    shutil.copyfile(db, older)
    with sqlite3.connect(older) as conn:  # rows of an earlier build (no answer), or answers other code made
        conn.execute("UPDATE rewards SET answer = NULL WHERE rowid % 2 = 0")
        conn.execute("UPDATE rewards SET answer = ? WHERE rowid % 2 = 1",
                     (b'answer/0000000000000000\t{"score":9.0,"status":"OK"}',))
    (_, report_one, bytes_one, _), (_, report_par, bytes_par, scanned) = both_ways(old, older, tmp_path)
    assert scanned > len(ROLLOUTS) // 2
    assert bytes_par == bytes_one and report_par == report_one


def test_later_workers_write_in_place_when_every_line_before_theirs_is_answered(stored, tmp_path, monkeypatch):
    monkeypatch.setattr(rows_from_cache, "RANGES_PER_WORKER", 1)
    old, db = stored
    answered = tmp_path / "answered.jsonl"
    answered.write_bytes(b"".join(answered_lines(old)))
    placed: list[bool] = []
    (_, report_one, bytes_one, _), (_, report_par, bytes_par, scanned) = both_ways(answered, db, tmp_path,
                                                                                   placed=placed)
    assert placed == [False, True, True] and scanned == len(ANSWERED - EDITED)
    assert bytes_par == bytes_one and report_par == report_one
    assert not list(tmp_path.glob(".*.part"))


def test_a_line_left_to_the_parent_ends_the_placing(stored, tmp_path, monkeypatch):
    monkeypatch.setattr(rows_from_cache, "RANGES_PER_WORKER", 1)
    old, db = stored
    lines = answered_lines(old)
    edited = json.loads(lines[-1])
    edited["completion"] += " (edited)"  # not in the cache: the last worker leaves it to the parent
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"".join(lines[:-1]) + json.dumps(edited).encode() + b"\n" + lines[0].replace(b'"right"',
                                                                                                   b'"right2"'))
    placed: list[bool] = []
    (_, report_one, bytes_one, _), (_, report_par, bytes_par, _) = both_ways(mixed, db, tmp_path, placed=placed)
    assert placed == [False, True, False]
    assert bytes_par == bytes_one and report_par == report_one


def test_a_worker_holding_more_than_it_may_writes_its_own_part(stored, tmp_path, monkeypatch):
    monkeypatch.setattr(rows_from_cache, "RANGES_PER_WORKER", 1)
    old, db = stored
    answered = tmp_path / "answered.jsonl"
    answered.write_bytes(b"".join(answered_lines(old)))
    monkeypatch.setattr(rows_from_cache, "PLACE_BYTES", 1)
    placed: list[bool] = []
    (_, report_one, bytes_one, _), (_, report_par, bytes_par, _) = both_ways(answered, db, tmp_path, placed=placed)
    assert placed == [False, False, False]
    assert bytes_par == bytes_one and report_par == report_one


@pytest.mark.parametrize("per_worker", [2, 5])
def test_more_ranges_than_workers_are_taken_in_order_and_placed_one_after_another(stored, tmp_path, monkeypatch,
                                                                                  per_worker):
    monkeypatch.setattr(rows_from_cache, "RANGES_PER_WORKER", per_worker)
    old, db = stored
    answered = tmp_path / "answered.jsonl"
    lines = answered_lines(old)
    answered.write_bytes(b"".join(lines))
    placed: list[bool] = []
    (_, report_one, bytes_one, _), (_, report_par, bytes_par, scanned) = both_ways(answered, db, tmp_path,
                                                                                   placed=placed)
    assert len(placed) > 3 and placed == [False] + [True] * (len(placed) - 1)  # (3 workers, more ranges)
    assert scanned == len(ANSWERED - EDITED)
    assert bytes_par == bytes_one and report_par == report_one
    assert not list(tmp_path.glob(".*.part"))
    edited = json.loads(lines[len(lines) // 2])
    edited["completion"] += " (edited)"  # a line in the middle left to the parent: the ranges after keep their parts
    middle = tmp_path / "middle.jsonl"
    middle.write_bytes(b"".join(lines[:len(lines) // 2]) + json.dumps(edited).encode() + b"\n"
                       + b"".join(lines[len(lines) // 2 + 1:]))
    (_, report_one, bytes_one, _), (_, report_par, bytes_par, _) = both_ways(middle, db, tmp_path, placed=placed)
    assert placed[0] is False and True in placed and placed[-1] is False
    assert bytes_par == bytes_one and report_par == report_one


def test_lines_naming_no_task_are_answered_by_the_workers_under_the_default_task(stored, tmp_path):
    old, db = stored
    lines = []
    for line in answered_lines(old):  # (a line without a field of the common shape is read the longer way)
        data = json.loads(line)
        if data["task"] == "gsm8k":
            del data["task"]
        lines.append(json.dumps(data, ensure_ascii=False).encode() + b"\n")
    untasked = tmp_path / "untasked.jsonl"
    untasked.write_bytes(b"".join(lines))
    (code_one, report_one, bytes_one, _), (code_par, report_par, bytes_par, scanned) = \
        both_ways(untasked, db, tmp_path, task="gsm8k")
    assert b'"task":"gsm8k"' in bytes_one and scanned == len(lines)
    assert (code_par, report_par, bytes_par) == (code_one, report_one, bytes_one)
