"""nltk's Punkt sentence splitter, the same sentences, with its two slow steps made cheap.

``PunktSentenceTokenizer.tokenize`` finds the candidate breaks (a ``.``, ``?`` or ``!`` and what
follows), and for each one tokenizes and annotates the candidate's short context (the word before,
the mark, the next token) to decide (``text_contains_sentbreak``). That decision is a pure function
of the context string and the model's parameters, so it is kept per context (bounded: cleared when
full); contexts such as "it. The" recur within a response, across IFEval's loose variants of it and
across responses. Finding the word before a candidate scans back for the last whitespace character
one character at a time in Python (``_get_last_whitespace_index``); ``str.rfind`` gives the same index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Contexts whose decision is kept (a context is a few words).
MAX_CACHED_CONTEXTS = 100_000


def punkt_tokenizer(params: Any) -> Callable[[str], list[str]]:
    """``PunktSentenceTokenizer(params).tokenize``, deciding each distinct candidate context once."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    class CachedPunkt(PunktSentenceTokenizer):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(params)
            self._decided: dict[str, bool] = {}

        def text_contains_sentbreak(self, text: str) -> bool:
            decided = self._decided.get(text)
            if decided is None:
                if len(self._decided) >= MAX_CACHED_CONTEXTS:
                    self._decided.clear()
                decided = self._decided[text] = super().text_contains_sentbreak(text)
            return decided

        def _get_last_whitespace_index(self, text: str) -> int:
            last = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"), text.rfind("\r"), text.rfind("\x0b"),
                       text.rfind("\x0c"))  # string.whitespace, each character
            return last if last > 0 else 0

    return CachedPunkt().tokenize
