"""Supervised examples: JSONL rows, chat-template rendering, and which tokens the loss sees.

A row is either ``{"prompt": str, "completion": str}`` or ``{"messages": [{"role", "content"}, ...]}``
(TRL's "prompt-completion" and "conversational" formats). With a tokenizer that has a chat
template, a prompt/completion row is the conversation ``[user: prompt, assistant: completion]``;
without one it is the plain text ``prompt + completion + eos``.

The loss sees the completion only: the assistant turns of a conversation (their content and the
template's closing tokens, ``eos`` for most templates), the completion (and ``eos``) of plain
text. Which characters those are is read off the rendered text itself: an assistant turn ``i``
spans ``render(messages[:i], add_generation_prompt=True)`` to ``render(messages[:i + 1])``; the
tokens of the full rendering whose character offsets start inside a span are trained on
(:func:`token_mask`). Tokenizing the whole text once (not the pieces) keeps merges at the
boundaries exactly as the model will see them at generation time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer_client.jsonl_rows import iter_rows

IGNORE_INDEX = -100
ROLES = ("system", "user", "assistant")

Span = tuple[int, int]  # [start, end) character offsets


class SFTDataError(ValueError):
    """A supervised data file or row is malformed; the message starts with ``path:line:``."""


@dataclass(frozen=True)
class ChatExample:
    """One supervised example: a conversation, or a prompt and its completion."""

    messages: tuple[dict[str, str], ...] | None = None
    prompt: str | None = None
    completion: str | None = None

    def as_messages(self) -> list[dict[str, str]]:
        if self.messages is not None:
            return [dict(m) for m in self.messages]
        return [{"role": "user", "content": self.prompt or ""}, {"role": "assistant", "content": self.completion or ""}]


@dataclass(frozen=True)
class EncodedExample:
    """Token ids and, per token, whether the loss is taken on it."""

    input_ids: tuple[int, ...]
    trained: tuple[bool, ...]
    truncated: bool = False

    def labels(self) -> list[int]:
        """``input_ids`` with :data:`IGNORE_INDEX` where the loss is not taken (``transformers``' labels)."""
        return completion_labels(self.input_ids, self.trained)


def parse_row(row: Any, where: str) -> ChatExample:
    """One decoded JSON row as a :class:`ChatExample`; ``where`` (``path:line``) prefixes every error."""
    if not isinstance(row, dict):
        raise SFTDataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    if "messages" in row:
        messages = row["messages"]
        if not isinstance(messages, list) or not messages:
            raise SFTDataError(f"{where}: 'messages' must be a non-empty list of {{role, content}} objects")
        for i, m in enumerate(messages):
            if not (isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str)):
                raise SFTDataError(f"{where}: messages[{i}] must be {{\"role\": one of {ROLES}, \"content\": str}}")
        if not any(m["role"] == "assistant" for m in messages):
            raise SFTDataError(f"{where}: no assistant message, so nothing to train on")
        return ChatExample(messages=tuple({"role": m["role"], "content": m["content"]} for m in messages))
    if not (isinstance(row.get("prompt"), str) and isinstance(row.get("completion"), str)):
        raise SFTDataError(f"{where}: each line needs 'prompt' and 'completion' (strings) or 'messages'")
    return ChatExample(prompt=row["prompt"], completion=row["completion"])


def read_examples(path: str | Path) -> list[ChatExample]:
    """All examples of a JSONL file; SFTDataError (``path:line: ...``) on the first bad line or an empty file."""
    examples = list(iter_rows(path, parse_row, SFTDataError))
    if not examples:
        raise SFTDataError(f"{path}: no examples (empty file)")
    return examples


# ----------------------------------------------------------------------------- rendering and masks


