"""A warm ``rescore`` answers from the reward cache only what it verified before: a row whose completion or
reference was edited since is verified again, a changed verifier version answers nothing from the cache, and
the lines answered from it are the bytes the cold pass wrote (elapsed time aside)."""

import argparse
import contextlib
import io
import json
import re

from reward_service.rescore import rescore
from reward_service.router.config import ScorerConfig
from reward_service.router.rewards_config import RewardsConfig
from reward_service.router.scoring import Scorer

ROLLOUTS = [
    {"id": "fallback", "task": "gsm8k", "completion": "so in the end we get 72", "reference": {"answer": "72"}},
    {"id": "marked", "task": "gsm8k", "completion": "#### 72", "reference": {"answer": "72"}, "group_id": "g"},
    {"id": "wrong", "task": "gsm8k", "completion": "#### 5", "reference": {"answer": "72"}},
    {"id": "boxed", "task": "math", "completion": "ответ \\boxed{\\frac{1}{2}}", "reference": {"answer": "1/2"}},
]
ELAPSED = re.compile(rb'"elapsed_ms":[0-9.e+-]+')


def args_for(in_path, out_path) -> argparse.Namespace:
    return argparse.Namespace(in_path=str(in_path), out_path=str(out_path), rollouts=None, task="", force=False,
                              epsilon=1e-6, examples=3, fail_on_flip=False, quiet=True)


def engine(scorer: Scorer):
    def score(rollouts, args, bar):
        yield from scorer.score(rollouts).results
    return score


def run(scorer: Scorer, in_path, out_path) -> tuple[str, int, int]:
    """Rescore through ``scorer`` (its cache asked first): (the report, cache hits, rollouts verified: each
    scored one is stored)."""
    before = scorer.cache.stats()
    report = io.StringIO()
    with contextlib.redirect_stdout(report), contextlib.redirect_stderr(io.StringIO()):
        assert rescore(args_for(in_path, out_path), engine(scorer), scorer) == 0
    after = scorer.cache.stats()
    return report.getvalue(), after.hits - before.hits, after.stores - before.stores


def write(path, rows) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def test_edited_rows_are_verified_again_and_the_rest_come_from_the_cache(tmp_path):
    old = tmp_path / "old.jsonl"
    with Scorer(ScorerConfig(workers=1, reward_cache=str(tmp_path / "cache.sqlite"))) as scorer:
        cold = tmp_path / "cold.jsonl"
        write(old, [{**r, "score": 0.0, "status": "OK"} for r in ROLLOUTS])  # any old verdicts: then re-scored
        _, hits, verified = run(scorer, old, cold)
        assert (hits, verified) == (0, 4)
        stored = [json.loads(line) for line in cold.read_text(encoding="utf-8").splitlines()]

        edited = [dict(row) for row in stored]
        edited[1]["completion"] = "#### 73"  # now wrong
        edited[3]["reference"] = {"answer": "2"}  # another gold: another key
        write(old, edited)
        report, hits, verified = run(scorer, old, tmp_path / "warm.jsonl")
        assert (hits, verified) == (2, 2)
        assert "gsm8k: 3 rollouts, 1 changed" in report and "score fell (1->0): 1  (e.g. marked)" in report
        assert "math: 1 rollouts, 1 changed" in report
        warm = (tmp_path / "warm.jsonl").read_bytes().splitlines()
        cold_lines = cold.read_bytes().splitlines()
        for i in (0, 2):  # answered from the cache: the cold pass's bytes, its elapsed time aside
            assert ELAPSED.sub(b"", warm[i]) == ELAPSED.sub(b"", cold_lines[i]) and b'"elapsed_ms":0.0' in warm[i]
        assert json.loads(warm[1])["score"] == 0.0 and json.loads(warm[1])["completion"] == "#### 73"
        assert json.loads(warm[3])["score"] == 0.0

        _, hits, verified = run(scorer, old, tmp_path / "again.jsonl")  # the edits are cached now
        assert (hits, verified) == (4, 0)


def test_a_changed_verifier_version_answers_nothing_from_the_cache(tmp_path):
    old = tmp_path / "old.jsonl"
    write(old, [{**r, "score": 1.0, "status": "OK"} for r in ROLLOUTS])
    db = str(tmp_path / "cache.sqlite")
    with Scorer(ScorerConfig(workers=1, reward_cache=db)) as scorer:
        run(scorer, old, tmp_path / "cold.jsonl")
        _, hits, verified = run(scorer, old, tmp_path / "warm.jsonl")
        assert (hits, verified) == (4, 0)
        scorer.cache.flush()
    strict = RewardsConfig.from_dict({"tasks": {"gsm8k": {"options": {"last_number_fallback": False}}}})
    with Scorer(ScorerConfig(workers=1, reward_cache=db, rewards=strict)) as changed:
        report, hits, verified = run(changed, tmp_path / "warm.jsonl", tmp_path / "strict.jsonl")
    assert (hits, verified) == (1, 3)  # math's version is unchanged: its rollout alone comes from the file
    assert "gsm8k: 3 rollouts, 1 changed, 2 unchanged; version changed" in report
    assert "math: 1 rollouts, 0 changed, 1 unchanged; same version" in report
    rows = [json.loads(line) for line in (tmp_path / "strict.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows[0]["status"] == "NO_ANSWER" and rows[0]["verifier_version"] != rows[3]["verifier_version"]
