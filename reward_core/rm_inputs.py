"""How a (prompt, completion) pair becomes reward-model input: one function for training and serving.

A reward model scores the tokenizer's *text-pair* encoding of ``(prompt, completion)`` — the
same ids as ``tokenizer(prompt, completion)`` whenever the pair fits. Training
(``trainer_client.rm.rm_train``) and serving (``reward_service.rm``) both call
:func:`encode_pair`, so a served score is computed on exactly the tokens the model was
trained on.

Truncation policy ``"prompt_left"`` (the only one), for a pair longer than ``max_length``
tokens including the tokenizer's special tokens:

1. drop tokens from the START of the prompt (the completion, which is what is being
   judged, and the end of the prompt, nearest to it, are kept);
2. if the completion alone does not fit, the whole prompt is dropped and the completion
   keeps its BEGINNING (its first ``max_length - specials`` tokens).

    from reward_core.rm_inputs import encode_pair, pad_encoded
    enc = encode_pair(tokenizer, "What is 2+2?", "2+2 = 4. Answer: 4", max_length=256)
    batch = pad_encoded([enc], pad_token_id=tokenizer.pad_token_id)   # lists; torch.tensor(...) them

The checkpoint directory written by the trainer also carries two small JSON files that the
server reads, named here so both sides share the names and keys:
``reward_model_config.json`` (``{"max_length": int, "truncation": "prompt_left", ...}``) and
``reward_normalization.json`` (``{"mean": float, "std": float, "num_samples": int}``); see
:func:`read_rm_metadata`.

Import-light on purpose: no torch, no transformers import; the tokenizer is duck-typed.
"""

from __future__ import annotations

import json
import math
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

TRUNCATION_POLICY = "prompt_left"
TRUNCATION_POLICIES = (TRUNCATION_POLICY,)

RM_CONFIG_FILE = "reward_model_config.json"
NORMALIZATION_FILE = "reward_normalization.json"


class EncodedPair(NamedTuple):
    """One encoded (prompt, completion) pair, unpadded. Unpacks as a 4-tuple."""

    input_ids: list[int]
    attention_mask: list[int]
    token_type_ids: list[int] | None  # None when the model takes no token_type_ids (decoders)
    truncated: bool  # True when any prompt or completion token was dropped


def plan_truncation(n_prompt: int, n_completion: int, budget: int) -> tuple[int, int]:
    """How many prompt and completion tokens ``prompt_left`` keeps, given ``budget`` content tokens.

    Returns ``(keep_prompt, keep_completion)``; the kept prompt tokens are its LAST
    ``keep_prompt`` tokens, the kept completion tokens its FIRST ``keep_completion``.
    """
    if budget < 1:
        raise ValueError(f"budget must be at least 1 token, got {budget}")
    if n_prompt < 0 or n_completion < 0:
        raise ValueError(f"token counts must be >= 0, got {n_prompt} and {n_completion}")
    keep_completion = min(n_completion, budget)
    keep_prompt = min(n_prompt, budget - keep_completion)
    return keep_prompt, keep_completion


def num_special_tokens(tokenizer: Any) -> int:
    """Special tokens the tokenizer adds around a text pair ([CLS] a [SEP] b [SEP] -> 3)."""
    return int(tokenizer.num_special_tokens_to_add(pair=True))


def encode_pair(
    tokenizer: Any,
    prompt: str,
    completion: str,
    max_length: int,
    truncation: str = TRUNCATION_POLICY,
) -> EncodedPair:
    """Encode ``(prompt, completion)`` as a text pair of at most ``max_length`` tokens.

    Equal to ``tokenizer(prompt, completion)`` when the pair fits (including, as there, a
    single-sequence encoding of ``prompt`` when ``completion`` is empty); otherwise
    truncated by the ``prompt_left`` policy (module docstring). Works with any Hugging Face
    tokenizer: fast ones (``backend_tokenizer``) and slow ones
    (``build_inputs_with_special_tokens``). Thread-safe; never mutates the tokenizer.
    """
    if truncation not in TRUNCATION_POLICIES:
        raise ValueError(f"unknown truncation policy {truncation!r}; use one of {TRUNCATION_POLICIES}")
    if not isinstance(prompt, str) or not isinstance(completion, str):
        raise TypeError(f"prompt and completion must be str, got {type(prompt).__name__} "
                        f"and {type(completion).__name__}")
    is_pair = bool(completion)
    budget = max_length - int(tokenizer.num_special_tokens_to_add(pair=is_pair))
    if budget < 1:
        raise ValueError(f"max_length={max_length} leaves no room for content after the special tokens; raise it")
    if getattr(tokenizer, "backend_tokenizer", None) is not None:
        out = _encode_fast(tokenizer, prompt, completion, budget, is_pair)
    elif hasattr(tokenizer, "build_inputs_with_special_tokens"):
        out = _encode_slow(tokenizer, prompt, completion, budget, is_pair)
    else:
        raise TypeError(f"{type(tokenizer).__name__} is not a Hugging Face tokenizer (no backend_tokenizer)")
    if "token_type_ids" not in getattr(tokenizer, "model_input_names", ("token_type_ids",)):
        out = out._replace(token_type_ids=None)
    return out


# A private, stateless copy of each fast tokenizer's backend: the shared backend carries
# truncation/padding state that every `tokenizer(...)` call rewrites.
_BACKENDS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_BACKENDS_LOCK = threading.Lock()


def _stateless_backend(tokenizer: Any) -> Any:
    with _BACKENDS_LOCK:
        backend = _BACKENDS.get(tokenizer)
        if backend is None:
            source = tokenizer.backend_tokenizer
            backend = type(source).from_str(source.to_str())
            backend.no_truncation()
            backend.no_padding()
            backend.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
            _BACKENDS[tokenizer] = backend
        return backend


