"""Bradley–Terry training end to end on a small generated set, with the default MiniLM backbone."""

from __future__ import annotations

import json
import math
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from reward_core.rm_inputs import NORMALIZATION_FILE, RM_CONFIG_FILE, read_rm_metadata  # noqa: E402
from trainer_client.cli import main  # noqa: E402

N_TRAIN, N_TEST = 384, 200


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("rm")
    assert main(["make-prefs", "--out-dir", str(root / "data"), "--n-train", str(N_TRAIN),
                 "--n-test", str(N_TEST), "--seed", "7"]) == 0
    out = root / "model"
    code = main(["train-rm", "--data", str(root / "data" / "train.jsonl"), "--eval-data",
                 str(root / "data" / "test.jsonl"), "--out", str(out), "--max-length", "96", "--epochs", "2",
                 "--batch-size", "16", "--lr", "1e-4", "--seed", "0", "--no-progress"])
    assert code == 0
    return out, json.loads((out / "metrics.json").read_text())


@pytest.mark.slow
def test_training_loss_goes_down(trained):
    _, metrics = trained
    first, last = metrics["train_loss"]
    assert first < math.log(2) and last < first


@pytest.mark.slow
def test_held_out_accuracy_is_far_above_chance(trained):
    # 200 pairs: a coin flip exceeds 0.65 with probability < 1e-5.
    _, metrics = trained
    assert metrics["eval_accuracy"] > 0.65
    assert metrics["num_eval_pairs"] == N_TEST


@pytest.mark.slow
def test_output_dir_loads_back_and_scores_like_training(trained):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from reward_core.rm_inputs import encode_pair, pad_encoded

    out, _ = trained
    model = AutoModelForSequenceClassification.from_pretrained(out).eval()
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert model.config.num_labels == 1
    assert (out / "model.safetensors").exists()
    enc = [encode_pair(tokenizer, "What is 2 + 3?", c, 96) for c in ("2 + 3 = 5.\nAnswer: 5", "2 + 3 = 6.\nAnswer: 6")]
    batch = {k: torch.tensor(v) for k, v in pad_encoded(enc, tokenizer.pad_token_id).items()}
    with torch.no_grad():
        rewards = model(**batch).logits[:, 0]
    assert torch.isfinite(rewards).all()


@pytest.mark.slow
def test_normalization_stats_and_input_config_are_saved(trained):
    out, metrics = trained
    norm = json.loads((out / NORMALIZATION_FILE).read_text())
    assert set(norm) == {"mean", "std", "num_samples"} and norm["std"] > 0 and norm["num_samples"] == 2 * N_TRAIN
    config = json.loads((out / RM_CONFIG_FILE).read_text())
    assert config["max_length"] == 96 and config["truncation"] == "prompt_left"
    assert read_rm_metadata(out).mean == pytest.approx(metrics["reward_mean"])


def test_malformed_training_file_stops_with_file_and_line(tmp_path, capsys):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"prompt": "p", "chosen": "c", "rejected": "r"}\n{"prompt": "p"}\n')
    assert main(["train-rm", "--data", str(data), "--out", str(tmp_path / "m"), "--no-progress"]) == 2
    assert "bad.jsonl:2: missing field(s)" in capsys.readouterr().err


def test_invalid_config_is_rejected_with_a_fix(tmp_path, capsys):
    data = tmp_path / "ok.jsonl"
    data.write_text('{"prompt": "p", "chosen": "c", "rejected": "r"}\n')
    assert main(["train-rm", "--data", str(data), "--out", str(tmp_path / "m"), "--warmup-ratio", "1.5"]) == 2
    assert "warmup_ratio must be in [0, 1)" in capsys.readouterr().err


@pytest.mark.slow
def test_decoder_backbone_without_pad_token_trains_and_saves(tmp_path):
    """A tiny GPT-2 built from a config, with a byte-level BPE tokenizer that has no pad token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoModelForSequenceClassification, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    from trainer_client.rm.preference_data import generate_pairs, write_preferences
    from trainer_client.rm.rm_train import RewardTrainConfig, train_reward_model

    pairs = generate_pairs(48, seed=1, split="train")
    write_preferences(tmp_path / "train.jsonl", pairs)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator([p.prompt + p.chosen + p.rejected for p in pairs], trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>")
    backbone = tmp_path / "tiny-gpt2"
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_positions=128, n_embd=32, n_layer=1, n_head=2,
                               eos_token_id=tokenizer.eos_token_id)).save_pretrained(backbone)
    tokenizer.save_pretrained(backbone)

    result = train_reward_model(RewardTrainConfig(
        data=str(tmp_path / "train.jsonl"), eval_data=str(tmp_path / "train.jsonl"), out_dir=str(tmp_path / "rm"),
        model=str(backbone), max_length=96, epochs=1, batch_size=8, progress=False))
    assert result.eval_accuracy is not None and math.isfinite(result.reward_std)
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "rm")
    assert model.config.pad_token_id == tokenizer.eos_token_id
