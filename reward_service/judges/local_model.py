"""A Hugging Face causal LM on CPU (or any torch device) behind the local judge endpoint.

``LocalCausalLM(path)`` loads ``AutoModelForCausalLM`` and ``AutoTokenizer`` from ``path`` (any small
real model, or the tiny random one tests build from a config), formats chat messages with the
tokenizer's chat template when it has one (a plain ``Role: content`` transcript otherwise), and
either generates text (greedy at temperature 0, sampled otherwise; ``seed`` makes sampling
reproducible) or, for vLLM's ``guided_choice``, returns the choice the model finds most likely after
the prompt. Calls into the model are serialised by one lock: the HTTP layer serves requests
concurrently and they queue here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reward_service.judges.openai_errors import RequestError

logger = logging.getLogger(__name__)

PLAIN_ROLES = {"system": "System", "developer": "System", "user": "User", "assistant": "Assistant"}


@dataclass(frozen=True)
class SamplingParams:
    """OpenAI's sampling parameters, as the endpoint honours them."""

    max_tokens: int = 64
    temperature: float = 1.0  # 0: greedy
    top_p: float = 1.0
    seed: int | None = None  # seeds torch's generator before sampling (reproducible replies)
    stop: tuple[str, ...] = ()  # the reply ends before the first of these (not included)


@dataclass(frozen=True)
class Generation:
    """A reply: its text, token counts and why it ended (``stop`` or ``length``)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


def plain_transcript(messages: Sequence[Mapping[str, str]]) -> str:
    """The prompt of a tokenizer without a chat template: one ``Role: content`` line per message and
    an open ``Assistant:`` turn."""
    lines = [f"{PLAIN_ROLES.get(m['role'], m['role'].title())}: {m['content']}" for m in messages]
    return "\n".join(lines + ["Assistant:"])


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the earliest of the ``stop`` strings, and whether one occurred."""
    ends = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[:min(ends)], True) if ends else (text, False)


class LocalCausalLM:
    """A causal LM and its tokenizer, loaded from ``path`` (a ``save_pretrained`` directory)."""

    def __init__(self, path: str, *, threads: int = 0, device: str = "cpu") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads > 0:
            torch.set_num_threads(threads)
        self._torch = torch
        self.path = path
        self.device = device
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForCausalLM.from_pretrained(path).to(device).eval()
        config = self.model.config
        self.context_length = int(getattr(config, "max_position_embeddings", 0)
                                  or getattr(config, "n_positions", 0) or 2048)
        eos = self.model.generation_config.eos_token_id
        self.eos_ids = tuple(eos if isinstance(eos, list) else [] if eos is None else [eos])
        if not self.eos_ids and self.tokenizer.eos_token_id is not None:
            self.eos_ids = (self.tokenizer.eos_token_id,)
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (self.eos_ids[0] if self.eos_ids else 0)
        self.chat_template = bool(getattr(self.tokenizer, "chat_template", None))
        self._lock = threading.Lock()
        logger.info("judge model %s: %s, %d parameters, context %d, chat template: %s", path,
                    type(self.model).__name__, sum(p.numel() for p in self.model.parameters()),
                    self.context_length, "yes" if self.chat_template else "no (plain transcript)")

    def prompt_ids(self, messages: Sequence[Mapping[str, str]]) -> list[int]:
        """The token ids of ``messages`` with an open assistant turn."""
        if self.chat_template:
            text = self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return list(self.tokenizer(plain_transcript(messages))["input_ids"])

    def _check_fits(self, prompt_tokens: int, more: int, what: str) -> None:
        if prompt_tokens + more > self.context_length:
            raise RequestError(f"this model's context is {self.context_length} tokens; the prompt has "
                               f"{prompt_tokens} and {what} needs {more} more: shorten the prompt or lower "
                               f"{what}", code="context_length_exceeded")

    def generate(self, messages: Sequence[Mapping[str, str]], params: SamplingParams) -> Generation:
        """The model's reply to ``messages``."""
        torch = self._torch
        from transformers import GenerationConfig

        ids = self.prompt_ids(messages)
        self._check_fits(len(ids), params.max_tokens, "max_tokens")
        sample = params.temperature > 0
        config = GenerationConfig(max_new_tokens=params.max_tokens, do_sample=sample,
                                  temperature=params.temperature if sample else None,
                                  top_p=params.top_p if sample else None, top_k=None,
                                  eos_token_id=list(self.eos_ids) or None, pad_token_id=self.pad_id,
                                  stop_strings=list(params.stop) or None)  # ends generation at a stop string
        inputs = torch.tensor([ids], device=self.device)
        with self._lock, torch.inference_mode():
            if sample and params.seed is not None:
                torch.manual_seed(params.seed)
            out = self.model.generate(inputs, attention_mask=torch.ones_like(inputs), generation_config=config,
                                      tokenizer=self.tokenizer)
        new = out[0, len(ids):].tolist()
        ended = bool(new) and new[-1] in self.eos_ids
        text, stopped = cut_at_stop(self.tokenizer.decode(new, skip_special_tokens=True), params.stop)
        finish = "stop" if ended or stopped or len(new) < params.max_tokens else "length"
        return Generation(text, len(ids), len(new), finish)

    def choose(self, messages: Sequence[Mapping[str, str]], choices: Sequence[str]) -> Generation:
        """The one of ``choices`` with the highest log-likelihood as the reply to ``messages`` (the sum of
        its tokens' log-probabilities; the first of equals wins): vLLM's ``guided_choice``, deterministic.

        One forward pass scores every choice: the choices follow the prompt, right-padded, so only the
        last ``longest choice + 1`` positions' logits are computed."""
        torch = self._torch
        prompt = self.prompt_ids(messages)
        encoded = [list(self.tokenizer(c, add_special_tokens=False)["input_ids"]) for c in choices]
        if not all(encoded):
            raise RequestError("guided_choice has a choice that is empty (no tokens)", param="guided_choice")
        longest = max(map(len, encoded))
        self._check_fits(len(prompt), longest, "the longest guided_choice")
        rows = [prompt + c + [self.pad_id] * (longest - len(c)) for c in encoded]
        mask = [[1] * (len(prompt) + len(c)) + [0] * (longest - len(c)) for c in encoded]
        inputs = torch.tensor(rows, device=self.device)
        with self._lock, torch.inference_mode():
            logits = self.model(inputs, attention_mask=torch.tensor(mask, device=self.device),
                                logits_to_keep=longest + 1).logits[:, :-1].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        scores = []
        for row, tokens in enumerate(encoded):
            target = torch.tensor(tokens, device=self.device)
            scores.append(logprobs[row, :len(tokens)].gather(-1, target[:, None]).sum().item())
        best = max(range(len(choices)), key=lambda i: (scores[i], -i))
        return Generation(choices[best], len(prompt), len(encoded[best]), "stop")
