"""Format shaping on tags: open-r1's ``tag_count_reward``, and the answer after the reasoning
(TRL's ``reasoning_accuracy_reward`` grades only the text after ``</think>``)."""

from __future__ import annotations

from collections.abc import Sequence

#: The four tags of open-r1's ``format_reward``, each with the newlines it expects around it.
R1_TAGS = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")


def tag_count(text: str, tags: Sequence[str] = R1_TAGS) -> float:
    """The share of ``tags`` that occur exactly once in ``text`` (0.25 per tag for the four R1 tags)."""
    if not tags:
        raise ValueError("tag_count needs at least one tag")
    return sum(1 for tag in tags if text.count(tag) == 1) / len(tags)


def answer_after_reasoning(text: str, delimiters: Sequence[str] = ("</think>",)) -> str | None:
    """The text after the last occurrence of the first delimiter that occurs, or None when none
    does (the reasoning never finished)."""
    for delimiter in delimiters:
        if delimiter and delimiter in text:
            return text.rpartition(delimiter)[2]
    return None
