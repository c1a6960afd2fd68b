"""Whether a token of ``nltk.word_tokenize(text)`` starts with a lower-case letter and goes on all in one
case (IFBench's ``format:title_case`` fails on the first one), told without tokenizing when it can be.

``word_tokenize`` (Punkt sentences, then the Treebank tokenizer on each) never joins what whitespace
separates, never adds a letter, and cuts between two word characters only at the contractions
``can|not``, ``gim|me``, ``gon|na``, ``got|ta``, ``lem|me``, ``wan|na`` and before ``n't`` (Punkt breaks
only after ``.?!``; the other Treebank rules cut at punctuation, quotes and apostrophes, and an
apostrophe after a word character is cut before, not after). So:

- two or more lower-case ASCII letters between whitespace, or characters always cut off (brackets,
  ``;@#$%&?!*"``), give tokens of two or more lower-case letters (a contraction's pieces too): such a
  token exists (``True``);
- in ASCII text without ``n't`` or a contraction, where every lower-case letter follows an ASCII letter
  or digit, or an apostrophe that follows one, no token starts with a lower-case letter (``False``);
- anything else is undecided (``None``: the caller tokenizes).
"""

from __future__ import annotations

import re

#: 2+ lower-case ASCII letters between whitespace (``re``'s ``\s`` is ``str.isspace``, as ``str.split``'s), the
#: text's ends or characters the Treebank tokenizer always cuts off (brackets, ``;@#$%&?!*"``).
_LOWER_CHUNK = re.compile(r'(?<![^\s()\[\]{}<>;@#$%&?!*"])[a-z]{2,}(?![^\s()\[\]{}<>;@#$%&?!*"])')
#: A lower-case letter that could start a token: not after a letter or digit, nor after one's apostrophe.
_LOWER_START = re.compile(r"(?<![A-Za-z0-9])(?<![A-Za-z0-9]')[a-z]")
#: Where the tokenizer cuts between two word characters (any case; ``N'T`` leaves an upper-case token).
_WORD_CUT = re.compile(r"(?i)cannot|gimme|gonna|gotta|lemme|wanna|n't")


def lower_start_word(text: str) -> bool | None:
    """Whether some token ``w`` of ``nltk.word_tokenize(text)`` has ``w[0].islower()`` and ``w[1:]`` all upper
    or all lower case; None when this cannot tell without tokenizing."""
    if _LOWER_CHUNK.search(text) is not None:
        return True
    if text.isascii() and _LOWER_START.search(text) is None and _WORD_CUT.search(text) is None:
        return False
    return None
