"""The language tools an instruction check needs, passed in (the checks themselves stay pure).

Sentence splitting, word tokenization and language detection need model data (Punkt parameters,
language profiles) that a pure verifier must not load itself; the task builds a :class:`TextTools`
once per process and hands it to every check (``reward_service/tasks/instructions_nlp.py`` builds
the English one IFEval uses: nltk's Punkt and Treebank tokenizers, langdetect with a fixed seed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class TextTools:
    """``split_sentences`` (Punkt), ``word_tokenize`` (nltk.word_tokenize: Punkt sentences, then the
    Treebank word tokenizer), ``detect_language`` (an ISO 639-1 code such as ``en``, or None when the
    text gives the detector nothing to go on: IFEval counts that as followed)."""

    split_sentences: Callable[[str], Sequence[str]]
    word_tokenize: Callable[[str], Sequence[str]]
    detect_language: Callable[[str], str | None]


def count_words(text: str) -> int:
    """IFEval's word count: runs of word characters (nltk's ``RegexpTokenizer(r"\\w+")``)."""
    return len(_WORD.findall(text))
