"""Multiple-choice verifiers: options and gold from the shapes datasets use, NeMo Gym's ``mcqa``
grading modes and template regex, and our own ``auto`` reading of the forms models write.
Pure functions, no I/O."""

from reward_service.verifiers.choice.auto_read import ChoiceRead, read_choice
from reward_service.verifiers.choice.grade import GRADING_MODES, ChoiceGrade, grade_choice
from reward_service.verifiers.choice.gym_modes import GYM_MODES
from reward_service.verifiers.choice.options import BadChoices, Choices, gold_letter, parse_choices

__all__ = ["GRADING_MODES", "GYM_MODES", "BadChoices", "ChoiceGrade", "ChoiceRead", "Choices", "gold_letter",
           "grade_choice", "parse_choices", "read_choice"]
