"""IFEval's two scorings of one response, and the aggregations of per-instruction results.

Strict: the check runs on the response as it is. Loose (``test_instruction_following_loose``):
an instruction is followed when any of eight variants passes: the response, without its first
line, without its last line, without both (each stripped), and each of those four with every
``*`` removed. Either way an empty (all-whitespace) variant never passes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from reward_service.verifiers.instructions.args import Args, BadInstruction, UnsupportedInstruction
from reward_service.verifiers.instructions.ifeval import Check
from reward_service.verifiers.instructions.text_tools import TextTools, per_response

MODES = ("strict", "loose")
AGGREGATIONS = ("all", "fraction")


@dataclass(frozen=True)
class Instruction:
    """One built instruction: its id and its check."""

    id: str
    check: Check


def build_instructions(ids: Sequence[str], kwargs: Sequence[Mapping[str, Any]],
                       registry: Mapping[str, Callable[[Args], Check]],
                       unsupported: Mapping[str, str] = MappingProxyType({})) -> list[Instruction]:
    """Each id built from ``registry`` with its kwargs; raises BadInstruction (unknown id, bad arguments),
    or UnsupportedInstruction for an id in ``unsupported`` (known, not implemented: id -> why)."""
    built = []
    for instruction_id, arguments in zip(ids, kwargs):
        builder = registry.get(instruction_id)
        if builder is None and instruction_id in unsupported:
            raise UnsupportedInstruction(f"instruction {instruction_id!r} is not implemented by this verifier: "
                                         f"{unsupported[instruction_id]}")
        if builder is None:
            raise BadInstruction(f"unknown instruction {instruction_id!r}")
        args = Args(instruction_id, arguments)
        check = builder(args)
        args.done()
        built.append(Instruction(instruction_id, check))
    return built


def response_variants(response: str, mode: str = "strict") -> tuple[str, ...]:
    """The texts a check is tried on: the response alone (strict), or IFEval's eight (loose)."""
    if mode == "strict":
        return (response,)
    lines = response.split("\n")
    trimmed = ("\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(), "\n".join(lines[1:-1]).strip())
    return (response, response.replace("*", ""), *trimmed, *(t.replace("*", "") for t in trimmed))


def follows(instruction: Instruction, variants: Sequence[str], tools: TextTools) -> bool:
    return any(v.strip() and instruction.check(v, tools) for v in variants)


def grade(instructions: Sequence[Instruction], response: str, tools: TextTools, mode: str = "strict") -> list[bool]:
    """Whether ``response`` follows each instruction, scored ``strict`` or ``loose``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    variants = (response,) if mode == "strict" else response_variants(response, mode)
    texts = [v for v in variants if v and not v.isspace()]  # a blank one never passes
    if not texts:
        return [False] * len(instructions)
    if len(instructions) == 1 and len(texts) == 1:  # one check on one text: nothing to share
        return [True if instructions[0].check(texts[0], tools) else False]
    shared = per_response(tools)
    return [any(i.check(text, shared) for text in texts) for i in instructions]  # as ``follows``, in order


def aggregate(results: Sequence[bool], aggregation: str = "all") -> float:
    """``all``: 1.0 when every instruction is followed (IFEval's prompt level, Gym's ``binary``);
    ``fraction``: the share followed (Gym's ``fraction``, open-instruct's IFEvalVerifier). 0.0 for none."""
    if not results:
        return 0.0
    if aggregation == "all":
        return 1.0 if all(results) else 0.0
    if aggregation == "fraction":
        return sum(results) / len(results)
    raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")


__all__ = ["AGGREGATIONS", "MODES", "BadInstruction", "Instruction", "UnsupportedInstruction", "aggregate",
           "build_instructions", "follows", "grade", "response_variants"]
