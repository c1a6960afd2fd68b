"""How (prompt, steps) becomes PRM input, and how a trained PRM scores steps: one path for training and serving.

The sequence is the tokenizer's pieces, concatenated (each piece tokenized on its own, as
TRL's PRM trainer does, so a step's tokens never depend on its neighbours)::

    prefix  prompt  SEP  step_1  SEP  step_2  SEP ...  step_n  SEP
                         ^^^^^^^^^^^  ^^^^^^^^^^^
    prefix = [CLS] (encoders) or [BOS] (decoders that have one), else nothing

A step's label sits on the LAST token of the separator that follows it; every other token
(prefix, prompt, the prompt's separator, step tokens) is ``-100``. Labels: 1 = correct,
0 = wrong; a step's score is ``softmax(logits)[1]`` at that token, the probability that the
step is correct.

The separator: ``"\\n"`` by default, as in TRL — but a WordPiece tokenizer (BERT, MiniLM)
drops whitespace, so ``"\\n"`` encodes to no tokens and steps would run together with no
token to label. ``resolve_separator`` then falls back to the tokenizer's own separator token
(``[SEP]``), else its EOS; the checkpoint records the string AND its token ids.

Truncation (``prompt_left``, as ``reward_core.rm_inputs``): when the sequence exceeds
``max_length``, the START of the prompt is dropped first (its separator stays); when the
steps alone do not fit, the prompt is dropped entirely and the sequence ends after the last
step that fits whole, separator included. A step cut off gets NO label in training and a
score of ``None`` from :func:`step_scores` ("could not score", never a 0).

Checkpoint (``save_pretrained`` directory): the token-classification model and tokenizer,
plus ``prm_config.json``::

    {"step_separator": "[SEP]", "separator_ids": [102], "prefix_ids": [101], "max_length": 256,
     "truncation": "prompt_left", "label_at": "last token of the separator after each step",
     "labels": {"0": "wrong", "1": "correct"}, "score": "softmax(logits)[..., 1] at each label position"}

    model, tokenizer, spec = load_prm("runs/prm")
    step_scores(model, tokenizer, spec, [("Ava has 3 apples. ...", ["Buys 2 more: 3 + 2 = 5", ...])])
    # -> [[0.98, ...]]: one list per item, one float (or None: truncated away) per step

Encoding is import-light (no torch); :func:`step_scores` and :func:`load_prm` import torch /
transformers when called.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

from reward_core.rm_inputs import plan_truncation

PRM_CONFIG_FILE = "prm_config.json"
TRUNCATION_POLICY = "prompt_left"
DEFAULT_SEPARATOR = "\n"
IGNORE_INDEX = -100
LABEL_WRONG, LABEL_CORRECT = 0, 1
ID2LABEL = {LABEL_WRONG: "wrong", LABEL_CORRECT: "correct"}


@dataclass(frozen=True)
class PRMInputSpec:
    """Everything besides the weights that fixes how a PRM reads its input (``prm_config.json``)."""

    step_separator: str
    separator_ids: tuple[int, ...]
    prefix_ids: tuple[int, ...]
    max_length: int
    truncation: str = TRUNCATION_POLICY

    def __post_init__(self) -> None:
        if not self.separator_ids:
            raise ValueError(f"step separator {self.step_separator!r} encodes to no tokens: there is no token "
                             "to put a step label on; pick a separator the tokenizer keeps (e.g. its sep token)")
        if self.truncation != TRUNCATION_POLICY:
            raise ValueError(f"truncation {self.truncation!r} is unknown; use {TRUNCATION_POLICY!r}")
        if self.max_length < len(self.prefix_ids) + 2 * len(self.separator_ids) + 1:
            raise ValueError(f"max_length={self.max_length} leaves no room for a step; raise it (256 is typical)")

    def to_json(self) -> dict:
        row = asdict(self)
        row.update(separator_ids=list(self.separator_ids), prefix_ids=list(self.prefix_ids),
                   label_at="last token of the separator after each step",
                   labels={str(k): v for k, v in ID2LABEL.items()},
                   score="softmax(logits)[..., 1] at each label position (probability the step is correct)")
        return row


class EncodedSteps(NamedTuple):
    """One encoded (prompt, steps) item, unpadded."""

    input_ids: list[int]
    label_positions: list[int | None]  # per step: index of its label token, None when truncated away
    truncated: bool  # True when any prompt or step token was dropped


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def resolve_separator(tokenizer: Any, requested: str | None = None) -> tuple[str, list[int]]:
    """The step separator and its ids: ``requested``, else ``"\\n"``, else the sep token, else EOS.

    A separator that was asked for explicitly and encodes to no tokens is an error (ValueError).
    """
    if requested is not None:
        ids = _ids(tokenizer, requested)
        if not ids:
            raise ValueError(f"step separator {requested!r} encodes to no tokens with this tokenizer; "
                             f"use e.g. {tokenizer.sep_token or tokenizer.eos_token!r} or leave it unset")
        return requested, ids
    ids = _ids(tokenizer, DEFAULT_SEPARATOR)
    if ids:
        return DEFAULT_SEPARATOR, ids
    for token, token_id in ((tokenizer.sep_token, tokenizer.sep_token_id),
                            (tokenizer.eos_token, tokenizer.eos_token_id)):
        if token is not None and token_id is not None:
            return token, [int(token_id)]
    raise ValueError("the tokenizer drops '\\n' and has neither a sep nor an eos token; pass a step separator")


def make_spec(tokenizer: Any, max_length: int, step_separator: str | None = None) -> PRMInputSpec:
    """The input spec for a tokenizer: resolved separator, ``[CLS]``/``[BOS]`` prefix, ``max_length``."""
    separator, sep_ids = resolve_separator(tokenizer, step_separator)
    prefix = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    return PRMInputSpec(separator, tuple(sep_ids), () if prefix is None else (int(prefix),), max_length)


def encode_steps(tokenizer: Any, spec: PRMInputSpec, prompt: str, steps: Sequence[str]) -> EncodedSteps:
    """Encode one item (module docstring); ``label_positions[i]`` is step ``i``'s label token or None."""
    if not isinstance(prompt, str) or isinstance(steps, str) or not all(isinstance(s, str) for s in steps):
        raise TypeError("prompt must be a str and steps a sequence of str")
    sep = list(spec.separator_ids)
    prompt_chunk = _ids(tokenizer, prompt) + sep
    step_chunks = [_ids(tokenizer, s) + sep for s in steps]
    budget = spec.max_length - len(spec.prefix_ids)
    n_steps_tokens = sum(len(c) for c in step_chunks)
    keep_prompt, keep_steps = plan_truncation(len(prompt_chunk), n_steps_tokens, budget)
    ids = list(spec.prefix_ids) + prompt_chunk[len(prompt_chunk) - keep_prompt:]
    positions: list[int | None] = []
    for chunk in step_chunks:
        if keep_steps >= len(chunk):
            ids += chunk
            keep_steps -= len(chunk)
            positions.append(len(ids) - 1)
        else:  # this step does not fit whole: it and every later step go unscored
            keep_steps = 0
            positions.append(None)
    truncated = keep_prompt < len(prompt_chunk) or None in positions
    return EncodedSteps(ids, positions, truncated)


