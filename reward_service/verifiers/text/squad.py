"""SQuAD-style answer comparison: normalisation, exact match and token F1, best over several golds.

Definitions follow the SQuAD v1.1 official evaluation script: lower-case, drop ASCII punctuation
(``string.punctuation``), drop the articles a/an/the as whole words, collapse whitespace; F1 is
over the bag of normalised tokens (a multiset intersection); a prediction is scored against each
gold and the best score kept. One case the v1.1 script leaves at 0 (a prediction and a gold that
both normalise to nothing) scores 1 here, as in the v2.0 script: they are equal under EM too.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ARTICLES_ANY_CASE = re.compile(r"\b(a|an|the)\b", re.IGNORECASE)


def normalize_answer(text: str, *, case_sensitive: bool = False) -> str:
    """SQuAD normalisation; ``case_sensitive`` keeps letter case (articles still go, in any case)."""
    lowered = text if case_sensitive else text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = (_ARTICLES_ANY_CASE if case_sensitive else _ARTICLES).sub(" ", no_punct)
    return " ".join(no_articles.split())


def exact_match(prediction_norm: str, gold_norm: str) -> float:
    """1.0 when the two normalised strings are equal."""
    return 1.0 if prediction_norm == gold_norm else 0.0


def token_f1(prediction_norm: str, gold_norm: str) -> float:
    """Token-level F1 of two normalised strings (whitespace tokens, multiset overlap)."""
    pred_tokens, gold_tokens = prediction_norm.split(), gold_norm.split()
    if not pred_tokens or not gold_tokens:
        return 1.0 if pred_tokens == gold_tokens else 0.0
    overlap = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred_tokens), overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def best_over_golds(prediction_norm: str, golds_norm: Iterable[str], metric) -> tuple[float, int]:
    """``max(metric(prediction, gold))`` over the golds, with the index of the first best gold."""
    best, best_index = -1.0, -1
    for index, gold in enumerate(golds_norm):
        value = metric(prediction_norm, gold)
        if value > best:
            best, best_index = value, index
    return max(best, 0.0), best_index
