"""Step-classification metrics, pure: accuracy and F1 with "wrong step" as the positive class.

F1 is reported for the WRONG class (label 0): wrong steps are the minority (about 18% in the
generated set) and finding them is the PRM's job, so a model that calls every step correct
scores the majority-class accuracy but an F1 of 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class StepMetrics:
    accuracy: float
    f1_wrong: float  # F1 of the "wrong step" class (positive = label 0 / False)
    precision_wrong: float
    recall_wrong: float
    majority_baseline: float  # accuracy of always predicting the more frequent label
    num_steps: int


def step_metrics(predicted_correct: Sequence[bool], is_correct: Sequence[bool]) -> StepMetrics:
    """Metrics of per-step predictions (True = correct) against labels (True = correct)."""
    if len(predicted_correct) != len(is_correct):
        raise ValueError(f"{len(predicted_correct)} predictions for {len(is_correct)} labels")
    n = len(is_correct)
    if n == 0:
        raise ValueError("no steps to score")
    true_pos = sum(1 for p, y in zip(predicted_correct, is_correct) if not p and not y)
    pred_pos = sum(1 for p in predicted_correct if not p)
    actual_pos = sum(1 for y in is_correct if not y)
    precision = true_pos / pred_pos if pred_pos else 0.0
    recall = true_pos / actual_pos if actual_pos else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    accuracy = sum(1 for p, y in zip(predicted_correct, is_correct) if p == y) / n
    return StepMetrics(accuracy, f1, precision, recall, max(actual_pos, n - actual_pos) / n, n)
