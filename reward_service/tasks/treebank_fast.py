"""nltk's Treebank word tokenizer (``NLTKWordTokenizer().tokenize``, what ``word_tokenize`` runs on each
Punkt sentence), the same tokens, without its twenty-odd regex passes for the plain sentences most are.

Each rule of the tokenizer acts on punctuation, quotes, apostrophes, brackets or dashes, except the
contractions (``can|not``, ``gim|me``, ``gon|na``, ``got|ta``, ``lem|me``, ``wan|na``), and it ends in
``str.split``. In an ASCII sentence of letters, digits, whitespace, single hyphens (only ``--`` is cut),
``;@#$%&?!*`` and brackets (always cut off), and ``,`` or ``:`` each followed by a character other than
``,:.`` (the rule ``([:,])([^\\d])`` cuts it off unless a digit follows), with no contraction and at most
one period, its last character before trailing whitespace and after a letter or digit (the
final-period rule cuts it off), the tokens are these cuts then a split. Anything else goes to nltk.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: The sentences this decides (see the module).
_PLAIN = re.compile(r"(?:[A-Za-z0-9\s;@#$%&?!*()\[\]{}<>]|(?<!-)-(?!-)|[:,](?=[^,:.]))*(?:(?<=[A-Za-z0-9])\.\s*)?")
#: Letter runs the contractions cut (any case; a superset of the tokenizer's ``\b``-bounded patterns).
_CONTRACTION = re.compile(r"(?i)cannot|gimme|gonna|gotta|lemme|wanna")
#: What stands alone in a plain sentence: ``,`` or ``:`` not before a digit, ``;@#$%&?!*`` and brackets.
_CUT_OFF = re.compile(r"[:,](?!\d)|[;@#$%&?!*()\[\]{}<>]")


def plain_tokens(sentence: str) -> list[str] | None:
    """``NLTKWordTokenizer().tokenize(sentence)`` for a plain sentence (see the module); None otherwise."""
    if not sentence.isascii() or _PLAIN.fullmatch(sentence) is None or _CONTRACTION.search(sentence):
        return None
    body = sentence.rstrip()
    final = body.endswith(".")
    words = _CUT_OFF.sub(r" \g<0> ", body[:-1] if final else body).split()
    return [*words, "."] if final else words


def fast_treebank(tokenize: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``tokenize`` (nltk's Treebank tokenizer), answered by splitting for the plain sentences."""
    def tokens(sentence: str) -> list[str]:
        plain = plain_tokens(sentence)
        return plain if plain is not None else tokenize(sentence)
    return tokens
