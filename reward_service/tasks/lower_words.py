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
_WORD_CUTS = ("cannot", "gimme", "gonna", "gotta", "lemme", "wanna", "n't")
_WORD_CUT = re.compile("(?i)" + "|".join(_WORD_CUTS))


def _class_table(classes: dict[str, str], other: str) -> bytes:
    """A ``bytes.translate`` table sending each ASCII character to the class whose pattern it matches."""
    patterns = {name: re.compile(pattern) for name, pattern in classes.items()}
    return bytes(ord(next((name for name, pattern in patterns.items() if pattern.fullmatch(chr(code))), other))
                 for code in range(256))


#: ASCII text in ``_LOWER_CHUNK``'s classes: ``l`` a lower-case letter, `` `` a space or a character always cut
#: off (the class of its lookarounds), ``x`` anything else; a chunk is then `` ll+ `` in the text between spaces.
_CHUNK_CLASSES = _class_table({"l": "[a-z]", " ": r'[\s()\[\]{}<>;@#$%&?!*"]'}, "x")
_CHUNK_IN_CLASSES = re.compile(rb" ll+ ")
#: ASCII text in ``_LOWER_START``'s classes: ``l`` a lower-case letter, ``A`` an upper-case one or a digit, ``'``
#: the apostrophe, `` `` anything else; a lower-case letter then starts a token at the text's start, after the
#: start's apostrophe, after `` ``, or after an apostrophe that follows `` `` or ``'``.
_START_CLASSES = _class_table({"l": "[a-z]", "A": "[A-Z0-9]", "'": "'"}, " ")
_STARTS_IN_CLASSES = (b" l", b" 'l", b"''l")


def _has_lower_chunk(text: str) -> bool:
    """``_LOWER_CHUNK.search(text)``; for ASCII text a byte table and one literal-led search instead of a
    lookbehind tried at every character."""
    if text.isascii():
        return _CHUNK_IN_CLASSES.search(b" " + text.encode("ascii").translate(_CHUNK_CLASSES) + b" ") is not None
    return _LOWER_CHUNK.search(text) is not None


def _has_lower_start(text: str) -> bool:
    """``_LOWER_START.search(text)`` for ASCII ``text``, by substring searches in its classes."""
    classes = text.encode("ascii").translate(_START_CLASSES)
    return classes.startswith((b"l", b"'l")) or any(start in classes for start in _STARTS_IN_CLASSES)


def _has_word_cut(text: str) -> bool:
    """``_WORD_CUT.search(text)`` for ASCII ``text`` (where ignoring case is lower-casing)."""
    lowered = text.lower()
    return any(cut in lowered for cut in _WORD_CUTS)


def lower_start_word(text: str) -> bool | None:
    """Whether some token ``w`` of ``nltk.word_tokenize(text)`` has ``w[0].islower()`` and ``w[1:]`` all upper
    or all lower case; None when this cannot tell without tokenizing."""
    if _has_lower_chunk(text):
        return True
    if text.isascii() and not _has_lower_start(text) and not _has_word_cut(text):
        return False
    return None
