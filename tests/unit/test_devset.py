"""Runs the verifier on the labelled development set ``data/math_devset.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reward_service.verifiers.math import grade

DEVSET = Path(__file__).resolve().parents[2] / "data" / "math_devset.jsonl"


def _load_cases() -> list[dict]:
    if not DEVSET.exists():
        return []
    with DEVSET.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


CASES = _load_cases()


@pytest.mark.skipif(not CASES, reason="data/math_devset.jsonl not present")
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_devset_case_matches_label(case: dict) -> None:
    result = grade(case["completion"], case["gold"])
    assert result.correct == case["expected"], (case["note"], result)
