"""rollouts.jsonl: which groups a step writes, what a line holds, the size cap, and resume."""

from __future__ import annotations

import json
import logging

import pytest
import torch

from reward_core.clients import GroupResult
from reward_core.contract import GroupStats, RolloutResult, RolloutStatus
from trainer_client.train.collect import StepData
from trainer_client.train.config import RunConfig
from trainer_client.train.rollout_log import (
    COMPLETION_CHARS,
    ROLLOUTS_FILE,
    RolloutLog,
    clip,
    completion_advantages,
    step_records,
)
from trainer_client.train.rollouts import PromptRow, Rollouts
from trainer_client.train.run_logging import RunLogger

G = 2


def _group(gid: str, outcomes) -> GroupResult:
    results = [RolloutResult(f"{gid}-{k}", status, score=score, task="gsm8k", group_id=gid, error=error)
               for k, (status, score, error) in enumerate(outcomes)]
    return GroupResult(gid, results, GroupStats(gid, G, G, 0.0, 0.0, False))


def _step_data(kept: list[int]) -> StepData:
    """Three groups of two sampled; ``kept`` of them trained on (dynamic sampling drops the rest)."""
    groups = [_group("s0-g0", [(RolloutStatus.OK, 1.0, ""), (RolloutStatus.NO_ANSWER, 0.0, "")]),
              _group("s0-g1", [(RolloutStatus.OK, 1.0, ""), (RolloutStatus.OK, 1.0, "")]),
              _group("s0-g2", [(RolloutStatus.ERROR, 0.0, "sandbox crashed"), (RolloutStatus.OK, 0.5, "")])]
    texts = ["#### 4", "no idea", "#### 4", "#### 4", "x" * (COMPLETION_CHARS + 10), "#### 3"]
    n = len(texts)
    sampled = Rollouts(torch.ones(n, 1, dtype=torch.long), torch.ones(n, 1, dtype=torch.bool),
                       torch.ones(n, 3, dtype=torch.long), torch.ones(n, 3, dtype=torch.bool), torch.full((n,), 3),
                       torch.zeros(n, dtype=torch.bool), texts, group_size=G)
    rows = [PromptRow(f"p{i}", f"What is 2+2? ({i})", {"answer": "4"}, "gsm8k") for i in range(3)]
    return StepData(sampled.select_groups(kept), [rows[i] for i in kept], [groups[i] for i in kept], sampled, groups,
                    [False, True, False], 1, sampled_rows=rows)


def test_a_step_writes_every_member_of_its_first_groups_with_prompt_verdict_and_text():
    records = step_records(7, _step_data(kept=[0, 1, 2]), groups=2)
    assert [(r["step"], r["group_id"], r["id"]) for r in records] == [
        (7, "s0-g0", "s0-g0-0"), (7, "s0-g0", "s0-g0-1"), (7, "s0-g1", "s0-g1-0"), (7, "s0-g1", "s0-g1-1")]
    first = records[0]
    assert (first["task"], first["prompt"], first["reference"], first["completion"]) == (
        "gsm8k", "What is 2+2? (0)", {"answer": "4"}, "#### 4")
    assert (first["reward"], first["status"], records[1]["reward"], records[1]["status"]) == (1.0, "OK", 0.0,
                                                                                              "NO_ANSWER")
    assert all("explanation" in r and r["kept"] for r in records)


def test_an_unscored_rollout_has_reward_null_and_its_error():
    [_, _, _, _, err, _] = step_records(1, _step_data(kept=[0, 1, 2]), groups=3)
    assert (err["reward"], err["status"], err["error"]) == (None, "ERROR", "sandbox crashed")


def test_a_long_completion_is_cut_and_says_by_how_much():
    records = step_records(1, _step_data(kept=[0, 1, 2]), groups=3)
    assert records[4]["completion"] == clip("x" * (COMPLETION_CHARS + 10), COMPLETION_CHARS)
    assert records[4]["completion"].endswith("…[+10 chars]")


def test_advantages_go_to_the_kept_groups_rows_and_dropped_groups_say_so():
    data = _step_data(kept=[0, 2])  # group 1 (zero variance) dropped
    advantages = [0.5, -0.5, None, 0.25]  # rows of data.rollouts: groups 0 and 2
    records = step_records(1, data, groups=3, advantages=advantages)
    assert [r["advantage"] for r in records] == [0.5, -0.5, None, None, None, 0.25]
    assert [r["kept"] for r in records] == [True, True, False, False, True, True]


def test_completion_advantages_are_the_value_or_the_mean_over_trained_tokens():
    mask = torch.tensor([[True, True, False], [False, False, False]])
    assert completion_advantages(torch.tensor([0.5, -1.0]), mask) == [0.5, None]
    per_token = torch.tensor([[1.0, 3.0, 100.0], [1.0, 1.0, 1.0]])
    assert completion_advantages(per_token, mask) == [2.0, None]


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_log_stops_at_its_cap_and_says_so_once(tmp_path, caplog):
    line = {"step": 1, "text": "y" * 1000}
    log = RolloutLog(tmp_path, max_mb=3000 / 2**20)
    with caplog.at_level(logging.WARNING):
        log.write([line] * 5)
        log.write([line] * 5)
    log.close()
    assert len(_lines(tmp_path / ROLLOUTS_FILE)) == 2
    assert (tmp_path / ROLLOUTS_FILE).stat().st_size <= 3000
    assert sum("rollouts_max_mb" in r.message for r in caplog.records) == 1


def test_a_resumed_run_keeps_the_lines_up_to_its_checkpoint(tmp_path):
    log = RolloutLog(tmp_path, max_mb=1)
    log.write([{"step": s, "id": str(s)} for s in (1, 2, 3)])
    log.close()
    with (tmp_path / ROLLOUTS_FILE).open("a") as f:
        f.write('{"step": 4, "id": "cut sh')  # killed mid-line
    RolloutLog(tmp_path, max_mb=1, resume_step=2).close()
    assert [r["step"] for r in _lines(tmp_path / ROLLOUTS_FILE)] == [1, 2]
    RolloutLog(tmp_path, max_mb=1).close()  # a fresh run starts empty
    assert (tmp_path / ROLLOUTS_FILE).read_text() == ""


def test_the_run_logger_keeps_no_rollouts_file_when_sampling_is_off(tmp_path):
    RunLogger(tmp_path, tensorboard=False, rollouts_max_mb=None).close()
    assert not (tmp_path / ROLLOUTS_FILE).exists()


def test_run_config_rejects_a_negative_sample_or_a_zero_cap():
    with pytest.raises(ValueError, match="rollouts_sample"):
        RunConfig(rollouts_sample=-1)
    with pytest.raises(ValueError, match="rollouts_max_mb"):
        RunConfig(rollouts_max_mb=0)