def _encode_fast(tokenizer: Any, prompt: str, completion: str, budget: int, is_pair: bool) -> EncodedPair:
    backend = _stateless_backend(tokenizer)
    enc_p = backend.encode(prompt, add_special_tokens=False)
    enc_c = backend.encode(completion, add_special_tokens=False) if is_pair else None
    n_p, n_c = len(enc_p.ids), (len(enc_c.ids) if enc_c is not None else 0)
    keep_p, keep_c = plan_truncation(n_p, n_c, budget)
    truncated = (keep_p, keep_c) != (n_p, n_c)
    if keep_p < n_p:
        enc_p.truncate(keep_p, direction="left")
    if enc_c is not None and keep_c < n_c:
        enc_c.truncate(keep_c, direction="right")
    full = backend.post_process(enc_p, enc_c, add_special_tokens=True)
    return EncodedPair(list(full.ids), list(full.attention_mask), list(full.type_ids), truncated)


def _encode_slow(tokenizer: Any, prompt: str, completion: str, budget: int, is_pair: bool) -> EncodedPair:
    ids_p = tokenizer.encode(prompt, add_special_tokens=False)
    ids_c = tokenizer.encode(completion, add_special_tokens=False) if is_pair else []
    keep_p, keep_c = plan_truncation(len(ids_p), len(ids_c), budget)
    truncated = (keep_p, keep_c) != (len(ids_p), len(ids_c))
    ids_p = ids_p[len(ids_p) - keep_p:]
    ids_c = ids_c[:keep_c]
    second = ids_c if is_pair else None
    input_ids = list(tokenizer.build_inputs_with_special_tokens(ids_p, second))
    type_ids = list(tokenizer.create_token_type_ids_from_sequences(ids_p, second))
    return EncodedPair(input_ids, [1] * len(input_ids), type_ids, truncated)


def pad_encoded(
    pairs: Sequence[EncodedPair], pad_token_id: int, padding_side: str = "right"
) -> dict[str, list[list[int]]]:
    """Pad encoded pairs to the longest one: ``{"input_ids", "attention_mask"[, "token_type_ids"]}``.

    Plain lists (``torch.tensor`` them). ``token_type_ids`` is present only when every pair has them.
    """
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    if pad_token_id is None:
        raise ValueError("pad_token_id is None: set tokenizer.pad_token (decoders: pad_token = eos_token)")
    if not pairs:
        raise ValueError("pad_encoded needs at least one pair")
    width = max(len(p.input_ids) for p in pairs)
    with_types = all(p.token_type_ids is not None for p in pairs)

    def pad(seq: list[int], value: int) -> list[int]:
        fill = [value] * (width - len(seq))
        return list(seq) + fill if padding_side == "right" else fill + list(seq)

    batch = {
        "input_ids": [pad(p.input_ids, pad_token_id) for p in pairs],
        "attention_mask": [pad(p.attention_mask, 0) for p in pairs],
    }
    if with_types:
        batch["token_type_ids"] = [pad(p.token_type_ids, 0) for p in pairs]
    return batch


@dataclass(frozen=True)
class RewardModelMetadata:
    """What a served reward model needs besides its weights: input policy and score normalization."""

    max_length: int
    truncation: str
    mean: float
    std: float
    num_samples: int

    def normalize(self, reward: float) -> float:
        """``(reward - mean) / std``: comparable across checkpoints (std of 0 is treated as 1)."""
        return (reward - self.mean) / (self.std if self.std > 0 else 1.0)


def write_rm_metadata(out_dir: str | Path, meta: RewardModelMetadata, extra_config: dict | None = None) -> None:
    """Write ``reward_model_config.json`` and ``reward_normalization.json`` into ``out_dir``."""
    out = Path(out_dir)
    config = {"max_length": meta.max_length, "truncation": meta.truncation, **(extra_config or {})}
    norm = {"mean": float(meta.mean), "std": float(meta.std), "num_samples": int(meta.num_samples)}
    (out / RM_CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (out / NORMALIZATION_FILE).write_text(json.dumps(norm, indent=2, sort_keys=True) + "\n")


def read_rm_metadata(model_dir: str | Path) -> RewardModelMetadata:
    """Read the two JSON files from a checkpoint directory; ValueError naming the file if bad."""
    root = Path(model_dir)
    config = _read_json(root / RM_CONFIG_FILE, ("max_length", "truncation"))
    norm = _read_json(root / NORMALIZATION_FILE, ("mean", "std", "num_samples"))
    if config["truncation"] not in TRUNCATION_POLICIES:
        raise ValueError(f"{root / RM_CONFIG_FILE}: unknown truncation {config['truncation']!r}")
    meta = RewardModelMetadata(
        max_length=int(config["max_length"]), truncation=str(config["truncation"]),
        mean=float(norm["mean"]), std=float(norm["std"]), num_samples=int(norm["num_samples"]),
    )
    if not (math.isfinite(meta.mean) and math.isfinite(meta.std)) or meta.std < 0:
        raise ValueError(f"{root / NORMALIZATION_FILE}: mean/std must be finite and std >= 0, got {norm}")
    return meta


def _read_json(path: Path, keys: tuple[str, ...]) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ValueError(f"{path} is missing: was this directory written by `trainer-client train-rm`?") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    missing = [k for k in keys if not isinstance(data, dict) or k not in data]
    if missing:
        raise ValueError(f"{path}: missing keys {missing}")
    return data
