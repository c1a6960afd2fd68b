"""Prompt rows read by column name (data.prompt_key / data.reference_key / messages), and chat-template rendering."""

from __future__ import annotations

import pytest
import torch

from tests.grpo_fixtures import write_rows
from tests.judge_fixtures import tiny_byte_tokenizer
from trainer_client.train.config import SamplingConfig
from trainer_client.train.prompts import PromptDataError, read_prompts, render_prompt, uses_chat_template
from trainer_client.train.rollouts import generate_groups

GSM8K_ROW = {"question": "Natalia sold 48 clips in April and half as many in May. How many in all?",
             "answer": "In May she sold 48/2 = 24.\n48 + 24 = 72\n#### 72"}


def test_gsm8k_columns_are_read_by_name(tmp_path):
    path = write_rows(tmp_path / "gsm8k.jsonl", [GSM8K_ROW])
    [row] = read_prompts(path, "gsm8k", prompt_key="question", reference_key="answer")
    assert row.prompt == GSM8K_ROW["question"]
    assert dict(row.reference) == {"answer": GSM8K_ROW["answer"]}
    assert (row.task, row.id, row.line) == ("gsm8k", "line1", 1)


def test_a_missing_prompt_column_names_the_keys_the_row_has(tmp_path):
    path = write_rows(tmp_path / "p.jsonl", [GSM8K_ROW])
    with pytest.raises(PromptDataError, match=r"p.jsonl:1: no 'prompt' column \(data.prompt_key\).*"
                                              r"this row has 'answer', 'question'"):
        read_prompts(path, "gsm8k")


def test_a_missing_named_reference_column_names_the_keys_the_row_has(tmp_path):
    path = write_rows(tmp_path / "p.jsonl", [{"problem": "1+1?", "solution": "2"}, {"problem": "2+2?"}])
    with pytest.raises(PromptDataError, match=r"p.jsonl:2: no 'solution' column \(data.reference_key\); "
                                              r"this row has 'problem'"):
        read_prompts(path, "math", prompt_key="problem", reference_key="solution")


def test_the_default_reference_column_may_be_absent(tmp_path):
    [row] = read_prompts(write_rows(tmp_path / "p.jsonl", [{"prompt": "Say hi", "task": "format"}]))
    assert dict(row.reference) == {}


def test_a_non_string_prompt_column_is_refused(tmp_path):
    path = write_rows(tmp_path / "p.jsonl", [{"question": ["a"], "answer": "1"}])
    with pytest.raises(PromptDataError, match="'question' .* must be a string, got list"):
        read_prompts(path, "gsm8k", prompt_key="question", reference_key="answer")


def test_messages_rows_keep_their_turns_and_show_the_last_user_turn(tmp_path):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+3?"}]
    [row] = read_prompts(write_rows(tmp_path / "p.jsonl", [{"messages": messages, "answer": "5"}]), "gsm8k",
                         reference_key="answer")
    assert row.prompt == "What is 2+3?"
    assert [dict(m) for m in row.messages] == messages


@pytest.mark.parametrize("messages, match", [
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "must end with the user's turn"),
    ([], "non-empty list"),
    ([{"role": "narrator", "content": "q"}], "roles system, user"),
])
def test_malformed_messages_are_refused_with_the_line(tmp_path, messages, match):
    path = write_rows(tmp_path / "p.jsonl", [{"messages": messages, "task": "gsm8k"}])
    with pytest.raises(PromptDataError, match=f"p.jsonl:1: .*{match}"):
        read_prompts(path)


def test_the_chat_template_renders_the_turns_with_the_generation_prompt(tmp_path):
    tokenizer = tiny_byte_tokenizer(chat_template=True)
    rows = read_prompts(write_rows(tmp_path / "p.jsonl", [
        {"question": "What is 2+3?", "answer": "5"},
        {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}],
         "answer": "1"}]), "gsm8k", prompt_key="question", reference_key="answer")
    assert render_prompt(tokenizer, rows[0]) == "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"
    assert render_prompt(tokenizer, rows[1]) == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi?"
                                                 "<|im_end|>\n<|im_start|>assistant\n")
    assert render_prompt(tokenizer, rows[0], "false") == "What is 2+3?"


def test_chat_template_true_refuses_a_tokenizer_without_one():
    plain = tiny_byte_tokenizer(chat_template=False)
    assert not uses_chat_template(plain, "auto")
    with pytest.raises(PromptDataError, match="data.chat_template=true, but the tokenizer has no chat template"):
        uses_chat_template(plain, "true")
    assert uses_chat_template(tiny_byte_tokenizer(chat_template=True), "true")


def test_messages_without_a_template_are_refused(tmp_path):
    [row] = read_prompts(write_rows(tmp_path / "p.jsonl", [
        {"messages": [{"role": "user", "content": "Hi?"}], "task": "t"}]))
    with pytest.raises(PromptDataError, match="line 1 has 'messages', which needs a chat template, but "
                                              "data.chat_template=false"):
        render_prompt(tiny_byte_tokenizer(chat_template=True), row, "false")
    with pytest.raises(PromptDataError, match="the tokenizer has none"):
        render_prompt(tiny_byte_tokenizer(chat_template=False), row)


def test_generation_prompts_with_the_rendered_template_and_no_extra_special_tokens(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_byte_tokenizer(chat_template=True)
    tokenizer.padding_side = "left"
    rows = read_prompts(write_rows(tmp_path / "p.jsonl", [
        {"question": "What is 2+3?", "answer": "5"},
        {"messages": [{"role": "user", "content": "Hi?"}], "answer": "1"}]), "gsm8k",
        prompt_key="question", reference_key="answer")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id))
    ro = generate_groups(model, tokenizer, rows, SamplingConfig(group_size=2, max_new_tokens=3))
    prompts = [tokenizer.decode(ids[mask]) for ids, mask in zip(ro.prompt_ids, ro.prompt_mask)]
    assert prompts[0] == prompts[1] == render_prompt(tokenizer, rows[0])
    assert prompts[2] == render_prompt(tokenizer, rows[1])
    assert ro.prompt_mask[2, 0].item() is False  # the shorter prompt is left-padded
