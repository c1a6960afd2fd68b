"""`trainer-client grpo` on episodes whose rows are the run's own data (``episodes.rows_from: data``), with
``run.eval_every`` on held-out episodes, against a real ``reward-service serve --serve-environments`` on
loopback (``episodes.endpoint``, ``reward.endpoint``): the rows travel to ``arithmetic_tools`` as
``{"prompt", "reference"}`` and the eval lines land in metrics.jsonl. No learning is asserted."""

from __future__ import annotations

import json
import re

import pytest

from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.hosting import create_server
from reward_service.router.config import ScorerConfig, ServerConfig
from tests.grpo_fixtures import save_tiny_policy, write_rows
from trainer_client.errors import PromptDataError
from trainer_client.train.grpo import train_grpo
from trainer_client.train.grpo_config import load_config

pytestmark = pytest.mark.slow

# Products a 5-7 digit split row never asks, so a prompt shown in rollouts.jsonl is ours.
TRAIN = [{"question": f"What is {a} * {b}?", "answer": str(a * b)} for a, b in ((12, 34), (21, 43), (7, 9))]
HELD_OUT = [{"question": "What is 5 * 6?", "answer": "30"}, {"question": "What is 8 * 3?", "answer": "24"}]
EVAL_KEYS = ("eval/success", "eval/accuracy", "eval/reward_mean", "eval/unscored", "eval/unscored_rate",
             "eval/tool_calls_mean", "eval/tool_use_frac", "eval/turns_mean")


@pytest.fixture(scope="module")
def server():
    small = EnvironmentsConfig(calculator_workers=1, verify_workers=1, sandbox_concurrency=1, max_sessions=8)
    server = create_server(ServerConfig(port=0, serve_environments=True, scorer=ScorerConfig(workers=1),
                                        environments=small))
    yield server
    server.stop(1.0)


@pytest.fixture(scope="module")
def start(tmp_path_factory):
    return save_tiny_policy(tmp_path_factory.mktemp("policy") / "start")


def overrides(start, server, train, *extra):
    return [f"model.path={start}", "model.threads=1", "episodes.environment=arithmetic_tools",
            "episodes.rows_from=data", f"data.train={train}", "data.prompt_key=question", "data.reference_key=answer",
            f"episodes.endpoint={server.address}", "reward.embedded=false", f"reward.endpoint={server.address}",
            "episodes.max_turns=2", "episodes.tool_role=user", "episodes.tool_prompt=names", "run.progress=false",
            "run.tensorboard=false", "sampling.prompts_per_step=2", "sampling.group_size=2",
            "sampling.max_new_tokens=8", "grpo.min_valid=1", *extra]


@pytest.mark.parametrize("held_out", ["split", "data"])
def test_data_rows_train_as_episodes_and_eval_every_logs_held_out_episodes(tmp_path, server, start, held_out):
    train = write_rows(tmp_path / "train.jsonl", TRAIN)
    extra = ["run.eval_every=1", "run.steps=2", "run.eval_max_new_tokens=6"]
    if held_out == "split":
        extra += ["episodes.eval_split=test", "episodes.eval_rows=3"]
    else:
        extra += [f"run.eval_data={write_rows(tmp_path / 'held_out.jsonl', HELD_OUT)}",
                  "episodes.tool_call_format=llama3_json"]  # turns end at eos only: no stop string
    run_dir = tmp_path / "run"
    summary = train_grpo(load_config(None, overrides(start, server, train, *extra), run_dir=str(run_dir)))
    assert summary.end_step == 2
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 2]
    for line in lines:  # every step evaluated (run.eval_every=1), one greedy episode per held-out row
        assert line["eval/samples"] == line["eval/episodes"] == (3 if held_out == "split" else 2)
        assert all(key in line for key in EVAL_KEYS)
        assert line["eval/unscored"] == 0 and line["eval/unscored_rate"] == 0.0
        assert 0.0 <= line["eval/reward_mean"] <= 1.0 and line["eval/success"] <= 1.0
        # the training episodes ended by verification (FINISHED), on the rows of data.train
        assert line["episodes/status/FINISHED"] == 4 and line["unscored"] == 0
    shown = (run_dir / "rollouts.jsonl").read_text()
    assert any(row["question"] in shown for row in TRAIN)
    assert not re.search(r"What is \d{5,}", shown)  # no row of the environment's split was trained on


def test_a_bad_row_of_data_train_stops_the_run_before_step_0_naming_its_line(tmp_path, server, start):
    train = write_rows(tmp_path / "train.jsonl", [TRAIN[0], {"question": "What is 2 * 2?", "solution": "4"}])
    with pytest.raises(PromptDataError, match=r"train\.jsonl:2: no 'answer' column"):
        train_grpo(load_config(None, overrides(start, server, train, "run.steps=1"), run_dir=str(tmp_path / "r")))
    assert not (tmp_path / "r" / "metrics.jsonl").exists()
