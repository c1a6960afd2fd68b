"""Character-level string similarity in [0, 1], two definitions.

- ``difflib``: :class:`difflib.SequenceMatcher` ratio, ``2*M/T`` where M counts the characters of
  the matching blocks it finds (Ratcliff/Obershelp) and T the total length; ``autojunk`` is off
  so that long strings are not judged by a popularity heuristic.
- ``indel``: the normalised InDel similarity ``2*LCS/T`` (LCS: the longest common subsequence),
  the measure rapidfuzz's ``fuzz.ratio`` reports (divided by 100). The LCS length is computed
  with the bit-parallel recurrence of Allison and Dix / Hyyrö: one big-integer step per
  character of the second string.
Both are 1.0 for two empty strings.
"""

from __future__ import annotations

import difflib

ALGORITHMS = ("difflib", "indel")


def difflib_ratio(gold: str, prediction: str) -> float:
    if not gold and not prediction:
        return 1.0
    return difflib.SequenceMatcher(None, gold, prediction, autojunk=False).ratio()


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of ``a`` and ``b``."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, ch in enumerate(a):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    width = (1 << len(a)) - 1
    row = width
    for ch in b:
        matches = row & masks.get(ch, 0)
        row = ((row + matches) | (row - matches)) & width
    return len(a) - row.bit_count()


def indel_similarity(gold: str, prediction: str) -> float:
    total = len(gold) + len(prediction)
    if total == 0:
        return 1.0
    return 2 * lcs_length(gold, prediction) / total


def similarity(gold: str, prediction: str, algorithm: str = "difflib") -> float:
    """The similarity of ``prediction`` to ``gold`` under ``algorithm`` (one of :data:`ALGORITHMS`)."""
    if algorithm == "indel":
        return indel_similarity(gold, prediction)
    if algorithm == "difflib":
        return difflib_ratio(gold, prediction)
    raise ValueError(f"unknown similarity algorithm {algorithm!r}; use one of {ALGORITHMS}")
