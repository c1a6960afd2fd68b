"""The names of the floating-point types models run in: torch's, and the short ones also accepted.

Every config that takes a dtype (the trainers', the reward-model server's) accepts both
``float32|bfloat16`` and ``fp32|bf16``, stores and prints torch's name, and turns it into a
dtype with ``getattr(torch, name)``. Pure: no torch import, so configs check names without it.
"""

from __future__ import annotations

__all__ = ["ALIASES", "DTYPES", "canonical_dtype"]

DTYPES = ("float32", "bfloat16")  # torch's names: what configs store, logs and help print
ALIASES = {"fp32": "float32", "bf16": "bfloat16"}  # also accepted on input


def canonical_dtype(name: str, what: str = "dtype") -> str:
    """``"bf16"`` -> ``"bfloat16"``, ``"float32"`` -> ``"float32"`` (any case); else a ValueError
    that names ``what`` and the choices."""
    key = name.strip().lower() if isinstance(name, str) else name
    if key in DTYPES:
        return key
    if key in ALIASES:
        return ALIASES[key]
    raise ValueError(f"{what} must be one of {', '.join(DTYPES)} (or {', '.join(ALIASES)}), got {name!r}")
