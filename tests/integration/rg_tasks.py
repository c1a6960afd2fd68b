"""A reasoning-gym task whose third-party scorer hangs, loaded into real server workers by import path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_service.tasks.reasoning_gym_task import ReasoningGymTask


class HangingLegCounting(ReasoningGymTask):
    """rg:leg_counting whose ``score_answer`` never returns on the answer 'hang' (a stuck scorer)."""

    def __init__(self, **options: Any) -> None:
        super().__init__("leg_counting", **options)

    def _scorer(self, config: Mapping[str, Any]) -> Any:
        scorer = super()._scorer(config)
        if not getattr(scorer, "hangs", False):
            real = scorer.score_answer

            def score_answer(answer: str | None, entry: dict[str, Any]) -> float:
                while answer == "hang":
                    pass
                return real(answer, entry)

            scorer.score_answer, scorer.hangs = score_answer, True
        return scorer
