"""Rule-based process (step-level) verification: split a completion into steps, check each
step's arithmetic claims exactly. Pure functions, no I/O (see ``step_split`` and ``claims``)."""

from reward_service.verifiers.process.claims import Claim, check_step, find_claims
from reward_service.verifiers.process.step_split import Step, split_steps

__all__ = ["Claim", "Step", "check_step", "find_claims", "split_steps"]
