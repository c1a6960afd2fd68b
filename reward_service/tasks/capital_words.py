"""IFEval's capital-word count without tokenizing: how many of ``nltk.word_tokenize(text)``'s tokens are
upper case (``change_case:capital_word_frequency``), the same number, for the texts it can decide.

``word_tokenize`` (Punkt sentences, then the Treebank tokenizer on each) only ever cuts a
whitespace-separated chunk into pieces, and a piece is upper case when it holds an upper-case
character and no lower-case one (``str.isupper``). So a chunk without an upper-case character adds
nothing, however it is cut. A chunk with one is counted here when it is ASCII without an apostrophe:
its "hard" characters (``"`` ``` ` ``` ``;@#$%&?!*()[]{}<>``) always stand alone, and between two runs of
letters the tokenizer cuts only at ``--``, at ``..``, and at a ``,`` or ``:`` not followed by a digit
(a final period or a sentence break falls after the last letter). Anything else (an upper-case chunk
with an apostrophe or a non-ASCII character, a letter run one of the Treebank contractions split
(``cannot``, ``gonna``, ...), a ``.:`` where a Punkt break could fall) is undecided: ``None``, and the
caller tokenizes.
"""

from __future__ import annotations

import re

_ASCII_CAPITAL = re.compile(r"[A-Z]")
_HARD = re.compile(r"[\"`;@#$%&?!*()\[\]{}<>]")
_LETTERS = re.compile(r"[A-Za-z]+")
#: A cut between two letter runs: ``--``, two or more dots, or a comma or colon before a non-digit.
_CUT = re.compile(r"--|\.\.|[:,](?![0-9])")
#: The letter runs the Treebank contractions split in two (``(?i)\b(can)(not)\b`` and the like).
_CONTRACTED = frozenset({"cannot", "gimme", "gonna", "gotta", "lemme", "wanna"})


def _upper_pieces(segment: str) -> int | None:
    """Upper-case pieces of one segment (no hard character, ASCII, no apostrophe); None when undecided."""
    count, upper, lower, end = 0, False, False, -1
    for run in _LETTERS.finditer(segment):
        letters = run.group()
        if letters.lower() in _CONTRACTED:
            return None
        if end >= 0:
            between = segment[end:run.start()]
            if ".:" in between:
                return None
            if _CUT.search(between):
                count += upper and not lower
                upper = lower = False
        upper = upper or letters != letters.lower()
        lower = lower or letters != letters.upper()
        end = run.end()
    return count + (upper and not lower)


def count_capital_words(text: str) -> int | None:
    """``sum(1 for w in nltk.word_tokenize(text) if w.isupper())``, or None when this cannot decide."""
    if not text.isascii() and any(c.isupper() for c in set(text) if not c.isascii()):
        return None
    total = 0
    for chunk in text.split():  # what ``\S+`` finds: ``re``'s ``\s`` is ``str.isspace``
        if chunk.islower():  # no upper-case letter: nothing to count, however it is cut
            continue
        if not chunk.isascii():
            if _ASCII_CAPITAL.search(chunk):
                return None
            continue
        if chunk == chunk.lower():  # no capital
            continue
        if "'" in chunk:
            return None
        if chunk.isalpha():  # one run of letters: one piece, upper case or not
            if chunk.lower() in _CONTRACTED:
                return None
            total += chunk.isupper()
            continue
        for segment in _HARD.split(chunk):
            pieces = _upper_pieces(segment)
            if pieces is None:
                return None
            total += pieces
    return total