def render(tokenizer: Any, example: ChatExample) -> tuple[str, list[Span]]:
    """The text the model is trained on, and the character spans of what the loss sees."""
    if not getattr(tokenizer, "chat_template", None):
        if example.messages is not None:
            raise SFTDataError("'messages' rows need a tokenizer with a chat template; use prompt/completion rows")
        eos = tokenizer.eos_token or ""
        text = example.prompt + example.completion + eos
        return text, [(len(example.prompt), len(text))]
    messages = example.as_messages()
    full = tokenizer.apply_chat_template(messages, tokenize=False)
    spans = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        before = tokenizer.apply_chat_template(messages[:i], tokenize=False, add_generation_prompt=True) if i else ""
        through = tokenizer.apply_chat_template(messages[: i + 1], tokenize=False)
        if not (full.startswith(through) and through.startswith(before)):
            raise SFTDataError("the chat template does not render a conversation as its turns' prefix (it rewrites "
                               "earlier turns); train on prompt/completion rows, or use a template that appends")
        spans.append((len(before), len(through)))
    return full, spans


def token_mask(offsets: Sequence[tuple[int, int]], spans: Sequence[Span]) -> list[bool]:
    """Per token: does it start inside one of ``spans``? Zero-width tokens (added specials) never do.

    ``offsets`` are the tokens' ``[start, end)`` character offsets (a fast tokenizer's
    ``offset_mapping``); ``spans`` are ``[start, end)`` character ranges.
    """
    return [end > start and any(lo <= start < hi for lo, hi in spans) for start, end in offsets]


def completion_labels(input_ids: Sequence[int], trained: Sequence[bool]) -> list[int]:
    """Labels for ``input_ids``: the id where ``trained``, :data:`IGNORE_INDEX` elsewhere."""
    if len(input_ids) != len(trained):
        raise ValueError(f"{len(input_ids)} ids but {len(trained)} mask entries")
    return [t if keep else IGNORE_INDEX for t, keep in zip(input_ids, trained)]


def encode_example(tokenizer: Any, example: ChatExample, max_length: int | None = None) -> EncodedExample:
    """Ids and loss mask of one example, cut to ``max_length`` tokens (keeping the start, as TRL does)."""
    text, spans = render(tokenizer, example)
    enc = tokenizer(text, add_special_tokens=not getattr(tokenizer, "chat_template", None),
                    return_offsets_mapping=True)
    ids, trained = list(enc["input_ids"]), token_mask(enc["offset_mapping"], spans)
    truncated = max_length is not None and len(ids) > max_length
    if truncated:
        ids, trained = ids[:max_length], trained[:max_length]
    return EncodedExample(tuple(ids), tuple(trained), truncated)


# ----------------------------------------------------------------------------- packing


@dataclass(frozen=True)
class PackedRow:
    """Several examples end to end in one row; ``segments`` numbers each token's example (0, 1, ...)."""

    input_ids: tuple[int, ...]
    trained: tuple[bool, ...]
    segments: tuple[int, ...]
    positions: tuple[int, ...]


def pack(examples: Sequence[EncodedExample], max_length: int) -> list[PackedRow]:
    """Greedy first-fit-decreasing packing into rows of at most ``max_length`` tokens.

    Each example keeps its own positions (from 0) and, through ``segments``, attends only to
    itself. An example's first token is never trained on (nothing of its own predicts it).
    """
    bins: list[list[EncodedExample]] = []
    room: list[int] = []
    for ex in sorted(examples, key=lambda e: len(e.input_ids), reverse=True):
        n = min(len(ex.input_ids), max_length)
        slot = next((b for b, free in enumerate(room) if free >= n), None)
        if slot is None:
            bins.append([])
            room.append(max_length)
            slot = len(bins) - 1
        bins[slot].append(EncodedExample(ex.input_ids[:n], ex.trained[:n], ex.truncated))
        room[slot] -= n
    rows = []
    for members in bins:
        ids, trained, segments, positions = [], [], [], []
        for seg, ex in enumerate(members):
            ids += ex.input_ids
            trained += (False,) + ex.trained[1:]
            segments += [seg] * len(ex.input_ids)
            positions += range(len(ex.input_ids))
        rows.append(PackedRow(tuple(ids), tuple(trained), tuple(segments), tuple(positions)))
    return rows
