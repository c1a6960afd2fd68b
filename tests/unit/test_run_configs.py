"""A run you can trust later: a resume with a changed config is refused (naming the keys) unless allowed,
and every config a run ran with is kept; the prompts are checked against the server's tasks."""

from __future__ import annotations

import json

import pytest
import yaml

from reward_core.contract import TaskInfo
from trainer_client.errors import ConfigChangeError, PromptDataError, TrainerError
from trainer_client.train.checkpointing import TRAINER_STATE
from trainer_client.train.data_checks import check_prompts
from trainer_client.train.rollouts import PromptRow
from trainer_client.train.run_configs import FIRST_CONFIG, changed_keys, config_history, keep_config

CONFIG = {"model": {"path": "m", "threads": 1}, "grpo": {"beta": 0.04}, "optim": {"lr": 1e-3},
          "run": {"steps": 2, "seed": 0}}


def dump(**changes) -> str:
    tree = json.loads(json.dumps(CONFIG))
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        tree[section][key] = value
    return yaml.safe_dump(tree, sort_keys=False)


def checkpoint(tmp_path, step: int):
    path = tmp_path / "checkpoints" / f"step-{step:06d}"
    path.mkdir(parents=True)
    (path / TRAINER_STATE).write_text(json.dumps({"step": step}))
    return path


def test_changed_keys_ignore_free_keys_and_keys_only_one_side_has():
    before = {"run": {"steps": 2, "seed": 0}, "grpo": {"beta": 0.04}}
    after = {"run": {"steps": 9, "seed": 1, "wandb": True}, "grpo": {"beta": 0.1}}
    assert changed_keys(before, after) == {"grpo.beta": (0.04, 0.1), "run.seed": (0, 1)}


def test_a_resume_with_a_changed_config_is_refused_naming_the_keys(tmp_path):
    keep_config(tmp_path, dump(), None, allow_change=False)
    with pytest.raises(ConfigChangeError) as refused:
        keep_config(tmp_path, dump(grpo__beta=0.1, optim__lr=0.01, run__steps=5), checkpoint(tmp_path, 2), False)
    message = str(refused.value)
    assert "grpo.beta: 0.04 -> 0.1" in message and "optim.lr: 0.001 -> 0.01" in message
    assert "run.steps" not in message and "--allow-config-change" in message
    assert isinstance(refused.value, TrainerError) and isinstance(refused.value, ValueError)
    assert [p.name for _, p in config_history(tmp_path)] == [FIRST_CONFIG]  # nothing kept for a refused resume


def test_an_allowed_change_keeps_every_config_with_the_step_it_started_at(tmp_path):
    keep_config(tmp_path, dump(), None, allow_change=False)
    keep_config(tmp_path, dump(run__steps=4), checkpoint(tmp_path, 2), allow_change=False)  # extending is free
    keep_config(tmp_path, dump(grpo__beta=0.1, run__steps=6), checkpoint(tmp_path, 4), allow_change=True)
    history = config_history(tmp_path)
    assert [(step, p.name) for step, p in history] == [
        (0, FIRST_CONFIG), (2, "config.resume-2.yaml"), (4, "config.resume-4.yaml")]
    assert yaml.safe_load(history[0][1].read_text()) == CONFIG  # config.yaml stays the first
    assert yaml.safe_load(history[-1][1].read_text())["grpo"]["beta"] == 0.1
    # the next resume compares with the newest config, so the accepted change is no longer one
    keep_config(tmp_path, dump(grpo__beta=0.1, run__steps=8), checkpoint(tmp_path, 6), allow_change=False)


def test_a_fresh_start_drops_an_earlier_runs_resume_configs(tmp_path):
    keep_config(tmp_path, dump(), None, allow_change=False)
    keep_config(tmp_path, dump(run__steps=4), checkpoint(tmp_path, 2), allow_change=False)
    keep_config(tmp_path, dump(grpo__beta=0.5), None, allow_change=False)
    assert [p.name for _, p in config_history(tmp_path)] == [FIRST_CONFIG]
    assert yaml.safe_load((tmp_path / FIRST_CONFIG).read_text())["grpo"]["beta"] == 0.5


TASKS = [TaskInfo("gsm8k", "grade school math", ("answer",), ("answer",)),
         TaskInfo("format", "format only")]


def test_prompts_the_server_cannot_score_are_named_by_file_and_line():
    rows = [PromptRow("a", "p", {"answer": "1"}, "gsm8k", 1), PromptRow("b", "p", {}, "format", 2),
            PromptRow("c", "p", {"gold": "1"}, "gsm8k", 3), PromptRow("d", "p", {"answer": "1"}, "gsm9k", 4),
            PromptRow("e", "p", {}, "rg:leg_counting", 5)]
    with pytest.raises(PromptDataError) as bad:
        check_prompts(rows, TASKS, "data/train.jsonl", "localhost:50051")
    message = str(bad.value)
    assert message.startswith("2 prompt row(s)")
    assert "data/train.jsonl:3: task 'gsm8k' needs reference field(s) answer; this reference has gold" in message
    assert ("data/train.jsonl:4: task 'gsm9k' is not served by the reward service at localhost:50051 "
            "(did you mean 'gsm8k'?)") in message
    assert ":1:" not in message and ":2:" not in message and ":5:" not in message


def test_prompts_the_server_can_score_pass():
    check_prompts([PromptRow("a", "p", {"answer": "1"}, "gsm8k", 1)], TASKS, "t.jsonl", "e")
