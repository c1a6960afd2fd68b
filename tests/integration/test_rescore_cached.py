"""``rescore`` answered from the reward cache without result objects writes the same bytes as the engine's own
path (every rollout submitted and answered from the cache), on a file of edge cases: non-ASCII text, a text
holding ``null`` (written by the stdlib), integers past 64 bits, NaN, prompts, metadata, groups, unscored
rows (unknown task, missing reference field), a groupwise task, blank lines, duplicate completions."""

import argparse
import contextlib
import io
import json
import re

import pytest

from reward_core.contract import RolloutStatus
from reward_service.cli import main
from reward_service.jsonl_io import JsonlError
from reward_service.rescore import rescore
from reward_service.router.config import ScorerConfig
from reward_service.router.scoring import Scorer

COMMON = ["--workers", "1", "--quiet"]
ROLLOUTS = [
    {"id": "right", "task": "gsm8k", "completion": "#### 72", "reference": {"answer": "72"}},
    {"id": "wrong", "task": "gsm8k", "completion": "#### 5", "reference": {"answer": "72"}, "group_id": "g1"},
    {"id": "none", "task": "gsm8k", "completion": "no number here", "reference": {"answer": "72"}},
    {"id": "uni", "task": "math", "completion": "ответ: \\boxed{\\frac{1}{2}} 😀", "prompt": "Ünï? null",
     "reference": {"answer": "1/2"}, "metadata": {"source": "null", "n": 3}, "group_id": "g2"},
    {"id": "steps", "task": "math", "completion": "Step 1: 1+1=2.\n\nStep 2: so \\boxed{2}",
     "reference": {"answer": "2"}},
    {"id": "big", "task": "gsm8k", "completion": "#### 51090942171709440000",
     "reference": {"answer": 51090942171709440000}},
    {"id": "nan", "task": "gsm8k", "completion": "#### 3", "reference": {"answer": "3", "tolerance": float("nan")}},
    {"id": "same-as-right", "task": "gsm8k", "completion": "#### 72", "reference": {"answer": "72"}},
    {"id": 7, "task": "gsm8k", "completion": "#### 7", "reference": "7"},  # an integer id, a bare gold
    {"id": "unknown", "task": "no_such_task", "completion": "x", "reference": {"answer": "1"}},
    {"id": "no-gold", "task": "math", "completion": "\\boxed{1}", "reference": {}},
    {"id": "grouped-1", "task": "kimi_length", "completion": "\\boxed{4}", "reference": {"answer": "4"},
     "group_id": "k"},
    {"id": "grouped-2", "task": "kimi_length", "completion": "so \\boxed{4} it is", "reference": {"answer": "4"},
     "group_id": "k"},
]


def args_for(in_path, out_path) -> argparse.Namespace:
    return argparse.Namespace(in_path=str(in_path), out_path=str(out_path), rollouts=None, task="", force=False,
                              epsilon=1e-6, examples=3, fail_on_flip=False, quiet=True)


def engine_path(scorer: Scorer):
    """The engine's own path for every rollout (what rescore did before it asked the cache first)."""
    def score(rollouts, args, bar):
        for start in range(0, len(rollouts), 256):
            yield from scorer.score(rollouts[start:start + 256]).results
    return score


def quietly(fn, *args) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return fn(*args)


@pytest.fixture
def stored(tmp_path):
    """ROLLOUTS scored with their inputs kept (blank lines between some), and the cache file a cold rescore
    of them filled."""
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps(r, ensure_ascii=i % 2 == 0) + "\n" + ("\n" if i == 3 else "")
                                for i, r in enumerate(ROLLOUTS)), encoding="utf-8")
    old = tmp_path / "old.jsonl"
    assert main(["score", "--in", str(rollouts), "--out", str(old), "--keep-inputs", *COMMON]) == 0
    with old.open("a") as f:
        f.write("\n  \n")
    return old


def test_the_cache_path_writes_the_bytes_the_engine_path_writes(stored, tmp_path):
    db = tmp_path / "cache.sqlite"
    cold, by_engine, by_cache = tmp_path / "cold.jsonl", tmp_path / "engine.jsonl", tmp_path / "cache.jsonl"
    with Scorer(ScorerConfig(workers=1, reward_cache=str(db))) as scorer:
        assert quietly(rescore, args_for(stored, cold), engine_path(scorer), scorer) == 0
        assert scorer.cache.stats().hits == 0  # the cold pass verified everything
        assert quietly(rescore, args_for(stored, by_engine), engine_path(scorer)) == 0
        hits = scorer.cache.stats().hits
        assert quietly(rescore, args_for(stored, by_cache), engine_path(scorer), scorer) == 0
        # every scored rollout of a cached task without a group stage: 9 (unknown, unscored, groupwise: scored)
        assert scorer.cache.stats().hits - hits == 9
    elapsed = re.compile(rb'"elapsed_ms": ?[0-9.e+-]+')
    verified = b'"task":"kimi_length"'  # a groupwise task: verified again each pass, its elapsed time varies
    assert [elapsed.sub(b"", line) if verified in line else line for line in by_cache.read_bytes().splitlines()] \
        == [elapsed.sub(b"", line) if verified in line else line for line in by_engine.read_bytes().splitlines()]
    rows = [json.loads(line) for line in by_cache.read_text(encoding="utf-8").splitlines()]
    assert [row["id"] for row in rows] == [str(r["id"]) for r in ROLLOUTS]  # none lost, none reordered
    statuses = {row["id"]: row["status"] for row in rows}
    assert statuses["unknown"] == RolloutStatus.UNKNOWN_TASK.name
    assert statuses["no-gold"] == RolloutStatus.INVALID_REFERENCE.name
    assert statuses["none"] == RolloutStatus.NO_ANSWER.name
    assert rows[5]["reference"] == {"answer": 51090942171709440000}
    assert b"NaN" in by_cache.read_bytes() and "ответ" in by_cache.read_text(encoding="utf-8")
    # the cold pass wrote the same lines, the elapsed time of what it verified aside
    assert elapsed.sub(b"", cold.read_bytes()) == elapsed.sub(b"", by_cache.read_bytes())


def test_a_warm_cli_rescore_asks_the_cache_file_and_verifies_nothing_cached(stored, tmp_path):
    cache = ["--reward-cache", str(tmp_path / "cache.sqlite")]
    cold, warm = tmp_path / "cold.jsonl", tmp_path / "warm.jsonl"
    assert main(["rescore", "--in", str(stored), "--out", str(cold), *cache, *COMMON]) == 0
    assert main(["rescore", "--in", str(stored), "--out", str(warm), *cache, *COMMON]) == 0
    rows = {row["id"]: row for row in map(json.loads, warm.read_text(encoding="utf-8").splitlines())}
    cached = [rid for rid, row in rows.items() if row["status"] in ("OK", "NO_ANSWER") and row["task"] != "kimi_length"]
    assert len(cached) == 9 and all(rows[rid]["elapsed_ms"] == 0 for rid in cached)


def test_a_bad_line_stops_the_cache_path_before_anything_is_written(stored, tmp_path):
    lines = stored.read_text(encoding="utf-8").splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines[:2]) + '{"task": "gsm8k", "completion": "no id"}\n' + "".join(lines[2:]),
                      encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with Scorer(ScorerConfig(workers=1)) as scorer, pytest.raises(JsonlError, match=r"broken.jsonl:3: .*'id'"):
        quietly(rescore, args_for(broken, out), engine_path(scorer), scorer)
    assert not out.exists()
