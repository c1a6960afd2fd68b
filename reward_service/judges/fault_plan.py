"""Which call the fault proxy breaks, and how (pure: no I/O).

A :class:`FaultPlan` gives each fault kind a rate (drawn from a seeded RNG, one draw per call, so a
run with the same seed and the same number of calls injects the same faults), and for tests a
deterministic schedule: a ``script`` for the first calls, then ``every`` N-th call. A
:class:`FaultDecider` walks the plan call by call.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

OK = "ok"  # no fault: the call is forwarded untouched
#: Every fault kind, in the order the rates are laid out on [0, 1) (and ``every`` is checked).
FAULT_KINDS = ("latency", "http_429", "http_500", "http_502", "http_503", "cut", "garbage", "hang")
#: The kinds that make a call fail or its verdict unusable (``latency`` only slows it).
FAILING_KINDS = tuple(k for k in FAULT_KINDS if k != "latency")
#: Status code of each HTTP fault.
HTTP_FAULTS = {"http_429": 429, "http_500": 500, "http_502": 502, "http_503": 503}
#: Nonsense words of garbage verdicts: no digits, no single letters, no yes/no/true/false/tie.
GARBAGE_WORDS = ("blorp", "zxqv", "fnord", "grault", "wibble", "quux", "snark", "frobnicate", "plugh", "xyzzy")


def _frozen(mapping: Mapping[str, float] | Mapping[str, int]) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class FaultPlan:
    """What the proxy injects. Kinds: ``latency`` (wait ``latency_s``, then forward), ``http_429`` (with
    ``Retry-After: retry_after_s``), ``http_500``/``http_502``/``http_503``, ``cut`` (the connection closes
    halfway through the reply's body), ``garbage`` (the reply's text becomes nonsense words), ``hang``
    (no reply until the client gives up, or ``hang_s``)."""

    rates: Mapping[str, float] = field(default_factory=dict)  # kind -> probability per call (sum <= 1)
    every: Mapping[str, int] = field(default_factory=dict)  # kind -> N: calls N, 2N, ... (the first kind that fits)
    script: tuple[str, ...] = ()  # the first calls' kinds, in order ("ok": none); then every/rates
    seed: int = 0
    latency_s: float = 2.0
    retry_after_s: float = 1.0
    hang_s: float = 600.0
    garbage_text: str = ""  # "" -> seeded nonsense words
    paths: tuple[str, ...] = ("/chat/completions", "/responses")  # faults hit POSTs to paths ending so

    def __post_init__(self) -> None:
        object.__setattr__(self, "rates", _frozen(self.rates))
        object.__setattr__(self, "every", _frozen(self.every))
        object.__setattr__(self, "script", tuple(self.script))
        known = set(FAULT_KINDS)
        unknown = (set(self.rates) | set(self.every) | set(self.script)) - known - {OK}
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}: use {', '.join(FAULT_KINDS)} "
                             "(or 'ok' in a script)")
        if any(not 0 <= r <= 1 for r in self.rates.values()) or sum(self.rates.values()) > 1 + 1e-9:
            raise ValueError(f"fault rates must each be in [0, 1] and sum to at most 1, got {dict(self.rates)}")
        if any(n < 1 for n in self.every.values()):
            raise ValueError(f"every: N must be at least 1, got {dict(self.every)}")
        if min(self.latency_s, self.retry_after_s, self.hang_s) < 0:
            raise ValueError("latency_s, retry_after_s and hang_s must be >= 0")

    @classmethod
    def each(cls, rate: float, kinds: tuple[str, ...] = FAILING_KINDS, **options) -> FaultPlan:
        """``rate`` of the calls get each of ``kinds`` (e.g. 0.1 each of the 7 failing kinds: 70% fail)."""
        return cls(rates=dict.fromkeys(kinds, rate), **options)

    def applies_to(self, method: str, path: str) -> bool:
        return method == "POST" and path.rstrip("/").endswith(self.paths)


class FaultDecider:
    """The plan's fault for each call, in call order (not thread-safe: the proxy's event loop owns it)."""

    def __init__(self, plan: FaultPlan) -> None:
        self.plan = plan
        self.calls = 0
        self._rng = random.Random(plan.seed)
        self._garbage_rng = random.Random(plan.seed + 1)
        self._bounds = []
        total = 0.0
        for kind in FAULT_KINDS:
            total += plan.rates.get(kind, 0.0)
            self._bounds.append((total, kind))

    def next(self) -> str:
        """The kind of the next call (``OK``: none)."""
        self.calls += 1
        draw = self._rng.random()  # drawn for every call, so a script or every-N shifts no later draw
        if self.calls <= len(self.plan.script):
            return self.plan.script[self.calls - 1]
        for kind in FAULT_KINDS:
            n = self.plan.every.get(kind)
            if n and self.calls % n == 0:
                return kind
        return next((kind for bound, kind in self._bounds if draw < bound), OK)

    def garbage(self) -> str:
        """A garbage verdict: ``garbage_text``, or six seeded nonsense words."""
        return self.plan.garbage_text or " ".join(self._garbage_rng.choice(GARBAGE_WORDS) for _ in range(6))