def token_labels(encoded: EncodedSteps, labels: Sequence[bool]) -> list[int]:
    """Per-token labels: 1/0 (correct/wrong) at each kept step's label token, -100 elsewhere."""
    if len(labels) != len(encoded.label_positions):
        raise ValueError(f"{len(labels)} labels for {len(encoded.label_positions)} steps")
    out = [IGNORE_INDEX] * len(encoded.input_ids)
    for position, label in zip(encoded.label_positions, labels):
        if position is not None:
            out[position] = LABEL_CORRECT if label else LABEL_WRONG
    return out


def pad_batch(items: Sequence[EncodedSteps], pad_token_id: int,
              labels: Sequence[Sequence[int]] | None = None) -> dict[str, list[list[int]]]:
    """Right-pad to the longest item: ``input_ids``, ``attention_mask`` (and ``labels`` padded with -100)."""
    if pad_token_id is None:
        raise ValueError("pad_token_id is None: set tokenizer.pad_token (decoders: pad_token = eos_token)")
    width = max(len(e.input_ids) for e in items)
    batch = {
        "input_ids": [e.input_ids + [pad_token_id] * (width - len(e.input_ids)) for e in items],
        "attention_mask": [[1] * len(e.input_ids) + [0] * (width - len(e.input_ids)) for e in items],
    }
    if labels is not None:
        batch["labels"] = [list(lab) + [IGNORE_INDEX] * (width - len(lab)) for lab in labels]
    return batch


