"""``examples/ladder_compare.py`` end to end at a tiny size: SFT, DPO, RM + PPO and GRPO from one start.

Real components throughout: the reward service and ``serve-rm`` on loopback, our SFT, DPO, RM, PPO and
GRPO trainers. Learning margins are not asserted here (a handful of steps); the full-size figures are
in docs/trainer.md.
"""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from examples.ladder_compare import METHODS, PLOT_FILE, RESULTS_FILE, LadderConfig, run_ladder  # noqa: E402
from examples.tiny.make_start import RL_TRAIN_FILE  # noqa: E402
from reward_service.verifiers.math import grade_numeric  # noqa: E402
from trainer_client.cli import main  # noqa: E402
from trainer_client.evaluation.eval_cli import SUMMARY_FILE  # noqa: E402

pytestmark = pytest.mark.slow

STEPS, EVERY, PER_STEP, GROUP, EVAL_ROWS = 4, 2, 8, 8, 16


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    out = tmp_path_factory.mktemp("ladder")
    config = LadderConfig(out=str(out), start_steps=200, steps=STEPS, eval_every=EVERY,
                          prompts_per_step=PER_STEP, group_size=GROUP, eval_rows=EVAL_ROWS)
    return out, run_ladder(config)


def test_writes_results_json_and_the_png(ladder):
    out, results = ladder
    assert json.loads((out / RESULTS_FILE).read_text()) == json.loads(json.dumps(results))
    assert (out / PLOT_FILE).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_start_is_poor_greedily(ladder):
    # Deterministic on the CPU (one thread, seeded warm-up): the comparison's premise.
    _, results = ladder
    assert results["start"]["greedy_accuracy"] < 0.3
    assert results["start"]["eval_rows"] == EVAL_ROWS


def test_every_method_has_a_curve_from_the_same_start_over_the_same_budget(ladder):
    _, results = ladder
    start = results["start"]["greedy_accuracy"]
    assert list(results["methods"]) == list(METHODS)
    for name, m in results["methods"].items():
        assert m["steps"] == list(range(0, STEPS + 1, EVERY)), name
        assert len(m["accuracy"]) == len(m["steps"]) and m["accuracy"][0] == start, name
        assert all(0.0 <= a <= 1.0 for a in m["accuracy"]), name
        assert m["final_accuracy"] == m["accuracy"][-1] and m["best_accuracy"] == max(m["accuracy"]), name
        assert (m["policy_steps"], m["prompts_seen"]) == (STEPS, STEPS * PER_STEP), name
        assert m["wall_time_s"] > 0, name
    samples = STEPS * PER_STEP * GROUP
    assert [results["methods"][n]["generated_samples"] for n in METHODS] == [0, samples, samples, samples]
    assert results["methods"]["sft"]["gold_completions"] == STEPS * PER_STEP
    assert len(results["methods"]["rm_ppo"]["train_reward"]) == STEPS
    assert len(results["methods"]["grpo"]["train_reward"]) == STEPS


def test_pairs_are_the_start_samples_ranked_by_the_verifier(ladder):
    out, results = ladder
    stats = results["pairs"]
    answers = {}
    for line in (out / "start" / RL_TRAIN_FILE).read_text().splitlines():
        row = json.loads(line)
        answers[row["prompt"]] = row["reference"]["answer"]
    pairs = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert stats["prompts"] == STEPS * PER_STEP and stats["samples"] == STEPS * PER_STEP * GROUP
    assert len(pairs) == stats["pairs"] == stats["prompts"] - stats["prompts_all_right"] - stats["prompts_all_wrong"]
    assert pairs, "the start's samples must give some (right, wrong) pairs"
    for pair in pairs:
        assert grade_numeric(pair["chosen"], answers[pair["prompt"]]).correct
        assert not grade_numeric(pair["rejected"], answers[pair["prompt"]]).correct
    dpo = results["methods"]["dpo"]
    assert dpo["pairs"] == len(pairs) and dpo["epochs"] * len(pairs) >= STEPS * PER_STEP


def test_the_offline_curve_evaluates_the_trained_model(ladder, tmp_path):
    # The SFT hook's last point is the saved model's greedy accuracy, as `trainer-client eval` measures it.
    out, results = ladder
    assert main(["eval", "--model", str(out / "sft"), "--data", str(out / "start" / "rl_eval.jsonl"),
                 "--out", str(tmp_path), "--batch-size", "16", "--max-new-tokens", "32", "--threads", "1"]) == 0
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())["summary"]
    assert summary["overall"]["accuracy"] == results["methods"]["sft"]["final_accuracy"]
