"""Chat-template special tokens left in a completion (or a gold) by the trainer.

Trainers that keep special tokens (OpenRLHF sends the query with them, many
RL loops decode without ``skip_special_tokens``) hand us completions such as
``#### 624<|im_end|>`` or ``The answer is 12<|eot_id|>``.  Read as part of
the answer, the token turns every correct rollout into a 0.

:func:`strip_special_tokens` removes them before extraction.  Each token is
replaced by a line break, never glued away: ``1<|eot_id|>2`` must not become
the answer ``12``.  What is removed:

* the tokens in :data:`DEFAULT_SPECIAL_TOKENS` (end-of-turn, end-of-text and
  padding tokens of the common templates: Llama 2/3, ChatML/Qwen, Mistral,
  Gemma, Phi, DeepSeek, GPT-2/NeoX, BERT-style);
* any token of the ``<|name|>`` shape (ASCII bars) and DeepSeek's
  full-width ``<｜name｜>`` shape, names up to 64 characters with no spaces;
* a role name right after a turn-start token (``<|im_start|>assistant``,
  ``<start_of_turn>model``, ``<|start_header_id|>assistant<|end_header_id|>``).

The list is configurable (``ExtractionConfig.special_tokens``); the shapes
above are always recognised because no math answer contains them.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["DEFAULT_SPECIAL_TOKENS", "strip_special_tokens"]

#: Literal tokens of the common chat templates that do not have the ``<|..|>`` shape.
DEFAULT_SPECIAL_TOKENS: tuple[str, ...] = (
    "</s>", "<s>", "<pad>", "<unk>", "<eos>", "<bos>", "<mask>",
    "<end_of_turn>", "<start_of_turn>", "[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]",
    "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>", "<EOT>", "<|im_end|>", "<|eot_id|>",
    "<|endoftext|>", "<|end_of_text|>", "<|end|>", "<|im_start|>",
)

# No quantifier nests, so the scans stay linear.
_BAR_TOKEN = r"<\|[^\s|<>]{1,64}\|>|<｜[^\s｜<>]{1,64}｜>"
_ROLE = r"(?:[ \t]*(?:system|user|assistant|model|tool|ipython)\b)?"
_TURN_START = r"(?:<\|im_start\|>|<start_of_turn>|<\|start_header_id\|>|<\|(?:system|user|assistant)\|>)"


#: Above this many characters that could open a token, one regex pass beats trying each of them.
_MAX_TRIED_STARTS = 16


@lru_cache(maxsize=16)
def _token_pattern(tokens: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """The pattern of every token, and the characters a match can begin with (every shape begins with
    ``<``; ``[`` is kept too)."""
    literal = "|".join(re.escape(t) for t in sorted(set(tokens), key=len, reverse=True) if t)
    parts = [f"{_TURN_START}{_ROLE}", _BAR_TOKEN] + ([literal] if literal else [])
    return re.compile("|".join(parts)), tuple(dict.fromkeys(["<", "[", *(t[0] for t in tokens if t)]))


def _token_spans(text: str, pattern: re.Pattern[str], starts: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """The spans ``pattern.finditer(text)`` finds, found by trying the pattern only where one of ``starts``
    stands (every match begins with one of them): ``str.find`` skips the rest faster than the regex's scan.
    None when there are too many such places to try one by one."""
    places: list[int] = []
    for start in starts:
        at = text.find(start)
        while at >= 0:
            places.append(at)
            if len(places) > _MAX_TRIED_STARTS:
                return None
            at = text.find(start, at + 1)
    places.sort()
    spans, end = [], 0
    for at in places:
        if at >= end and (found := pattern.match(text, at)):  # no token is empty: never a zero-width match
            spans.append((at, end := found.end()))
    return spans


def strip_special_tokens(text: str, tokens: tuple[str, ...] = DEFAULT_SPECIAL_TOKENS) -> str:
    """``text`` with every special token replaced by a line break, then surrounding space trimmed (``text``
    as it is when it holds no ``<``, ``[`` or other character a token begins with)."""
    pattern, starts = _token_pattern(tuple(tokens))
    for start in starts:
        if start in text:
            break
    else:
        return text
    spans = _token_spans(text, pattern, starts)
    if spans is None:
        return pattern.sub("\n", text).strip()
    pieces, end = [], 0
    for at, after in spans:
        pieces.append(text[end:at])
        end = after
    pieces.append(text[end:])
    return "\n".join(pieces).strip()
