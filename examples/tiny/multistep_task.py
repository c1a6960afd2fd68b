"""A multi-step arithmetic task for process supervision, graded by the server's ``steps`` task.

Why: process supervision (a score per reasoning step) only differs from outcome
supervision when a completion has several steps that can go wrong separately. Chained
sums of single digits, worked out one operation per line, give exactly that::

    What is 7 + 5 - 3?   ->   7 + 5 = 12        step 1: checked (7 + 5 = 12 holds)
                              12 - 3 = 9        step 2: checked on its own (12 - 3 = 9 holds)
                              #### 9            the answer line: no claim, neutral; graded as the outcome

The ``steps`` task splits the completion into lines and checks each line's ``a op b = c``
exactly; its ``outcome`` component grades the ``####`` answer as ``gsm8k`` does. A step is
checked on its own: ``7 + 5 = 13`` is wrong, the ``13 - 3 = 10`` after it is right.

:func:`warm_start` teaches a tiny policy the format with a short, label-smoothed warm-up
(see ``make_start``: the policy knows the task greedily but samples noisily, so sampled
completions often get a step wrong); :func:`evaluate` measures a policy on held-out
problems with the server's own ``StepsTask`` code (one scoring path for training and
evaluation): final-answer accuracy and step accuracy, the share of checked steps that hold.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from examples.tiny.arithmetic_task import Problem, TaskConfig, make_problems
from examples.tiny.model import build_tiny_lm
from examples.tiny.tokenizer import build_tokenizer
from examples.tiny.warmup import WarmupStats, sample_completions, warmup
from reward_service.tasks.steps_task import StepsTask

STEPS_TASK_NAME = "steps"
#: Two operations (+ and -) on operands 1..9, no negative intermediate result: 3 lines, 2 checked.
MULTISTEP = TaskConfig(max_operand=9, min_ops=2, max_ops=2, operators="+-")
MAX_NEW_TOKENS = 40  # the longest target ("9 + 9 = 18\n18 + 9 = 27\n#### 27") is 30 characters


def steps_rows(problems: Iterable[Problem], id_prefix: str = "multi") -> list[dict]:
    """The trainer's dataset rows: ``{"id", "prompt", "reference": {"answer": "N"}, "task": "steps"}``."""
    return [{"id": f"{id_prefix}-{i:06d}", "prompt": p.prompt, "reference": {"answer": p.answer},
             "task": STEPS_TASK_NAME} for i, p in enumerate(problems)]


def write_steps_jsonl(path: str | Path, problems: Iterable[Problem], id_prefix: str = "multi") -> int:
    """Writes one ``steps`` dataset row per problem; returns how many were written."""
    rows = steps_rows(problems, id_prefix)
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return len(rows)


def warm_start(seed: int = 0, steps: int = 1000, label_smoothing: float = 0.05, lr: float = 5e-3, size: str = "nano",
               pool: int = 4000, pool_seed: int = 1) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, WarmupStats]:
    """A tiny policy warmed up on the multi-step format (deterministic for a seed and thread count).

    The defaults (1,000 steps, label smoothing 0.05; ~50 s on one core) give greedy decoding
    right ~99% of the time but sampling at T=1 right ~28%: ~1 checked step in 5 is wrong, and
    many lines come out malformed (a stray tab or letter) so the verifier cannot check them.
    """
    tokenizer = build_tokenizer()
    model = build_tiny_lm(tokenizer, size, seed=seed)
    model.generation_config.max_new_tokens = MAX_NEW_TOKENS
    stats = warmup(model, tokenizer, make_problems(pool, pool_seed, MULTISTEP), steps=steps, lr=lr, seed=seed,
                   label_smoothing=label_smoothing)
    return model, tokenizer, stats


@dataclass(frozen=True)
class StepEval:
    """A policy's grades on ``n`` problems (one completion each)."""

    n: int
    final_correct: int  # completions whose ``####`` answer is right (the steps task's ``outcome``)
    steps_checked: int  # steps with a checkable claim, over all completions
    steps_correct: int

    @property
    def final_accuracy(self) -> float:
        return self.final_correct / self.n if self.n else float("nan")

    @property
    def step_accuracy(self) -> float:
        return self.steps_correct / self.steps_checked if self.steps_checked else float("nan")

    @property
    def final_stderr(self) -> float:
        """Binomial standard error of ``final_accuracy``."""
        p = self.final_accuracy
        return math.sqrt(p * (1 - p) / self.n) if self.n else float("nan")

    def as_dict(self) -> dict:
        return {"n": self.n, "final_accuracy": self.final_accuracy, "final_stderr": self.final_stderr,
                "step_accuracy": self.step_accuracy, "steps_checked": self.steps_checked,
                "steps_correct": self.steps_correct}


def grade(completions: Sequence[str], answers: Sequence[str], task: StepsTask | None = None) -> StepEval:
    """Grades completions with the server's ``steps`` task code (outcome and step scores)."""
    task = task or StepsTask()
    final = checked = correct = 0
    for completion, answer in zip(completions, answers, strict=True):
        outcome = task.score(completion, {"answer": answer})
        final += int(outcome.components.get("outcome", 0.0) == 1.0)
        scored = [s for s in outcome.steps if s.scored]
        checked += len(scored)
        correct += sum(1 for s in scored if s.score == 1.0)
    return StepEval(len(completions), final, checked, correct)


def evaluate(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, problems: Sequence[Problem], *,
             temperature: float = 1.0, seed: int = 0, max_new_tokens: int = MAX_NEW_TOKENS) -> StepEval:
    """One completion per problem (sampled with ``seed``; ``temperature=0``: greedy), graded by :func:`grade`."""
    completions = sample_completions(model, tokenizer, [p.prompt for p in problems], temperature=temperature,
                                     max_new_tokens=max_new_tokens, seed=seed)
    return grade(completions, [p.answer for p in problems])
