"""N-gram repetition penalty ("Demystifying Long Chain-of-Thought Reasoning", appendix C.2).

open-r1's ``get_repetition_penalty_reward`` counts n-grams of lower-cased, whitespace-split words
(:func:`words`); TRL's counts n-grams of token ids. Both are :func:`repetition_penalty` over a
different sequence of units.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def words(text: str) -> list[str]:
    """open-r1's units: the lower-cased text split on runs of whitespace."""
    return text.lower().split()


def repetition_penalty(units: Sequence[Hashable], ngram_size: int, max_penalty: float) -> float:
    """``(1 - distinct n-grams / n-grams) * max_penalty``: 0 with no n-gram repeated, towards
    ``max_penalty`` (<= 0) as the sequence repeats itself; 0 for fewer than ``ngram_size`` units."""
    if ngram_size < 1:
        raise ValueError(f"ngram_size must be >= 1, got {ngram_size}")
    if len(units) < ngram_size:
        return 0.0
    ngrams = list(zip(*(units[shift:] for shift in range(ngram_size))))  # the n-gram starting at each unit
    total, distinct = len(ngrams), len(set(ngrams))
    if distinct == total:
        return 0.0  # not -0.0
    return (1.0 - distinct / total) * max_penalty
