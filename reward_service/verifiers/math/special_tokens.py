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


@lru_cache(maxsize=16)
def _token_re(tokens: tuple[str, ...]) -> re.Pattern[str]:
    literal = "|".join(re.escape(t) for t in sorted(set(tokens), key=len, reverse=True) if t)
    parts = [f"{_TURN_START}{_ROLE}", _BAR_TOKEN] + ([literal] if literal else [])
    return re.compile("|".join(parts))


def strip_special_tokens(text: str, tokens: tuple[str, ...] = DEFAULT_SPECIAL_TOKENS) -> str:
    """``text`` with every special token replaced by a line break (then trailing space trimmed)."""
    if "<" not in text and "[" not in text:
        return text
    return _token_re(tuple(tokens)).sub("\n", text).strip()
