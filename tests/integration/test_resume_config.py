"""A run you can trust later, through ``trainer-client grpo`` on a tiny model and a real reward server:
a resume with a changed config is refused naming the keys, ``--allow-config-change`` accepts it and
every config is kept; prompts the server cannot score are named by file and line before step 0."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.integration.test_grpo_resume import _config, start_dir  # noqa: F401 (a fixture)
from trainer_client import cli
from trainer_client.errors import PromptDataError
from trainer_client.train.grpo import train_grpo

pytestmark = pytest.mark.slow


def grpo_argv(start: str, run_dir, endpoint: str, steps: int, *extra: str) -> list[str]:
    sets = [f"model.path={start}", f"data.train={start}/rl_train.jsonl", "model.threads=1", "reward.embedded=false",
            f"reward.endpoint={endpoint}", f"run.steps={steps}", "run.save_every=1", "run.progress=false",
            "run.tensorboard=false", "sampling.prompts_per_step=2", "sampling.group_size=2",
            "sampling.max_new_tokens=8", "grpo.micro_batch_size=4", *extra]
    return ["grpo", "--run-dir", str(run_dir), *[arg for s in sets for arg in ("--set", s)]]


def test_a_resume_with_another_config_is_refused_unless_allowed_and_every_config_is_kept(
        request, tmp_path, reward_server, capsys):
    start = str(request.getfixturevalue("start_dir"))
    run_dir = tmp_path / "run"
    assert cli.main(grpo_argv(start, run_dir, reward_server.address, 1)) == 0
    first = (run_dir / "config.yaml").read_text()

    assert cli.main(grpo_argv(start, run_dir, reward_server.address, 2, "grpo.beta=0.5", "optim.lr=0.01")) == 2
    err = capsys.readouterr().err
    assert "grpo.beta: 0.0 -> 0.5" in err and "optim.lr:" in err and "--allow-config-change" in err
    assert "Traceback" not in err
    assert not list(run_dir.glob("config.resume-*.yaml"))

    argv = grpo_argv(start, run_dir, reward_server.address, 2, "grpo.beta=0.5", "optim.lr=0.01")
    assert cli.main([*argv, "--allow-config-change"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["start_step"], summary["end_step"]) == (1, 2)
    assert (run_dir / "config.yaml").read_text() == first  # the first config stays
    resumed = yaml.safe_load((run_dir / "config.resume-1.yaml").read_text())
    assert resumed["grpo"]["beta"] == 0.5 and resumed["optim"]["lr"] == 0.01


def test_prompts_the_reward_server_cannot_score_are_named_before_step_0(request, tmp_path, reward_server):
    start = request.getfixturevalue("start_dir")
    rows = [json.loads(line) for line in (start / "rl_train.jsonl").read_text().splitlines()[:3]]
    rows[1]["task"] = "no_such_task"
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = _config(start, tmp_path / "run", reward_server.address, steps=1, data__train=str(data))
    with pytest.raises(PromptDataError, match=rf"{data}:2: task 'no_such_task' is not served"):
        train_grpo(config)
    assert not (tmp_path / "run" / "metrics.jsonl").read_text()  # no step ran
