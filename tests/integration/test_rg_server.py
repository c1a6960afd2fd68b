"""rg:<dataset> for real: `reward-service make-data` -> prompts a trainer reads -> a reward server on
loopback (gRPC, the CLI's --endpoint, the HTTP door's NeMo Gym and OpenRLHF routes); a hanging
third-party scorer is the pool's TIMEOUT and the server goes on."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from reward_core.contract import Rollout, RolloutStatus
from reward_service.cli import main
from reward_service.http_door import nemo_gym, openrlhf
from reward_service.router.rewards_config import RewardsConfig, TaskSpec
from tests.http_fixtures import serve_app
from tests.integration.conftest import start_server
from trainer_client import RewardClient

ITEM_TIMEOUT_S = 5.0  # the default: room for a worker's first rg item, which imports reasoning-gym (~1-2 s)
RG_REWARDS = RewardsConfig(tasks=(
    TaskSpec("rg_hang", "tests.integration.rg_tasks:HangingLegCounting"),
    TaskSpec("legs_binary", "rg:leg_counting", {"partial_credit": False}),
))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reward_service", *args], capture_output=True, text=True,
                          timeout=120)


def tagged(text: str) -> str:
    return f"<think>counting</think>\n<answer>{text}</answer>"


@pytest.fixture(scope="module")
def server():
    s = start_server(rewards=RG_REWARDS, item_timeout_s=ITEM_TIMEOUT_S, max_rollouts_per_request=256,
                     max_message_mb=8)
    yield s
    s.stop(0)


@pytest.fixture(scope="module")
def prompts(tmp_path_factory):
    """make-data's rows for three datasets (one needs the whole entry, one is ARC's tuple grids)."""
    rows = []
    for task in ("rg:leg_counting", "rg:sudoku", "rg:arc_1d"):
        out = tmp_path_factory.mktemp("data") / "prompts.jsonl"
        proc = run_cli("make-data", task, "--n", "4", "--seed", "7", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert f"wrote 4 prompts of {task}" in proc.stderr
        rows += [json.loads(line) for line in out.read_text().splitlines()]
    return rows


def test_make_data_writes_the_trainers_prompt_format(prompts, tmp_path):
    pytest.importorskip("torch", reason="trainer_client.train reads prompts next to torch")
    from trainer_client.train.rollouts import read_prompts

    path = tmp_path / "all.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in prompts))
    rows = read_prompts(path)
    assert [r.task for r in rows] == ["rg:leg_counting"] * 4 + ["rg:sudoku"] * 4 + ["rg:arc_1d"] * 4
    assert all("<answer>answer here</answer>" in r.prompt and r.reference["entry"]["question"] in r.prompt
               for r in rows)
    assert rows[0].id == "leg_counting-7-0"


def test_make_data_is_deterministic_and_refuses_what_it_cannot_make(capsys):
    outputs = []
    for seed in ("5", "5", "6"):
        assert main(["make-data", "rg:gcd", "--n", "3", "--seed", seed]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] != outputs[2] and len(outputs[0].splitlines()) == 3
    for args, fragment in ((("gsm8k",), "no generator for task 'gsm8k'"), (("rg:nope",), "not a reasoning-gym task"),
                           (("rg:gcd", "--config", '{"size": 3}'), "use --n and --seed"),
                           (("rg:gcd", "--config", '{"nope": 1}'), "bad config"),
                           (("rg:gcd", "--config", "[1]"), "must be a JSON object"),
                           (("rg:gcd", "--n", "0"), "at least 1")):
        assert main(["make-data", *args]) == 2
        assert fragment in capsys.readouterr().err


def test_golds_score_one_and_wrong_answers_zero_through_the_server(server, prompts):
    golds = [Rollout(r["id"], r["task"], tagged(r["reference"]["entry"]["answer"]), r["reference"], r["prompt"])
             for r in prompts]
    wrong = [Rollout(r["id"] + "-w", r["task"], tagged("no idea"), r["reference"], r["prompt"]) for r in prompts]
    bare = [Rollout(r["id"] + "-b", r["task"], r["reference"]["entry"]["answer"], r["reference"]) for r in prompts]
    with RewardClient(server.address, timeout_s=60) as client:
        results = client.score(golds + wrong + bare)
    n = len(prompts)
    assert [(r.status, r.score) for r in results[:n]] == [(RolloutStatus.OK, 1.0)] * n, results[:n]
    assert all(r.scored and r.score < 1.0 for r in results[n:2 * n])
    assert [r.status for r in results[2 * n:]] == [RolloutStatus.NO_ANSWER] * n  # no <answer> tags


def test_unusable_references_are_invalid_reference_never_zero(server, prompts):
    leg = next(r for r in prompts if r["task"] == "rg:leg_counting")["reference"]["entry"]
    sudoku = next(r for r in prompts if r["task"] == "rg:sudoku")["reference"]["entry"]
    other_version = {**leg, "metadata": {**leg["metadata"], "reasoning_gym_version": "0.1.9"}}
    cases = [("rg:leg_counting", {"entry": other_version}), ("rg:sudoku", {"answer": sudoku["answer"]}),
             ("rg:gcd", {"entry": leg}), ("rg:leg_counting", {"entry": "x"})]
    with RewardClient(server.address, timeout_s=60) as client:
        results = client.score([Rollout(str(i), task, tagged("1"), ref) for i, (task, ref) in enumerate(cases)])
    assert [r.status for r in results] == [RolloutStatus.INVALID_REFERENCE] * len(cases)
    assert "0.1.9" in results[0].error and "whole entry" in results[1].error and "rg:leg_counting" in results[2].error


def test_a_raising_scorer_is_error_and_a_hanging_one_is_timeout_then_the_server_goes_on(server, prompts):
    leg = next(r for r in prompts if r["task"] == "rg:leg_counting")["reference"]
    factor = {"answer": "2 × 3"}  # prime_factorization scores from the answer alone
    with RewardClient(server.address, timeout_s=60) as client:
        results = client.score([Rollout("raise", "rg:prime_factorization", tagged("six"), factor),
                                Rollout("hang", "rg_hang", tagged("hang"), leg)])
        assert (results[0].status, results[1].status) == (RolloutStatus.ERROR, RolloutStatus.TIMEOUT)
        assert "score_answer raised ValueError" in results[0].error
        again = client.score([Rollout("ok", "rg_hang", tagged(leg["entry"]["answer"]), leg),
                              Rollout("bin", "legs_binary", tagged(leg["entry"]["answer"] + "0"), leg)])
    assert [(r.status, r.score) for r in again] == [(RolloutStatus.OK, 1.0), (RolloutStatus.OK, 0.0)]


def test_list_tasks_lists_every_dataset(server):
    with RewardClient(server.address, timeout_s=60) as client:
        infos = {t.name: t for t in client.list_tasks()}
    assert len([n for n in infos if n.startswith("rg:")]) == 105
    assert "reasoning-gym leg_counting" in infos["rg:leg_counting"].description


def test_the_cli_scores_make_datas_prompts_through_the_server(server, prompts, tmp_path):
    rollouts, scores = tmp_path / "rollouts.jsonl", tmp_path / "scores.jsonl"
    rollouts.write_text("".join(json.dumps({"id": r["id"], "task": r["task"], "reference": r["reference"],
                                            "completion": tagged(r["reference"]["entry"]["answer"])}) + "\n"
                                for r in prompts))
    proc = run_cli("score", "--in", str(rollouts), "--out", str(scores), "--endpoint", server.address, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["score"] for line in scores.read_text().splitlines()] == [1.0] * len(prompts)


def gym_row(prompt: str, text: str, **task_fields) -> dict:
    """A NeMo Gym verify body (as simple_agent sends it) whose task fields carry the entry."""
    return {"responses_create_params": {"input": [{"role": "user", "content": prompt}]},
            "response": {"id": "r", "created_at": 1.0, "model": "policy", "object": "response",
                         "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                         "output": [{"id": "m", "type": "message", "role": "assistant", "status": "completed",
                                     "content": [{"type": "output_text", "annotations": [], "text": text}]}]},
            "_ng_task_index": 0, "_ng_rollout_index": 0, **task_fields}


def test_nemo_gym_and_openrlhf_rows_score_through_the_http_door(server, prompts):
    row = next(r for r in prompts if r["task"] == "rg:sudoku")
    entry, gold = row["reference"]["entry"], row["reference"]["entry"]["answer"]
    with serve_app(server.address, [nemo_gym.routes, openrlhf.routes], timeout_s=60.0) as (url, _):
        verify = f"{url}/gym/rg:sudoku/verify"
        nested = httpx.post(verify, json=gym_row(row["prompt"], tagged(gold), entry=entry), timeout=60)
        flat = httpx.post(verify, json=gym_row(row["prompt"], tagged(gold), **entry), timeout=60)
        wrong = httpx.post(verify, json=gym_row(row["prompt"], tagged("1"), entry=entry), timeout=60)
        bare = httpx.post(verify, json=gym_row(row["prompt"], tagged(gold), expected_answer=gold), timeout=60)
        orl = httpx.post(f"{url}/openrlhf/rg:sudoku", timeout=60, json={
            "query": [row["prompt"] + tagged(gold), row["prompt"] + tagged("1")], "prompts": [row["prompt"]] * 2,
            "labels": [json.dumps(row["reference"]), row["reference"]]})
    assert [r.status_code for r in (nested, flat, wrong)] == [200] * 3
    assert [r.json()["reward"] for r in (nested, flat, wrong)] == [1.0, 1.0, 0.0]
    assert bare.status_code == 400 and "INVALID_REFERENCE" in bare.json()["message"]  # sudoku needs its metadata
    assert orl.status_code == 200 and orl.json()["rewards"][0] == 1.0 and orl.json()["rewards"][1] < 1.0
