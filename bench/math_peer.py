"""HF math-verify as the peer of our math verifier, wrapped once for every bench script.

``verify(parse(gold_text(gold)), parse(completion))`` with math-verify's defaults
(5 s timeouts, signal-based, so call it from the main thread only). Imported by
``bench/bench_math.py`` and ``bench/verify_diff.py``; math-verify itself comes
from the ``bench`` extra and is imported on first use, not at import time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class PeerVerdict:
    """One math-verify verdict, with what it parsed from each side."""

    correct: bool
    gold_parsed: str  # str() of parse(gold_text(gold)): a list of candidates
    extracted: str  # str() of parse(completion)
    error: str | None  # the exception type name when math-verify raised (then correct is False)
    seconds: float  # parse + parse + verify, not the str() of the parses


def gold_text(gold: str) -> str:
    """The gold as math-verify wants it: LaTeX delimited; full solutions (\\boxed, ####) as they are."""
    return gold if ("\\boxed" in gold or "####" in gold) else f"${gold}$"


def _quiet_logger() -> None:
    # math-verify logs every timeout with the whole (megabyte-long) input; keep the report readable.
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)


def peer_detailed() -> Callable[[str, str], PeerVerdict]:
    """A ``(completion, gold) -> PeerVerdict`` checker; a math-verify exception is a False verdict."""
    from math_verify import parse, verify
    from math_verify.errors import TimeoutException

    _quiet_logger()

    def check(completion: str, gold: str) -> PeerVerdict:
        gold_parsed: list = []
        extracted: list = []
        correct, error = False, None
        start = time.perf_counter()
        try:
            gold_parsed = parse(gold_text(gold))
            extracted = parse(completion)
            correct = bool(verify(gold_parsed, extracted))
        except (Exception, TimeoutException) as exc:  # math-verify's timeout is a BaseException
            error = type(exc).__name__
        seconds = time.perf_counter() - start
        return PeerVerdict(correct, str(gold_parsed), str(extracted), error, seconds)

    return check


def peer() -> Callable[[str, str], bool]:
    """A ``(completion, gold) -> bool`` checker: math-verify's verdict only (no str() of its parses)."""
    from math_verify import parse, verify

    _quiet_logger()
    return lambda completion, gold: bool(verify(parse(gold_text(gold)), parse(completion)))
