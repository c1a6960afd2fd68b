"""The tiny start checkpoint: a short warm-up lands the sampled success rate in a low band."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from examples.tiny.arithmetic_task import make_problems
from examples.tiny.make_start import RL_TRAIN_FILE, WARMUP_FILE, StartConfig, make_start, split_seed
from examples.tiny.model import build_tiny_lm
from examples.tiny.tokenizer import build_tokenizer
from examples.tiny.warmup import IGNORE_INDEX, encode_example, render_prompt, sample_completions, success_rate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the make_start default: fastest on a shared 2-core machine
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def start(tmp_path_factory, one_thread):
    out = tmp_path_factory.mktemp("tiny_start")
    record = make_start(StartConfig(out=str(out), seed=0, rl_train=64, rl_eval=16))
    return out, record


def test_success_rate_is_in_the_low_band(start):
    _, record = start
    assert 0.05 <= record["success_rate"] <= 0.6


def test_start_model_knows_the_task_under_greedy_decoding(start):
    assert start[1]["greedy_success_rate"] >= 0.8


def test_untrained_model_never_succeeds(one_thread):
    tokenizer = build_tokenizer()
    problems = make_problems(128, seed=split_seed(0, "measure"))
    assert success_rate(build_tiny_lm(tokenizer, "nano", seed=0), tokenizer, problems, temperature=1.0) <= 0.02


def test_saved_checkpoint_reproduces_the_measured_rate(start):
    out, record = start
    model, tokenizer = AutoModelForCausalLM.from_pretrained(out), AutoTokenizer.from_pretrained(out)
    problems = make_problems(record["measured_on"], seed=split_seed(0, "measure"))
    assert (success_rate(model, tokenizer, problems, temperature=1.0, max_new_tokens=32, seed=0)
            == record["success_rate"])


def test_saved_generation_config_stops_at_eos(start):
    out, _ = start
    model, tokenizer = AutoModelForCausalLM.from_pretrained(out), AutoTokenizer.from_pretrained(out)
    enc = tokenizer.apply_chat_template([[{"role": "user", "content": "What is 7 + 8?"}]],
                                        add_generation_prompt=True, return_tensors="pt", return_dict=True)
    torch.manual_seed(0)
    new = model.generate(**enc)[0, enc["input_ids"].shape[1]:].tolist()
    assert tokenizer.eos_token_id in new and len(new) <= model.generation_config.max_new_tokens


def test_warmup_record_and_rl_dataset_are_written(start):
    out, _ = start
    record = json.loads((out / WARMUP_FILE).read_text())
    rows = [json.loads(line) for line in (out / RL_TRAIN_FILE).read_text().splitlines()]
    assert record["steps"] == StartConfig(out="x").steps and len(rows) == 64 and {r["task"] for r in rows} == {"gsm8k"}


def test_completions_use_the_answer_format(start):
    out, _ = start
    model, tokenizer = AutoModelForCausalLM.from_pretrained(out), AutoTokenizer.from_pretrained(out)
    completions = sample_completions(model, tokenizer, [p.prompt for p in make_problems(64, seed=9)], temperature=0)
    assert sum("\n#### " in c for c in completions) >= 60


def test_only_completion_and_eos_are_labelled():
    tokenizer = build_tokenizer()
    ids, labels = encode_example(tokenizer, "What is 7 + 8?", "7 + 8 = 15\n#### 15")
    n_prompt = len(tokenizer(render_prompt(tokenizer, "What is 7 + 8?"))["input_ids"])
    assert labels[:n_prompt] == [IGNORE_INDEX] * n_prompt and labels[n_prompt:] == ids[n_prompt:]
    assert tokenizer.decode(labels[n_prompt:]) == "7 + 8 = 15\n#### 15<eos>"


def test_same_seed_same_initial_weights():
    tokenizer = build_tokenizer()
    a, b = build_tiny_lm(tokenizer, seed=3), build_tiny_lm(tokenizer, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
