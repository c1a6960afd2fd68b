"""A real judge endpoint for tests: a tiny random causal LM served over OpenAI's API, and fault proxies.

``make_tiny_judge_model(dir)`` writes, in about a second and without the hub, a 2-layer Llama
(hidden 32) with a byte-level tokenizer (every byte a token, so any text encodes) and a ChatML chat
template. Its free text is gibberish; with ``guided_choice`` it answers one of the given strings,
picked by its own log-likelihoods, deterministically.

Fixtures (registered in tests/conftest.py):
- ``judge_model_dir``: the model's directory (session).
- ``judge_endpoint``: the :class:`JudgeServer` serving it (session; ``.base_url``, ``.model_name``,
  ``.requests``); ``judge_server``: its base URL (``http://127.0.0.1:PORT/v1``). The model is named
  ``JUDGE_MODEL``.
- ``fault_proxy``: a factory, ``fault_proxy(FaultPlan(...), upstream=None) -> FaultProxy`` in front of
  ``judge_server`` (or ``upstream``), stopped when the test ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from reward_service.judges.fault_proxy import FaultPlan, FaultProxy
    from reward_service.judges.local_server import JudgeServer

JUDGE_MODEL = "tiny-judge"
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHATML_TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
                   "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def tiny_byte_tokenizer(chat_template: bool = True):
    """A byte-level BPE tokenizer without merges (256 byte tokens, then the special tokens)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {char: i for i, char in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet(), key=ord))}
    for token in SPECIAL_TOKENS:
        vocab[token] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|endoftext|>",
                                        eos_token="<|im_end|>" if chat_template else "<|endoftext|>",
                                        pad_token="<|endoftext|>", additional_special_tokens=list(SPECIAL_TOKENS[1:]))
    if chat_template:
        tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def make_tiny_judge_model(out_dir: str | Path, *, seed: int = 0, chat_template: bool = True,
                          context: int = 4096) -> Path:
    """A random 2-layer Llama (hidden 32) and its byte-level tokenizer, saved to ``out_dir``."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    out_dir = Path(out_dir)
    tokenizer = tiny_byte_tokenizer(chat_template)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=context,
                         initializer_range=0.2, tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    model.generation_config = GenerationConfig(bos_token_id=tokenizer.bos_token_id,
                                               eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


@pytest.fixture(scope="session")
def judge_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_judge_model(tmp_path_factory.mktemp("judge_model") / JUDGE_MODEL)


@pytest.fixture(scope="session")
def judge_endpoint(judge_model_dir: Path) -> Iterator[JudgeServer]:
    from reward_service.judges.local_server import start_judge_server

    # One torch thread: the tiny model gains nothing from more, and on a busy machine several lose a lot.
    server, _ = start_judge_server(str(judge_model_dir), served_model_name=JUDGE_MODEL, threads=1)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def judge_server(judge_endpoint: JudgeServer) -> str:
    return judge_endpoint.base_url


@pytest.fixture
def fault_proxy(judge_server: str) -> Iterator[Callable[..., FaultProxy]]:
    from reward_service.judges.fault_proxy import FaultProxy

    proxies: list[FaultProxy] = []

    def start(plan: FaultPlan | None = None, upstream: str | None = None) -> FaultProxy:
        proxies.append(FaultProxy(upstream or judge_server, plan))
        return proxies[-1]

    yield start
    for proxy in proxies:
        proxy.stop()
