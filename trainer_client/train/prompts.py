"""The RL prompt set: JSONL rows read by column name, their sampler, and how a row becomes the model's prompt.

    rows = read_prompts("gsm8k_train.jsonl", default_task="gsm8k", prompt_key="question", reference_key="answer")
    sampler = PromptSampler(rows, seed=0)
    text = render_prompt(tokenizer, rows[0], chat_template="auto")

A row is a JSON object with the prompt text under ``prompt_key`` (or a ``messages`` list of
``{"role", "content"}`` turns ending with the user's), the reference under ``reference_key``
(an object, or a string read as ``{"answer": string}``, as in gsm8k's ``answer`` column), and
optionally ``task`` and ``id``: Hugging Face datasets written with ``to_json(lines=True)`` are
read as they are. A row that lacks a column says which keys it has.

Rendering (``data.chat_template``): ``auto`` uses the tokenizer's chat template when it has
one (the row's turns, or one user turn, plus the generation prompt), ``true`` insists on one,
``false`` prompts with the raw text.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer_client.errors import PromptDataError

MESSAGES_KEY = "messages"  # the column of a conversation prompt
DEFAULT_REFERENCE_KEY = "reference"  # optional under this name; required under any other
ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class PromptRow:
    id: str
    prompt: str  # the text (a conversation's last user turn: what judges and logs show)
    reference: Mapping[str, Any]
    task: str
    line: int = 0  # its line in the prompts file (0: not from a file)
    messages: tuple[Mapping[str, str], ...] = ()  # the conversation, when the row has one


def _keys(data: Mapping[str, Any]) -> str:
    return ", ".join(repr(k) for k in sorted(data)) or "none"


def _messages(value: Any, where: str) -> tuple[Mapping[str, str], ...]:
    if not isinstance(value, list) or not value or not all(
            isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str) for m in value):
        raise PromptDataError(f"{where}: {MESSAGES_KEY!r} must be a non-empty list of {{\"role\", \"content\"}} "
                              f"turns (roles {', '.join(ROLES)})")
    if value[-1]["role"] != "user":
        raise PromptDataError(f"{where}: {MESSAGES_KEY!r} must end with the user's turn (the model answers it); "
                              f"this one ends with a {value[-1]['role']!r} turn: drop it, or put the answer under "
                              "the reference column")
    return tuple({"role": m["role"], "content": m["content"]} for m in value)


def parse_prompt_row(data: Any, where: str, number: int, *, default_task: str | None = None,
                     prompt_key: str = "prompt", reference_key: str = DEFAULT_REFERENCE_KEY) -> PromptRow:
    """One JSON row -> a PromptRow; PromptDataError naming ``where`` and the row's keys when a column is missing."""
    if not isinstance(data, dict):
        raise PromptDataError(f"{where}: need a JSON object, got {type(data).__name__}")
    messages: tuple[Mapping[str, str], ...] = ()
    if prompt_key in data:
        prompt = data[prompt_key]
        if not isinstance(prompt, str):
            raise PromptDataError(f"{where}: {prompt_key!r} (data.prompt_key) must be a string, got "
                                  f"{type(prompt).__name__}")
    elif MESSAGES_KEY in data:
        messages = _messages(data[MESSAGES_KEY], where)
        prompt = messages[-1]["content"]
    else:
        raise PromptDataError(f"{where}: no {prompt_key!r} column (data.prompt_key) and no {MESSAGES_KEY!r}; this "
                              f"row has {_keys(data)}")
    task = data.get("task") or default_task
    if not isinstance(task, str) or not task:
        raise PromptDataError(f"{where}: no \"task\" (add one, or set data.task)")
    if reference_key not in data and reference_key != DEFAULT_REFERENCE_KEY:
        raise PromptDataError(f"{where}: no {reference_key!r} column (data.reference_key); this row has "
                              f"{_keys(data)}")
    reference = data.get(reference_key)
    reference = reference if isinstance(reference, dict) else ({} if reference is None else {"answer": str(reference)})
    return PromptRow(str(data.get("id", f"line{number}")), prompt, reference, task, number, messages)


def read_prompts(path: str | Path, default_task: str | None = None, *, prompt_key: str = "prompt",
                 reference_key: str = DEFAULT_REFERENCE_KEY) -> list[PromptRow]:
    """Reads the rows of a JSONL prompts file (see the module docstring); ``default_task`` fills a missing task."""
    rows: list[PromptRow] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise PromptDataError(f"cannot read prompts from {path}: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PromptDataError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        rows.append(parse_prompt_row(data, f"{path}:{number}", number, default_task=default_task,
                                     prompt_key=prompt_key, reference_key=reference_key))
    if not rows:
        raise PromptDataError(f"{path}: no prompts")
    return rows


def uses_chat_template(tokenizer: Any, mode: str = "auto") -> bool:
    """Whether prompts go through the tokenizer's chat template under ``data.chat_template`` = ``mode``."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if mode == "true" and not has_template:
        raise PromptDataError("data.chat_template=true, but the tokenizer has no chat template (a base model?): "
                              "set data.chat_template=auto or false, or use an instruct model's tokenizer")
    return has_template and mode != "false"


def render_prompt(tokenizer: Any, row: PromptRow | str, chat_template: str = "auto") -> str:
    """The text the model is prompted with: the chat template's rendering with the generation prompt, or the text."""
    messages = row.messages if isinstance(row, PromptRow) else ()
    text = row.prompt if isinstance(row, PromptRow) else row
    if uses_chat_template(tokenizer, chat_template):
        return tokenizer.apply_chat_template(list(messages) or [{"role": "user", "content": text}],
                                             add_generation_prompt=True, tokenize=False)
    if messages:
        where = f"line {row.line}" if isinstance(row, PromptRow) and row.line else "a row"
        raise PromptDataError(f"{where} has {MESSAGES_KEY!r}, which needs a chat template, but "
                              f"{'data.chat_template=false' if chat_template == 'false' else 'the tokenizer has none'}"
                              f": give the prompt as text under data.prompt_key instead")
    return text


class PromptSampler:
    """Endless stream of prompts: passes over the rows, each pass shuffled by ``(seed, pass)``.

    Independent of the global RNGs; ``state_dict``/``load_state_dict`` make resume exact.
    """

    def __init__(self, rows: Sequence[PromptRow], seed: int, shuffle: bool = True) -> None:
        self.rows = list(rows)
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0
        self.position = 0
        self._order = self._make_order()

    def _make_order(self) -> list[int]:
        order = list(range(len(self.rows)))
        if self.shuffle:
            random.Random(f"{self.seed}-{self.epoch}").shuffle(order)
        return order

    def next(self, n: int) -> list[PromptRow]:
        out = []
        for _ in range(n):
            if self.position == len(self._order):
                self.epoch, self.position = self.epoch + 1, 0
                self._order = self._make_order()
            out.append(self.rows[self._order[self.position]])
            self.position += 1
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self._order = self._make_order()
