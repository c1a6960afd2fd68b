"""Instruction following: IFEval's 25 verifiable instructions, Tulu 3's ``if_functions`` and
IFBench's out-of-distribution constraints, scored strict or loose. Pure functions: the language
tools (sentence splitter, word tokenizer, language detector) come in as a :class:`TextTools`."""

from reward_service.verifiers.instructions.args import BadInstruction, UnsupportedInstruction
from reward_service.verifiers.instructions.grading import (
    AGGREGATIONS,
    MODES,
    Instruction,
    aggregate,
    build_instructions,
    grade,
    response_variants,
)
from reward_service.verifiers.instructions.ifbench import IFBENCH_INSTRUCTIONS, UNSUPPORTED
from reward_service.verifiers.instructions.ifeval import IFEVAL_INSTRUCTIONS
from reward_service.verifiers.instructions.open_instruct import OPEN_INSTRUCT_FUNCTIONS
from reward_service.verifiers.instructions.reference import InstructionRow, parse_instructions
from reward_service.verifiers.instructions.sentences import split_into_sentences
from reward_service.verifiers.instructions.text_tools import TextTools, count_words

__all__ = ["AGGREGATIONS", "IFBENCH_INSTRUCTIONS", "IFEVAL_INSTRUCTIONS", "MODES", "OPEN_INSTRUCT_FUNCTIONS",
           "UNSUPPORTED", "BadInstruction", "Instruction", "InstructionRow", "TextTools", "UnsupportedInstruction",
           "aggregate", "build_instructions", "count_words", "grade", "parse_instructions", "response_variants",
           "split_into_sentences"]
