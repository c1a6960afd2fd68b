"""Process reward model training end to end (CLI -> checkpoint -> load_prm -> step_scores), kept tiny.

The backbone is the packaged MiniLM cut to its first two layers (pretrained weights, so it
learns in a few dozen steps on 2 CPU cores); the data is the generator's, restricted to the
``wrong_op`` corruption (the operation contradicts the step's own words, e.g.
``Gives away 3: 17 + 3 = 20``), every step corrupted with probability 0.5, and the held-out
set drawn from the same distribution with another seed. One pass over 768 problems (48
optimizer steps): many distinct problems seen once generalize; a few hundred seen five times
are memorized (held-out accuracy stayed near the majority rate when we tried it).
"""

from __future__ import annotations

import json
import math
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from trainer_client.cli import main  # noqa: E402
from trainer_client.prm.step_data import read_examples, write_examples  # noqa: E402
from trainer_client.prm.step_problems import generate_examples  # noqa: E402

N_TRAIN, N_TEST = 768, 100
KINDS = ("wrong_op",)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from transformers import AutoTokenizer, BertModel

    from trainer_client.rm.rm_train import default_model_path

    root = tmp_path_factory.mktemp("prm")
    backbone = root / "minilm-2-layers"
    model = BertModel.from_pretrained(default_model_path())
    model.encoder.layer = model.encoder.layer[:2]
    model.config.num_hidden_layers = 2
    model.save_pretrained(backbone)
    AutoTokenizer.from_pretrained(default_model_path()).save_pretrained(backbone)
    write_examples(root / "train.jsonl", generate_examples(N_TRAIN, 1, "train", kinds=KINDS, corrupt_prob=0.5))
    write_examples(root / "test.jsonl", generate_examples(N_TEST, 2, "train", kinds=KINDS, corrupt_prob=0.5))
    out = root / "prm"
    code = main(["train-prm", "--data", str(root / "train.jsonl"), "--eval-data", str(root / "test.jsonl"),
                 "--out", str(out), "--model", str(backbone), "--max-length", "96", "--epochs", "1",
                 "--batch-size", "16", "--lr", "5e-4", "--seed", "0", "--no-progress"])
    assert code == 0
    return root, out, json.loads((out / "metrics.json").read_text())


@pytest.mark.slow
def test_held_out_step_accuracy_beats_the_majority_class_by_a_margin(trained):
    # ~400 held-out steps, about half wrong: a predictor that ignores its input has accuracy at
    # most the majority rate in expectation, with sd <= 0.025; +0.10 is 4 sd (p < 1e-4).
    _, _, metrics = trained
    assert metrics["num_eval_steps"] > 350
    assert metrics["eval_step_accuracy"] >= metrics["eval_majority_baseline"] + 0.10, metrics
    assert metrics["eval_f1_wrong"] > 0.5
    assert metrics["train_loss"][0] < math.log(2) + 0.1


@pytest.mark.slow
def test_checkpoint_serves_the_scores_that_training_evaluated(trained):
    from reward_core.prm_inputs import load_prm, step_scores

    root, out, metrics = trained
    model, tokenizer, spec = load_prm(out)
    assert spec.max_length == 96 and spec.step_separator == "[SEP]"
    examples = read_examples(root / "test.jsonl")
    scores = step_scores(model, tokenizer, spec, [(e.prompt, e.completions) for e in examples])
    pairs = [(p >= 0.5, y) for s, e in zip(scores, examples) for p, y in zip(s, e.labels) if p is not None]
    assert len(pairs) == metrics["num_eval_steps"]
    assert sum(p == y for p, y in pairs) / len(pairs) == pytest.approx(metrics["eval_step_accuracy"], abs=1e-9)
