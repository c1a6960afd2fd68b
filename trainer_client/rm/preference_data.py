"""Preference pairs: JSONL I/O and a generator of verifiable math preferences.

One pair per line: ``{"prompt": str, "chosen": str, "rejected": str}``, optional ``"margin"``
(number) and ``"meta"`` (anything; the generator writes family/template/kind there, and
evaluation reports accuracy per ``meta.kind``). Malformed lines stop reading with
``path:line: what is wrong``.

The generator (``trainer-client make-prefs``) builds problems from templates in five
families — arithmetic word problems, unit conversion, simple algebra, comparisons, computed
facts. A problem is a small program of arithmetic steps; the chosen answer shows the steps
and ends with ``Answer: <number>``. The rejected answer to the same prompt, in the same
writing style, is one of:

- ``arith_slip``       one step off by one, carried through (a self-consistent wrong answer);
- ``swapped_operands`` ``b - a`` for ``a - b`` (or ``÷``), carried through;
- ``wrong_operation``  ``+`` for ``-``, ``×`` for ``+``, ``min`` for ``max``..., carried through;
- ``off_by_one_answer`` correct steps, final answer off by one;
- ``contradictory``    correct final answer, but a step shows a wrong result;
- ``no_answer_line``, ``truncated``, ``rambling``, ``sloppy`` — the right number, badly presented.

The test split uses templates and filler sentences the train split never sees, and numbers
from a disjoint range, so accuracy on it measures generalization rather than memory.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from trainer_client.jsonl_rows import iter_rows, write_rows
from trainer_client.rm.preference_templates import (
    FILLERS_TEST,
    FILLERS_TRAIN,
    TEMPLATES,
    Program,
    Step,
    Template,
    fmt,
)


class PreferenceDataError(ValueError):
    """A preference file is malformed; the message starts with ``path:line:``."""


@dataclass(frozen=True)
class PreferencePair:
    prompt: str
    chosen: str
    rejected: str
    margin: float | None = None
    meta: Any = None

    @property
    def kind(self) -> str | None:
        return self.meta.get("kind") if isinstance(self.meta, dict) else None

    def to_json(self) -> dict:
        row: dict[str, Any] = {"prompt": self.prompt, "chosen": self.chosen, "rejected": self.rejected}
        if self.margin is not None:
            row["margin"] = self.margin
        if self.meta is not None:
            row["meta"] = self.meta
        return row


def parse_pair(row: Any, where: str) -> PreferencePair:
    """Validate one decoded JSON row; ``where`` (``path:line``) prefixes every error."""
    if not isinstance(row, dict):
        raise PreferenceDataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [k for k in ("prompt", "chosen", "rejected") if k not in row]
    if missing:
        raise PreferenceDataError(f"{where}: missing field(s) {missing}; each line needs prompt, chosen, rejected")
    for key in ("prompt", "chosen", "rejected"):
        if not isinstance(row[key], str):
            raise PreferenceDataError(f"{where}: field {key!r} must be a string, got {type(row[key]).__name__}")
    margin = row.get("margin")
    if margin is not None:
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin):
            raise PreferenceDataError(f"{where}: 'margin' must be a finite number, got {margin!r}")
        margin = float(margin)
    return PreferencePair(row["prompt"], row["chosen"], row["rejected"], margin, row.get("meta"))


def iter_preferences(path: str | Path) -> Iterator[PreferencePair]:
    return iter_rows(path, parse_pair, PreferenceDataError)


def read_preferences(path: str | Path) -> list[PreferencePair]:
    """All pairs of a JSONL file; PreferenceDataError (``path:line: ...``) on the first bad line."""
    pairs = list(iter_preferences(path))
    if not pairs:
        raise PreferenceDataError(f"{path}: no preference pairs (empty file)")
    return pairs


def write_preferences(path: str | Path, pairs: Iterable[PreferencePair]) -> int:
    return write_rows(path, (pair.to_json() for pair in pairs))


# ----------------------------------------------------------------------------- generator

# Rejected kinds and their sampling weights.
KIND_WEIGHTS: dict[str, float] = {
    "arith_slip": 1.0, "swapped_operands": 1.0, "wrong_operation": 1.5, "off_by_one_answer": 1.5,
    "contradictory": 1.5, "no_answer_line": 1.0, "truncated": 1.0, "rambling": 1.0, "sloppy": 0.5,
}
TRAIN_NUMBERS = (2, 60)
TEST_NUMBERS = (61, 150)


@dataclass(frozen=True)
class SplitSpec:
    name: str
    numbers: tuple[int, int]
    fillers: tuple[str, ...]
    templates: tuple[Template, ...] = field(default=())


def split_spec(name: str) -> SplitSpec:
    """``train``: the non-held-out templates, numbers 2..60; ``test``: held-out templates, 61..150."""
    if name not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {name!r}")
    held_out = name == "test"
    templates = tuple(t for t in TEMPLATES if t.held_out == held_out)
    numbers, fillers = (TEST_NUMBERS, FILLERS_TEST) if held_out else (TRAIN_NUMBERS, FILLERS_TRAIN)
    return SplitSpec(name, numbers, fillers, templates)


def generate_pairs(n: int, seed: int, split: str) -> list[PreferencePair]:
    """``n`` deterministic pairs (same ``seed`` and ``split`` -> same pairs)."""
    spec = split_spec(split)
    rng = random.Random(f"{seed}:{split}")
    kinds, weights = zip(*KIND_WEIGHTS.items())
    pairs = []
    while len(pairs) < n:
        template = rng.choice(spec.templates)
        program = template.build(rng, *spec.numbers)
        kind = rng.choices(kinds, weights)[0]
        style = rng.choice(STYLES)
        rejected = make_rejected(program, kind, style, rng, spec.fillers)
        if rejected is None:  # e.g. no non-commutative step to swap: draw again
            continue
        chosen = render(program.steps, program.answer(), style)
        if rejected == chosen:
            continue
        meta = {"family": template.family, "template": template.name, "kind": kind, "split": split}
        pairs.append(PreferencePair(format_prompt(program.question, rng), chosen, rejected, None, meta))
    return pairs


PROMPT_SUFFIXES = (
    "Show your reasoning, then give the final line as 'Answer: <number>'.",
    "Explain step by step and finish with 'Answer: <number>'.",
    "Work it out and end with a line 'Answer: <number>'.",
)


def format_prompt(question: str, rng: random.Random) -> str:
    return f"{question} {rng.choice(PROMPT_SUFFIXES)}"


def _step_line(step: Step, result: Fraction, style: int, index: int) -> str:
    expr = step.expr()
    if style == 0:
        return f"Step {index + 1}: {step.label}: {expr} = {fmt(result)}."
    if style == 1:
        return f"{step.label[0].upper()}{step.label[1:]} is {expr} = {fmt(result)}."
    return f"{expr} = {fmt(result)}, which is the {step.label}."


STYLES = (0, 1, 2)


def render(steps: tuple[Step, ...], answer: Fraction, style: int, shown: dict[int, Fraction] | None = None) -> str:
    """Steps one per line, then ``Answer: <number>``; ``shown`` overrides displayed step results."""
    lines = [_step_line(s, (shown or {}).get(i, s.result), style, i) for i, s in enumerate(steps)]
    return "\n".join(lines + [f"Answer: {fmt(answer)}"])


def _bump(rng: random.Random) -> int:
    return rng.choice((-1, 1))


def make_rejected(program: Program, kind: str, style: int, rng: random.Random,
                  fillers: tuple[str, ...]) -> str | None:
    """The rejected response of ``kind`` for ``program``, or None when that kind does not apply."""
    steps, answer = program.steps, program.answer()
    k = rng.randrange(len(steps))
    if kind in _CORRUPTIONS:
        wrong = _CORRUPTIONS[kind](program, k, rng)
        if wrong is None or wrong.answer() == answer:
            return None
        return render(wrong.steps, wrong.answer(), style)
    if kind == "off_by_one_answer":
        return render(steps, answer + _bump(rng), style)
    if kind == "contradictory":
        return render(steps, answer, style, shown={k: steps[k].result + rng.choice((-2, -1, 1, 2, 10))})
    full = render(steps, answer, style)
    if kind == "no_answer_line":
        return full.rsplit("\n", 1)[0]
    if kind == "truncated":
        body = full.rsplit("\n", 1)[0]
        return body[: max(8, int(len(body) * rng.uniform(0.3, 0.8)))].rstrip()
    if kind == "rambling":
        lines = full.split("\n")
        out = []
        for line in lines[:-1]:
            out += [rng.choice(fillers), line]
        out += [rng.choice(fillers), rng.choice(fillers), lines[-1]]
        return " ".join(out)
    if kind == "sloppy":
        return f"{fmt(answer)} i think?? " + " ".join(s.expr() for s in steps).lower() + " whatever"
    raise ValueError(f"unknown rejected kind {kind!r}")


def _swap(program: Program, k: int, rng: random.Random) -> Program | None:
    candidates = [i for i, s in enumerate(program.steps) if s.op in ("-", "÷")]
    return program.with_step(rng.choice(candidates), swap=True) if candidates else None


_WRONG_OP = {"+": ("-", "×"), "-": ("+",), "×": ("+",), "÷": ("×", "-"), "max": ("min",), "min": ("max",)}

_CORRUPTIONS: dict[str, Callable[[Program, int, random.Random], Program | None]] = {
    "arith_slip": lambda p, k, rng: p.with_step(k, slip=_bump(rng)),
    "swapped_operands": _swap,
    "wrong_operation": lambda p, k, rng: p.with_step(k, op=rng.choice(_WRONG_OP[p.steps[k].op])),
}


def write_splits(out_dir: str | Path, n_train: int, n_test: int, seed: int) -> dict[str, Path]:
    """Write ``out_dir/train.jsonl`` and ``out_dir/test.jsonl``; returns their paths."""
    if n_train < 1 or n_test < 1:
        raise ValueError(f"n_train and n_test must be >= 1, got {n_train} and {n_test}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"train": out / "train.jsonl", "test": out / "test.jsonl"}
    write_preferences(paths["train"], generate_pairs(n_train, seed, "train"))
    write_preferences(paths["test"], generate_pairs(n_test, seed, "test"))
    return paths
