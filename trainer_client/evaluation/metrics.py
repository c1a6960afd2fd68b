"""Evaluation metrics over scored samples: accuracy, pass@k, maj@k, mean reward, unscored rate.

Pure functions, no I/O. A sample is one completion of one prompt with the reward service's
verdict: its score (``None`` when the service could not score it) and the answer it
extracted. A scored sample is *correct* when its score is at least ``correct_at``.

Unscored samples never count as wrong: they are counted (``unscored``, ``unscored_rate``)
and left out of every denominator. So a prompt's pass@k and maj@k use its scored samples
only; a prompt with fewer than k scored samples has no pass@k / maj@k and is counted in
``pass@k/prompts_skipped``.

- ``accuracy``: correct / scored samples (with greedy decoding, n = 1: the greedy accuracy).
- ``pass@k``: Chen et al. 2021's unbiased estimator ``1 - C(n-c, k) / C(n, k)`` per prompt
  (n scored samples, c correct), averaged over prompts.
- ``maj@k``: a majority vote over the ``extracted`` answers of k scored samples; ties go to
  the answer seen first (sample order), and the vote is right when the winning answer's
  first sample is correct. A prompt's scored samples are cut into disjoint blocks of k
  (samples 1..k, k+1..2k, ...; a last block shorter than k is dropped) and its maj@k is
  the mean over the blocks: with n = k one vote, and maj@1 equals the fraction correct.
"""

from __future__ import annotations

import collections
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The key of the all-tasks summary next to the per-task ones.
OVERALL = "overall"


@dataclass(frozen=True)
class Sample:
    """One completion's verdict: ``score`` is None when the reward service could not score it."""

    prompt_id: str
    task: str
    score: float | None
    extracted: str = ""
    status: str = "OK"

    @property
    def scored(self) -> bool:
        return self.score is not None


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one prompt with ``n`` samples of which ``c`` are correct (Chen et al. 2021)."""
    if k < 1:
        raise ValueError(f"pass@k needs k >= 1, got {k}")
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n, got c={c}, n={n}")
    if n < k:
        raise ValueError(f"pass@{k} needs at least k={k} samples per prompt, got n={n}: sample more (--n) or "
                         f"lower k")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def majority_answer(answers: Sequence[str]) -> int:
    """Index of the first occurrence of the most frequent answer (ties: the answer seen first)."""
    if not answers:
        raise ValueError("a majority vote needs at least one answer")
    counts = collections.Counter(answers)
    best = max(counts.values())
    return next(i for i, a in enumerate(answers) if counts[a] == best)


def maj_at_k(correct: Sequence[bool], answers: Sequence[str], k: int) -> float:
    """Mean over the disjoint blocks of ``k`` samples of "the block's majority answer is correct" (1 or 0)."""
    if len(correct) != len(answers):
        raise ValueError("maj@k needs one answer per sample")
    if k < 1 or len(answers) < k:
        raise ValueError(f"maj@{k} needs k >= 1 and at least k samples, got {len(answers)}")
    votes = [1.0 if correct[start + majority_answer(answers[start: start + k])] else 0.0
             for start in range(0, len(answers) - k + 1, k)]
    return statistics.fmean(votes)


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(samples: Iterable[Sample], ks: Sequence[int], correct_at: float = 1.0) -> dict[str, Any]:
    """The metrics of one set of samples (a task's, or all of them); ``ks`` the k of pass@k and maj@k."""
    by_prompt: dict[str, list[Sample]] = collections.defaultdict(list)
    for s in samples:
        by_prompt[s.prompt_id].append(s)
    everything = [s for group in by_prompt.values() for s in group]
    scored = [s for s in everything if s.scored]
    out: dict[str, Any] = {
        "prompts": len(by_prompt), "samples": len(everything), "scored": len(scored),
        "unscored": len(everything) - len(scored),
        "unscored_rate": (len(everything) - len(scored)) / len(everything) if everything else None,
        "accuracy": _mean([1.0 if s.score >= correct_at else 0.0 for s in scored]),  # type: ignore[operator]
        "reward_mean": _mean([s.score for s in scored]),  # type: ignore[misc]
    }
    for k in ks:
        passes, majs, skipped = [], [], 0
        for group in by_prompt.values():
            ok = [s for s in group if s.scored]
            if len(ok) < k:
                skipped += 1
                continue
            correct = [s.score >= correct_at for s in ok]  # type: ignore[operator]
            passes.append(pass_at_k(len(ok), sum(correct), k))
            majs.append(maj_at_k(correct, [s.extracted for s in ok], k))
        out[f"pass@{k}"] = _mean(passes)
        out[f"maj@{k}"] = _mean(majs)
        out[f"pass@{k}/prompts_skipped"] = skipped
    return out


def summarize_by_task(samples: Sequence[Sample], ks: Sequence[int], n: int,
                      correct_at: float = 1.0) -> dict[str, dict[str, Any]]:
    """``{"overall": metrics, task: metrics, ...}``; refuses a k larger than ``n`` (samples per prompt)."""
    check_ks(ks, n)
    tasks = sorted({s.task for s in samples})
    out = {OVERALL: summarize(samples, ks, correct_at)}
    for task in tasks:
        out[task] = summarize([s for s in samples if s.task == task], ks, correct_at)
    return out


def check_ks(ks: Sequence[int], n: int) -> None:
    """Raises ValueError unless every k is in 1..n."""
    if not ks:
        raise ValueError("need at least one k for pass@k / maj@k")
    bad = [k for k in ks if k < 1 or k > n]
    if bad:
        raise ValueError(f"k={bad} impossible with n={n} samples per prompt: every k must be in 1..n "
                         f"(raise --n / run.eval_n, or lower k)")


def flat_metrics(summary: Mapping[str, Mapping[str, Any]], prefix: str = "eval/") -> dict[str, Any]:
    """``{"eval/accuracy": .., "eval/gsm8k/pass@4": ..}``: the overall metrics unnested, the tasks' under their name."""
    out: dict[str, Any] = {}
    for task, metrics in summary.items():
        head = prefix if task == OVERALL else f"{prefix}{task}/"
        out.update({f"{head}{key}": value for key, value in metrics.items()})
    return out
