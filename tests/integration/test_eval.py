"""``trainer-client eval`` and ``run.eval_every`` on the tiny model against a real reward server."""

from __future__ import annotations

import collections
import json
import math

import pytest

from examples.tiny.make_start import RL_EVAL_FILE, StartConfig, make_start
from trainer_client.cli import main
from trainer_client.evaluation.eval_cli import SAMPLES_FILE, SUMMARY_FILE
from trainer_client.train.grpo import train_grpo
from trainer_client.train.grpo_config import load_config

pytestmark = pytest.mark.slow

N_EVAL = 12


@pytest.fixture(scope="module")
def start_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny_start")
    # 300 warm-up steps: some held-out answers right, some wrong, at temperature 0.5
    make_start(StartConfig(out=str(out), seed=0, steps=300, measure_problems=16, rl_train=64, rl_eval=N_EVAL))
    return out


@pytest.fixture(scope="module")
def held_out(start_dir, tmp_path_factory):
    """The tiny model's held-out prompts plus one row the service cannot score (no reference answer)."""
    rows = [json.loads(line) for line in (start_dir / RL_EVAL_FILE).read_text().splitlines()]
    rows.append({"id": "no-answer", "prompt": "What is 2 + 2?", "reference": {}, "task": "gsm8k"})
    path = tmp_path_factory.mktemp("eval_data") / "held_out.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _read(out):
    summary = json.loads((out / SUMMARY_FILE).read_text())
    samples = [json.loads(line) for line in (out / SAMPLES_FILE).read_text().splitlines()]
    return summary, samples


def _recompute(samples, k):
    """pass@k, maj@k, accuracy, reward mean and unscored rate from the per-sample lines, written out longhand."""
    by_prompt = collections.defaultdict(list)
    for s in samples:
        by_prompt[s["prompt_id"]].append(s)
    scored = [s for s in samples if s["scored"]]
    passes, majs = [], []
    for group in by_prompt.values():
        ok = sorted((s for s in group if s["scored"]), key=lambda s: s["sample"])
        if len(ok) < k:
            continue
        n, c = len(ok), sum(s["score"] >= 1.0 for s in ok)
        passes.append(1 - math.comb(n - c, k) / math.comb(n, k))
        blocks = [ok[i: i + k] for i in range(0, n - k + 1, k)]
        right = 0
        for block in blocks:
            votes = collections.Counter(s["extracted"] for s in block)
            winner = next(s for s in block if votes[s["extracted"]] == max(votes.values()))
            right += winner["score"] >= 1.0
        majs.append(right / len(blocks))
    return {"accuracy": sum(s["score"] >= 1.0 for s in scored) / len(scored),
            "reward_mean": sum(s["score"] for s in scored) / len(scored),
            "unscored_rate": (len(samples) - len(scored)) / len(samples),
            f"pass@{k}": sum(passes) / len(passes), f"maj@{k}": sum(majs) / len(majs)}


def test_eval_summary_agrees_with_its_per_sample_file(start_dir, held_out, tmp_path, reward_server, capsys):
    out = tmp_path / "eval"
    code = main(["eval", "--model", str(start_dir), "--data", str(held_out), "--out", str(out), "--n", "4",
                 "--k", "1", "2", "4", "--temperature", "0.5", "--max-new-tokens", "24", "--batch-size", "3",
                 "--endpoint", reward_server.address, "--no-check-tasks", "--threads", "1"])
    assert code == 0
    summary, samples = _read(out)
    outcomes = {s["score"] >= 1.0 for s in samples if s["scored"]}
    assert outcomes == {True, False}, "the check below needs right and wrong samples"
    assert len(samples) == (N_EVAL + 1) * 4
    overall = summary["summary"]["overall"]
    assert (overall["prompts"], overall["samples"], overall["unscored"]) == (N_EVAL + 1, len(samples), 4)
    assert {s["prompt_id"] for s in samples if not s["scored"]} == {"no-answer"}
    for k in (1, 2, 4):
        for key, value in _recompute(samples, k).items():
            assert overall[key] == pytest.approx(value), (k, key)
        assert overall[f"pass@{k}/prompts_skipped"] == 1  # the unscored prompt: not counted as wrong
    assert set(summary["summary"]) == {"overall", "gsm8k"}
    printed = capsys.readouterr().out
    assert "pass@4" in printed and "maj@4" in printed and "excluded from every denominator" in printed


