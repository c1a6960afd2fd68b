"""``trainer-client sft`` and ``trainer-client dpo`` learn the tiny arithmetic task (held-out, paired, in SEs).

SFT starts from an untrained nano Llama, DPO from that model after SFT; held-out problems have
expressions no training problem has. Each claim is a paired comparison over held-out examples
(the saved checkpoint against its start), asserted with a margin of several standard errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from examples.tiny.arithmetic_task import completion_for
from tests.grpo_fixtures import save_tiny_policy
from tests.offline_fixtures import mean_and_se, split_problems, write_pairs, write_sft, wrong_completion
from trainer_client.cli import main
from trainer_client.dpo.dpo_train import encode_pairs, sequence_logps
from trainer_client.rm.preference_data import PreferencePair
from trainer_client.sft.chat_data import ChatExample, encode_example
from trainer_client.sft.token_batches import forward_logits, pad_batch, token_logprobs

pytestmark = pytest.mark.slow
CPU = torch.device("cpu")
SE_MARGIN = 4.0


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("offline")
    train, test = split_problems(600, 150)
    start = save_tiny_policy(root / "start")
    sft_train = write_sft(root / "sft_train.jsonl", train)
    # DPO's start: SFT'd on the same problems (the ladder's order), in the test's own directory
    assert main(["sft", "--model", str(start), "--data", str(sft_train), "--out", str(root / "sft_start"), "--epochs",
                 "3", "--lr", "3e-3", "--batch-size", "16", "--no-progress", "--num-threads", "1"]) == 0
    return {"start": start, "sft_start": root / "sft_start", "root": root, "test": test,
            "sft_train": sft_train, "sft_test": write_sft(root / "sft_test.jsonl", test),
            "pairs_train": write_pairs(root / "pairs_train.jsonl", train),
            "pairs_test": write_pairs(root / "pairs_test.jsonl", test)}


def load(path: Path):
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


@torch.no_grad()
def completion_nll(path: Path, problems) -> list[float]:
    """Per held-out example: mean NLL per completion token under the checkpoint at ``path``."""
    model, tokenizer = load(path)
    encoded = [encode_example(tokenizer, ChatExample(prompt=p.prompt, completion=completion_for(p))) for p in problems]
    batch = pad_batch(encoded, tokenizer.pad_token_id)
    logp, mask = token_logprobs(forward_logits(model, batch), batch)
    return (-logp.sum(-1) / mask.sum(-1)).tolist()


@torch.no_grad()
def logp_margins(path: Path, problems) -> list[float]:
    """Per held-out pair: log pi(chosen) - log pi(rejected) under the checkpoint at ``path``."""
    model, tokenizer = load(path)
    pairs = [PreferencePair(p.prompt, completion_for(p), wrong_completion(p)) for p in problems]
    sums = sequence_logps(model, encode_pairs(tokenizer, pairs, 1024).batch(range(len(pairs)),
                                                                           tokenizer.pad_token_id, CPU), CPU)[0]
    return (sums[: len(pairs)] - sums[len(pairs):]).tolist()


@pytest.mark.parametrize("packing", [False, True], ids=["padded", "packed"])
def test_sft_lowers_held_out_nll(task, packing: bool) -> None:
    out = task["root"] / f"sft-{packing}"
    args = ["sft", "--model", str(task["start"]), "--data", str(task["sft_train"]), "--eval-data",
            str(task["sft_test"]), "--out", str(out), "--epochs", "3", "--lr", "3e-3", "--no-progress",
            "--num-threads", "1", "--logging-steps", "5"]
    args += ["--packing", "--max-length", "256", "--batch-size", "4"] if packing else ["--batch-size", "16"]
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["train_loss"][-1] < metrics["train_loss"][0]
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("loss" in line for line in lines) and any("eval/token_accuracy" in line for line in lines)
    # held-out token accuracy: two binomial proportions over the same tokens
    before, after = metrics["eval_token_accuracy"][0], metrics["eval_token_accuracy"][-1]
    n = metrics["num_eval_tokens"]
    se = ((before * (1 - before) + after * (1 - after)) / n) ** 0.5
    assert after - before > SE_MARGIN * se, (before, after, se)
    # held-out likelihood, paired per example, from the saved checkpoint
    gain = [b - a for b, a in zip(completion_nll(task["start"], task["test"]), completion_nll(out, task["test"]))]
    mean, se = mean_and_se(gain)
    assert mean > SE_MARGIN * se, (mean, se)


@pytest.mark.parametrize(("loss_type", "extra"), [
    ("sigmoid", []), ("ipo", []), ("hinge", []), ("robust", ["--label-smoothing", "0.1"]),
    ("sigmoid", ["--rpo-alpha", "1.0", "--precompute-ref-log-probs"])],
    ids=["sigmoid", "ipo", "hinge", "robust", "rpo-precomputed"])
def test_dpo_widens_the_held_out_chosen_over_rejected_margin(task, loss_type: str, extra: list[str]) -> None:
    out = task["root"] / f"dpo-{loss_type}-{len(extra)}"
    assert main(["dpo", "--model", str(task["sft_start"]), "--data", str(task["pairs_train"]), "--eval-data",
                 str(task["pairs_test"]), "--out", str(out), "--loss-type", loss_type, "--epochs", "2",
                 "--batch-size", "16", "--lr", "1e-3", "--no-progress", "--num-threads", "1", *extra]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["eval_reward_accuracy"][-1] > 0.5
    gain = [a - b for b, a in zip(logp_margins(task["sft_start"], task["test"]), logp_margins(out, task["test"]))]
    mean, se = mean_and_se(gain)
    assert mean > SE_MARGIN * se, (mean, se)


def test_a_precomputed_reference_trains_like_a_frozen_copy(task) -> None:
    runs = []
    for extra in ([], ["--precompute-ref-log-probs"]):
        out = task["root"] / f"dpo-ref-{len(extra)}"
        assert main(["dpo", "--model", str(task["start"]), "--data", str(task["pairs_train"]), "--out", str(out),
                     "--max-steps", "6", "--batch-size", "8", "--lr", "1e-3", "--no-progress", "--num-threads", "1",
                     "--logging-steps", "1", *extra]) == 0
        runs.append([json.loads(line)["loss"] for line in (out / "metrics.jsonl").read_text().splitlines()])
    assert len(runs[0]) == 6 and runs[0] == pytest.approx(runs[1], rel=1e-4, abs=1e-5)
    assert runs[0][0] == pytest.approx(0.6931472, abs=1e-4)  # policy == reference at step 1: -log sigmoid(0)
