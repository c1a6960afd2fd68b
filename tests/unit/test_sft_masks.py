"""Which tokens SFT trains on: character spans -> token masks, chat rendering, truncation, packing."""

from __future__ import annotations

import json
import math

import pytest
import torch

from examples.tiny import build_tiny_lm, build_tokenizer
from trainer_client.sft.chat_data import (
    IGNORE_INDEX,
    ChatExample,
    EncodedExample,
    SFTDataError,
    completion_labels,
    encode_example,
    pack,
    read_examples,
    token_mask,
)
from trainer_client.sft.token_batches import (
    completion_loss,
    forward_logits,
    packed_batch,
    pad_batch,
    token_accuracy,
    token_logprobs,
)


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def tokens(tokenizer, encoded: EncodedExample) -> list[str]:
    return tokenizer.convert_ids_to_tokens(list(encoded.input_ids))


def test_token_mask_trains_tokens_that_start_inside_a_span() -> None:
    # text "abcdefghij", span [5, 9): tokens "abc" "de" "f" (special, zero-width) "ghi" "j"
    offsets = [(0, 3), (3, 5), (5, 6), (6, 6), (6, 9), (9, 10)]
    assert token_mask(offsets, [(5, 9)]) == [False, False, True, False, True, False]


def test_a_token_straddling_the_span_start_is_prompt() -> None:
    assert token_mask([(0, 4), (4, 7), (7, 9)], [(5, 9)]) == [False, False, True]


def test_two_spans_are_both_trained() -> None:
    assert token_mask([(0, 1), (1, 2), (2, 3), (3, 4)], [(1, 2), (3, 4)]) == [False, True, False, True]


def test_completion_labels_ignore_untrained_tokens() -> None:
    assert completion_labels([7, 8, 9], [False, True, True]) == [IGNORE_INDEX, 8, 9]
    with pytest.raises(ValueError):
        completion_labels([7, 8], [True])


def test_prompt_completion_trains_the_completion_and_eos_only(tokenizer) -> None:
    encoded = encode_example(tokenizer, ChatExample(prompt="2+3", completion="5"))
    assert tokens(tokenizer, encoded) == ["<bos>", "<|user|>", "2", "+", "3", "<|assistant|>", "5", "<eos>"]
    assert encoded.trained == (False,) * 6 + (True, True)
    assert encoded.labels() == [IGNORE_INDEX] * 6 + [tokenizer.convert_tokens_to_ids("5"), tokenizer.eos_token_id]


def test_every_assistant_turn_is_trained_and_nothing_else(tokenizer) -> None:
    messages = ({"role": "system", "content": "S"}, {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
                {"role": "assistant", "content": "de"})
    encoded = encode_example(tokenizer, ChatExample(messages=messages))
    trained = [t for t, keep in zip(tokens(tokenizer, encoded), encoded.trained) if keep]
    assert trained == ["b", "<eos>", "d", "e", "<eos>"]
    assert not any(encoded.trained[:6])  # <bos> <|system|> S <|user|> a <|assistant|>


def test_without_a_chat_template_the_text_is_prompt_completion_eos(tokenizer) -> None:
    plain = build_tokenizer()
    plain.chat_template = None
    encoded = encode_example(plain, ChatExample(prompt="Q:", completion="ok"))
    assert tokens(plain, encoded) == ["Q", ":", "o", "k", "<eos>"]
    assert encoded.trained == (False, False, True, True, True)
    with pytest.raises(SFTDataError, match="chat template"):
        encode_example(plain, ChatExample(messages=({"role": "user", "content": "x"},
                                                    {"role": "assistant", "content": "y"})))


def test_truncation_keeps_the_start(tokenizer) -> None:
    encoded = encode_example(tokenizer, ChatExample(prompt="2+3", completion="5"), max_length=7)
    assert encoded.truncated and tokens(tokenizer, encoded)[-1] == "5" and len(encoded.input_ids) == 7


def test_rows_are_read_and_bad_rows_named(tmp_path) -> None:
    path = tmp_path / "sft.jsonl"
    path.write_text(json.dumps({"prompt": "p", "completion": "c"}) + "\n"
                    + json.dumps({"messages": [{"role": "user", "content": "u"},
                                               {"role": "assistant", "content": "a"}]}) + "\n")
    examples = read_examples(path)
    assert examples[0].prompt == "p" and examples[1].messages[1]["content"] == "a"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "u"}]}) + "\n")
    with pytest.raises(SFTDataError, match=r"sft.jsonl:1: no assistant message"):
        read_examples(path)
    path.write_text(json.dumps({"prompt": "p"}) + "\n")
    with pytest.raises(SFTDataError, match=r"sft.jsonl:1: .*'completion'"):
        read_examples(path)


def test_packing_fills_rows_and_restarts_positions() -> None:
    a = EncodedExample((1, 2, 3, 4), (False, False, True, True))
    b = EncodedExample((5, 6, 7), (False, True, True))
    c = EncodedExample((8, 9), (True, True))
    rows = pack([c, a, b], max_length=6)
    # first fit, longest first: [a, c] (4 + 2), then [b]
    assert [r.input_ids for r in rows] == [(1, 2, 3, 4, 8, 9), (5, 6, 7)]
    assert rows[0].segments == (0, 0, 0, 0, 1, 1) and rows[0].positions == (0, 1, 2, 3, 0, 1)
    # an example's first token is never trained (its predecessor belongs to another example)
    assert rows[0].trained == (False, False, True, True, False, True)


def test_a_packed_example_sees_only_itself(tokenizer) -> None:
    model = build_tiny_lm(tokenizer, "nano", seed=0).eval()
    a = encode_example(tokenizer, ChatExample(prompt="7*8", completion="56"))
    b = encode_example(tokenizer, ChatExample(prompt="1+1", completion="2"))
    with torch.no_grad():
        packed = forward_logits(model, packed_batch(pack([a, b], 64), tokenizer.pad_token_id))[0]
        alone_a = forward_logits(model, pad_batch([a], tokenizer.pad_token_id))[0]
        alone_b = forward_logits(model, pad_batch([b], tokenizer.pad_token_id))[0]
    n = len(a.input_ids)  # a is longer, so packed first
    assert torch.allclose(packed[:n], alone_a, atol=1e-5)
    assert torch.allclose(packed[n:n + len(b.input_ids)], alone_b, atol=1e-5)


def test_loss_and_logprobs_look_at_trained_tokens_only() -> None:
    batch = {"input_ids": torch.tensor([[0, 1, 2, 0]]), "trained": torch.tensor([[False, False, True, True]])}
    logits = torch.zeros(1, 4, 3)
    logits[0, 1, 2] = 2.0  # predicts token 2 at position 2: log p = 2 - log(e^2 + 2)
    logits[0, 0, 1] = 50.0  # predicts the prompt token: ignored
    logp, mask = token_logprobs(logits, batch)
    expected = torch.tensor([[0.0, 2 - math.log(math.e ** 2 + 2), -math.log(3.0)]])
    assert mask.tolist() == [[False, True, True]]
    assert torch.allclose(logp, expected)
    assert torch.isclose(completion_loss(logits, batch), -expected.sum() / 2)
    assert token_accuracy(logits, batch) == (2, 2)  # argmax 2 at position 1; all-zero logits: argmax 0, right
    logits[0, 2, 1] = 1.0
    assert token_accuracy(logits, batch) == (1, 2)