def test_greedy_eval_on_the_embedded_server(start_dir, held_out, tmp_path):
    out = tmp_path / "greedy"
    assert main(["eval", "--model", str(start_dir), "--data", str(held_out), "--out", str(out),
                 "--max-prompts", str(N_EVAL), "--max-new-tokens", "24"]) == 0
    summary, samples = _read(out)
    assert len(samples) == N_EVAL and all(s["scored"] for s in samples)
    assert summary["options"]["temperature"] == 0.0
    assert summary["summary"]["overall"]["accuracy"] == pytest.approx(_recompute(samples, 1)["accuracy"])
    assert (out / "reward_server.log").is_file()


def test_k_above_n_is_refused_before_loading(start_dir, held_out, tmp_path, capsys):
    assert main(["eval", "--model", str(start_dir), "--data", str(held_out), "--out", str(tmp_path),
                 "--n", "2", "--k", "4", "--temperature", "1"]) == 2
    assert "k=[4] impossible with n=2" in capsys.readouterr().err


def test_greedy_with_several_samples_is_refused(start_dir, held_out, tmp_path, capsys):
    assert main(["eval", "--model", str(start_dir), "--data", str(held_out), "--out", str(tmp_path),
                 "--n", "3"]) == 2
    assert "temperature 0 decodes greedily" in capsys.readouterr().err


def test_a_wrong_model_path_is_said_first(held_out, tmp_path, capsys):
    assert main(["eval", "--model", str(tmp_path / "nope"), "--data", str(held_out)]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_grpo_with_eval_every_logs_eval_rows_and_plots(start_dir, held_out, tmp_path, reward_server):
    run_dir = tmp_path / "run"
    config = load_config(None, [
        f"model.path={start_dir}", f"data.train={start_dir}/rl_train.jsonl", "model.threads=1",
        "reward.embedded=false", f"reward.endpoint={reward_server.address}", "run.steps=3", "run.progress=false",
        "run.tensorboard=true", "sampling.prompts_per_step=2", "sampling.group_size=2", "sampling.max_new_tokens=24",
        "run.eval_every=2", f"run.eval_data={start_dir / RL_EVAL_FILE}", "run.eval_n=2", "run.eval_k=[1, 2]",
        "run.eval_temperature=1.0", "run.eval_max_prompts=4"], run_dir=str(run_dir))
    train_grpo(config)
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    evaluated = [r["step"] for r in lines if "eval/accuracy" in r]
    assert evaluated == [2, 3]  # every 2 steps, and the last
    for r in lines:
        if r["step"] in evaluated:
            assert r["eval/samples"] == 8 and r["eval/prompts"] == 4
            assert "eval/gsm8k/pass@2" in r and "eval/maj@2" in r
    assert (run_dir / "eval_curves.png").stat().st_size > 0
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = EventAccumulator(str(run_dir / "tensorboard")).Reload().Tags()["scalars"]
    assert "eval/pass@2" in tags and "eval/accuracy" in tags


def test_evaluating_during_training_leaves_the_training_unchanged(start_dir, tmp_path, reward_server):
    def run(name, *extra):
        run_dir = tmp_path / name
        train_grpo(load_config(None, [
            f"model.path={start_dir}", f"data.train={start_dir}/rl_train.jsonl", "model.threads=1",
            "reward.embedded=false", f"reward.endpoint={reward_server.address}", "run.steps=2",
            "run.progress=false", "run.tensorboard=false", "sampling.prompts_per_step=2", "sampling.group_size=2",
            "sampling.max_new_tokens=16", *extra], run_dir=str(run_dir)))
        lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        return [{k: v for k, v in r.items() if not k.startswith(("time/", "eval/"))} for r in lines]

    plain = run("plain")
    evaluated = run("evaluated", "run.eval_every=1", f"run.eval_data={start_dir / RL_EVAL_FILE}", "run.eval_n=2",
                    "run.eval_temperature=1.0", "run.eval_max_prompts=2")
    assert evaluated == plain  # the eval samples in a forked RNG: training draws the same numbers
