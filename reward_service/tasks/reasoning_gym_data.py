"""Training prompts for ``rg:<dataset>``, generated offline by reasoning-gym (``reward-service make-data``).

One row per entry, in the prompts format every trainer here reads (``trainer_client.train.rollouts``)::

    {"id": "leg_counting-0-3", "task": "rg:leg_counting", "prompt": "<instruction>\\n\\n<question>",
     "reference": {"entry": {"question": ..., "answer": ..., "metadata": {..., "reasoning_gym_version": "0.1.25"}}}}

The entry is reasoning-gym's own, JSON-normalised, with the generating version (and the
config overrides, if any) stamped into its metadata so a server with another version answers
INVALID_REFERENCE instead of scoring it wrong. The same ``n``, ``seed`` and config give the
same rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from reward_service.tasks.reasoning_gym_entries import CONFIG_KEY, DATASETS, VERSION_KEY, installed_version

#: reasoning-gym's own instructions (``reasoning_gym.utils.SYSTEM_PROMPTS``), put before the
#: question; each asks for the final answer in ``<answer>...</answer>``. "none": the question alone.
INSTRUCTIONS = ("default", "DeepSeekZero", "simple", "direct", "chain_of_draft", "none")
#: Config fields make-data sets itself (from ``n`` and ``seed``).
OWN_FIELDS = ("size", "seed")


class DataError(ValueError):
    """The generation request cannot be met; the message says how to fix it."""


def dataset_of(task: str) -> str:
    """``rg:<dataset>`` -> the dataset (DataError for any other name)."""
    prefix, _, dataset = task.partition(":")
    if prefix != "rg" or dataset not in DATASETS:
        raise DataError(f"{task!r} is not a reasoning-gym task: use rg:<dataset>, one of "
                        + ", ".join(f"rg:{d}" for d in DATASETS[:5]) + f", ... ({len(DATASETS)} datasets)")
    return dataset


def make_rows(task: str, n: int, seed: int, config: Mapping[str, Any] | None = None,
              instruction: str = "default") -> Iterator[dict[str, Any]]:
    """``n`` prompt rows of ``rg:<dataset>`` generated with ``seed`` and the dataset ``config`` overrides."""
    dataset = dataset_of(task)
    config = dict(config or {})
    if n < 1:
        raise DataError(f"--n must be at least 1, got {n}")
    if clash := sorted(set(config) & set(OWN_FIELDS)):
        raise DataError(f"config sets {clash}: use --n and --seed instead")
    if instruction not in INSTRUCTIONS:
        raise DataError(f"instruction must be one of {', '.join(INSTRUCTIONS)}, got {instruction!r}")
    try:
        import reasoning_gym
        from reasoning_gym.utils import SYSTEM_PROMPTS
    except ImportError as exc:
        raise DataError(f"reasoning-gym is not installed ({exc}): pip install 'reward-suite[rg]'") from None
    try:
        generator = reasoning_gym.create_dataset(dataset, size=n, seed=seed, **config)
    except (TypeError, ValueError, AssertionError) as exc:
        raise DataError(f"rg:{dataset}: bad config {config}: {type(exc).__name__}: {exc}") from None
    preamble = "" if instruction == "none" else SYSTEM_PROMPTS[instruction].strip() + "\n\n"
    stamp = {VERSION_KEY: installed_version(), **({CONFIG_KEY: config} if config else {})}
    for index in range(n):
        try:
            made = generator[index]
        except Exception as exc:  # noqa: BLE001 -- a generator failing on its config: say which, and stop
            raise DataError(f"rg:{dataset} failed to generate entry {index} with config {config}: "
                            f"{type(exc).__name__}: {exc}") from None
        entry = _json_entry(made, dataset, index)
        entry["metadata"] = {**entry.get("metadata", {}), **stamp}
        yield {"id": f"{dataset}-{seed}-{index}", "task": f"rg:{dataset}", "prompt": preamble + entry["question"],
               "reference": {"entry": entry}}


def _json_value(value: Any) -> Any:
    """What JSON has no type for: exact numbers as their text (gsm_symbolic's metadata has Fractions),
    numpy values as Python ones."""
    if isinstance(value, (Fraction, Decimal)):
        return str(value)
    if callable(getattr(value, "tolist", None)):
        return value.tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _json_entry(entry: Mapping[str, Any], dataset: str, index: int) -> dict[str, Any]:
    """The entry as JSON carries it (tuples become lists, non-string keys strings; the task puts back
    what its scorer needs)."""
    try:
        return json.loads(json.dumps(entry, default=_json_value))
    except (TypeError, ValueError) as exc:
        raise DataError(f"rg:{dataset} entry {index} is not JSON-serialisable: {exc}") from None