# ----------------------------------------------------------------------------- checkpoint and scoring


def write_prm_config(out_dir: str | Path, spec: PRMInputSpec, extra: dict | None = None) -> None:
    path = Path(out_dir) / PRM_CONFIG_FILE
    path.write_text(json.dumps({**spec.to_json(), **(extra or {})}, indent=2, ensure_ascii=False) + "\n")


def read_prm_config(model_dir: str | Path) -> PRMInputSpec:
    """The input spec of a checkpoint; ValueError naming the file when missing or malformed."""
    path = Path(model_dir) / PRM_CONFIG_FILE
    try:
        row = json.loads(path.read_text())
        return PRMInputSpec(str(row["step_separator"]), tuple(int(i) for i in row["separator_ids"]),
                            tuple(int(i) for i in row["prefix_ids"]), int(row["max_length"]),
                            str(row.get("truncation", TRUNCATION_POLICY)))
    except FileNotFoundError as exc:
        raise ValueError(f"{path} is missing: was this directory written by `trainer-client train-prm`?") from exc
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: malformed ({exc!r}); needs step_separator, separator_ids, prefix_ids, "
                         "max_length") from exc


def load_prm(model_dir: str | Path, device: str = "cpu") -> tuple[Any, Any, PRMInputSpec]:
    """``(model, tokenizer, spec)`` of a checkpoint written by ``train-prm``; the model in eval mode."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    spec = read_prm_config(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForTokenClassification.from_pretrained(model_dir).to(device).eval()
    if model.config.num_labels != 2:
        raise ValueError(f"{model_dir}: expected a 2-label token classifier, got num_labels={model.config.num_labels}")
    return model, tokenizer, spec


def step_scores(model: Any, tokenizer: Any, spec: PRMInputSpec, items: Sequence[tuple[str, Sequence[str]]],
                batch_size: int = 32) -> list[list[float | None]]:
    """Probability that each step is correct, for a batch of ``(prompt, steps)``.

    One list per item, in order, one entry per step: a float in [0, 1], or None for a step
    cut off by ``spec.max_length`` (unscored, not wrong). Items are run in length-sorted
    chunks of ``batch_size``; the model's device is used.
    """
    import torch

    encoded = [encode_steps(tokenizer, spec, prompt, steps) for prompt, steps in items]
    out: list[list[float | None]] = [[None] * len(e.label_positions) for e in encoded]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].input_ids))
    device = next(model.parameters()).device
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            batch = {k: torch.tensor(v, device=device)
                     for k, v in pad_batch([encoded[i] for i in idx], tokenizer.pad_token_id).items()}
            probs = torch.softmax(model(**batch).logits.float(), dim=-1)[..., LABEL_CORRECT].cpu()
            for row, i in enumerate(idx):
                out[i] = [None if p is None else float(probs[row, p]) for p in encoded[i].label_positions]
    return out
