"""The ``ifeval`` task: Google's IFEval instructions (and Tulu 3's ``if_functions`` rows), scored
strict or loose, one component per instruction, all-or-fraction.

A row names its instructions the way IFEval, NeMo Gym and open-instruct do (see
``reward_service.verifiers.instructions.reference``). An empty response follows nothing
(NO_ANSWER, scored 0), and so is one that only repeats the prompt (an echoed prompt holds its own
keywords and format, and would pass them) or holds nothing but chat special tokens; an unknown
instruction or a missing or malformed argument is INVALID_REFERENCE (unscored: IFEval would have
drawn a random argument, Gym would have said 0).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

from reward_core.contract import RolloutStatus
from reward_service.task_api import Canary, InvalidReference, Task, TaskOutcome
from reward_service.tasks.canaries import SPECIAL_TOKENS_ONLY, generic_canaries
from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.tasks.options import bool_option, choice_option
from reward_service.verifiers.instructions import (
    AGGREGATIONS,
    IFEVAL_INSTRUCTIONS,
    MODES,
    OPEN_INSTRUCT_FUNCTIONS,
    BadInstruction,
    Instruction,
    TextTools,
    UnsupportedInstruction,
    aggregate,
    build_instructions,
    grade,
    parse_instructions,
)
from reward_service.verifiers.instructions.args import Args
from reward_service.verifiers.instructions.ifeval import Check
from reward_service.verifiers.math.special_tokens import strip_special_tokens

#: Known answers checked at start-up: (reference, response, strict all-or-nothing score).
SELF_CHECK_CASES: tuple[tuple[Mapping[str, Any], str, float], ...] = (
    ({"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}, "No commas here.", 1.0),
    ({"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}, "One, two.", 0.0),
    ({"instruction_id_list": ["length_constraints:number_sentences"],
      "kwargs": [{"num_sentences": 3, "relation": "at least"}]}, "Dr. Smith left. He was tired. So was I.", 1.0),
    ({"instruction_id_list": ["length_constraints:number_sentences"],
      "kwargs": [{"num_sentences": 3, "relation": "less than"}]}, "Dr. Smith left. He was tired. So was I.", 0.0),
    ({"instruction_id_list": ["change_case:capital_word_frequency"],
      "kwargs": [{"capital_frequency": 2, "capital_relation": "at least"}]}, "The USA and NASA-led work. OK?", 1.0),
    ({"instruction_id_list": ["language:response_language"], "kwargs": [{"language": "fr"}]},
     "Bonjour tout le monde, je suis très content de vous voir aujourd'hui.", 1.0),
    ({"instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]},
     "this is a plain english sentence written in lowercase letters only.", 1.0),
    ({"func_name": "validate_word_constraint", "N": 3, "quantifier": "at most"}, "Just three words", 1.0),
    ({"answer": "[{'instruction_id': ['detectable_format:title'], 'kwargs': [None]}]"}, "<<A title>> body", 1.0),
)
#: The canaries' row: a prompt whose echo follows its own instructions (it is lower case and names the keywords).
CANARY_PROMPT = "write a short note to a friend that mentions a banana and a rocket. use only lowercase letters."
CANARY_ROW: Mapping[str, Any] = {"instruction_id_list": ["keywords:existence", "change_case:english_lowercase"],
                                 "kwargs": [{"keywords": ["banana", "rocket"]}, {}]}


#: References (and, apart, instructions) whose built instructions are kept per task (cleared when full).
MAX_BUILT_ROWS = 4096


def pickled(value: Any) -> bytes | None:
    """``value``'s pickle, a key that tells apart ``1``, ``1.0`` and ``True``, lists and tuples, key
    orders; None when it does not pickle."""
    try:
        return pickle.dumps(value, protocol=5)
    except Exception:  # noqa: BLE001 - an object that will not pickle (whatever it raises) is just not kept
        return None


def reference_key(reference: Any) -> bytes | None:
    """The key a reference's built instructions are kept under: the pickle of a plain dict; else None."""
    return pickled(reference) if type(reference) is dict else None


def repeats_prompt(response: str, prompts: tuple[Any, ...]) -> bool:
    """Whether ``response`` is nothing but a prompt (any of ``prompts``), once or more, spacing aside."""
    text = None
    for prompt in prompts:
        if isinstance(prompt, str) and prompt and (said := " ".join(strip_special_tokens(prompt).split())):
            text = " ".join(response.split()) if text is None else text
            if text and not text.replace(said, "").strip():
                return True
    return False




class IfevalTask(Task):
    """IFEval: every instruction of the row checked on the response (``mode`` strict or loose),
    the score all-or-nothing (``aggregation: all``, IFEval's prompt level) or the share followed
    (``fraction``); a row's own ``grading_mode`` (Gym: binary | fraction) wins unless
    ``row_grading_mode`` is false. ``after_think`` scores only the text after the last ``</think>``."""

    name = "ifeval"
    description = ("IFEval instruction following: 1 when the response follows every instruction of "
                   "reference.instruction_id_list/kwargs (strict; loose and fraction as options), one component each")
    reference_fields = ("instruction_id_list", "kwargs", "prompt", "grading_mode", "func_name")
    #: instruction id -> builder for rows in IFEval's shape (open-instruct func_name rows use their own table).
    instructions: ClassVar[Mapping[str, Callable[[Args], Check]]] = IFEVAL_INSTRUCTIONS
    #: Known ids this task does not implement (id -> why): answered ERROR (unscored), never INVALID_REFERENCE or 0.
    unsupported: ClassVar[Mapping[str, str]] = MappingProxyType({})
    tools: ClassVar[TextTools] = ENGLISH_TOOLS
    #: Known answers ``self_check`` scores at start-up (a missing language tool shows here, not mid-training).
    self_check_cases: ClassVar[tuple[tuple[Mapping[str, Any], str, float], ...]] = SELF_CHECK_CASES

    def __init__(self, mode: str = "strict", aggregation: str = "all", row_grading_mode: bool = True,
                 after_think: bool = False) -> None:
        super().__init__()
        self.mode = choice_option(self.name, "mode", mode, MODES)
        self.aggregation = choice_option(self.name, "aggregation", aggregation, AGGREGATIONS)
        self.row_grading_mode = bool_option(self.name, "row_grading_mode", row_grading_mode)
        self.after_think = bool_option(self.name, "after_think", after_think)
        #: Each reference's built instructions, their component names and its own aggregation (a reference
        #: is parsed and its instructions built once; checks are pure, so they serve every response to it).
        self._built: dict[bytes, tuple[tuple[Instruction, ...], tuple[str, ...], str | None]] = {}
        #: Each distinct instruction (dialect, id, arguments) built, for references not seen yet.
        self._instructions: dict[bytes, Instruction] = {}
        #: What an outcome says for each (component names, verdicts, aggregation): its value, components, detail
        #: and explanation, written once (the verdicts are the checks' each time; only their wording is kept).
        self._said: dict[tuple[tuple[str, ...], tuple[bool, ...], str], tuple[float, dict[str, float], str, str]] = {}

    def _parse(self, reference: Mapping[str, Any]) -> tuple[Sequence[Instruction], tuple[str, ...], str]:
        """The built instructions, their component names (``index:id``) and the aggregation for this row;
        raises InvalidReference."""
        key = reference_key(reference)
        known = self._built.get(key) if key is not None else None
        if known is None:
            try:
                row = parse_instructions(reference)
                built = tuple(self._build(row.dialect, instruction_id, arguments)
                              for instruction_id, arguments in zip(row.instruction_ids, row.kwargs))
            except BadInstruction as exc:
                raise InvalidReference(f"task {self.name!r}: {exc}") from None
            known = (built, tuple(f"{i}:{ins.id}" for i, ins in enumerate(built)), row.aggregation)
            if key is not None:
                if len(self._built) >= MAX_BUILT_ROWS:
                    self._built.clear()
                self._built[key] = known
        built, names, row_aggregation = known
        return built, names, row_aggregation if self.row_grading_mode and row_aggregation else self.aggregation

    def _build(self, dialect: str, instruction_id: str, arguments: Mapping[str, Any]) -> Instruction:
        """One instruction built (raises BadInstruction or UnsupportedInstruction), each distinct one once."""
        key = pickled((dialect, instruction_id, arguments))
        built = self._instructions.get(key) if key is not None else None
        if built is None:
            table = OPEN_INSTRUCT_FUNCTIONS if dialect == "open_instruct" else self.instructions
            built = build_instructions((instruction_id,), (arguments,), table, self.unsupported)[0]
            if key is not None:
                if len(self._instructions) >= MAX_BUILT_ROWS:
                    self._instructions.clear()
                self._instructions[key] = built
        return built

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        try:
            self._parse(reference)
        except UnsupportedInstruction:
            pass  # answered ERROR by score(): not the reference's fault

    def response_of(self, completion: str) -> str:
        """The text graded: chat special tokens removed, and with ``after_think`` only what follows the
        last ``</think>``."""
        stripped = strip_special_tokens(completion)
        if stripped is not completion and stripped != completion.strip():  # a token was removed
            completion = stripped  # (else only the surrounding space, which IFEval's loose variants read)
        if self.after_think and "</think>" in completion:
            return completion.rsplit("</think>", 1)[1]
        return completion

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        try:
            instructions, names, aggregation = self._parse(reference)
        except UnsupportedInstruction as exc:
            return TaskOutcome(0.0, RolloutStatus.ERROR, detail=f"task {self.name!r}: {exc}")
        response = self.response_of(completion)
        row_prompt = reference.get("prompt")
        if (prompt or row_prompt) and repeats_prompt(response, (row_prompt, prompt)):  # (no prompt: no echo)
            return TaskOutcome(0.0, RolloutStatus.NO_ANSWER, dict.fromkeys(names, 0.0),
                               detail="the response only repeats the prompt",
                               explanation="no answer: the response only repeats the prompt (follows nothing)")
        results = tuple(grade(instructions, response, self.tools, self.mode))
        value, components, detail, explanation = self._say(instructions, names, results, aggregation)
        status = RolloutStatus.OK
        if not response or response.isspace():  # as ``not response.strip()``, without the copy
            status, explanation = RolloutStatus.NO_ANSWER, "no answer: the response is empty (follows nothing)"
        return TaskOutcome(value, status, components=dict(components), detail=detail, explanation=explanation)

    def _say(self, instructions: Sequence[Instruction], names: tuple[str, ...], results: tuple[bool, ...],
             aggregation: str) -> tuple[float, dict[str, float], str, str]:
        """The score, components, detail and explanation of these verdicts (each distinct wording made once)."""
        key = (names, results, aggregation)
        said = self._said.get(key)
        if said is None:
            followed = f"{sum(results)}/{len(results)}"
            missed = [ins.id for ins, ok in zip(instructions, results) if not ok]
            not_followed = f"; not followed: {', '.join(missed)}" if missed else ""
            value = aggregate(results, aggregation)
            said = (value, dict(zip(names, [1.0 if ok else 0.0 for ok in results])),
                    f"followed {followed} ({self.mode}, {aggregation}){not_followed}",
                    f"followed {followed} instructions ({self.mode}, {aggregation}: {value:g}){not_followed}")
            if len(self._said) >= MAX_BUILT_ROWS:
                self._said.clear()
            self._said[key] = said
        return said

    def canaries(self) -> list[Canary]:
        return [*generic_canaries(CANARY_ROW, prompt=CANARY_PROMPT),
                Canary("the prompt echoed", CANARY_PROMPT, CANARY_ROW, CANARY_PROMPT),
                Canary("the prompt echoed twice", f"{CANARY_PROMPT}\n\n{CANARY_PROMPT}", CANARY_ROW, CANARY_PROMPT),
                Canary("special tokens only, no comma asked", SPECIAL_TOKENS_ONLY, SELF_CHECK_CASES[0][0])]

    def self_check(self) -> list[str]:
        strict = type(self)()
        failures = []
        for reference, response, expected in self.self_check_cases:
            try:
                got = strict.score(response, reference).score
            except InvalidReference as exc:
                failures.append(f"{reference}: reference rejected: {exc}")
                continue
            if got != expected:
                failures.append(f"{reference} on {response!r}: scored {got}, expected {expected}")
        return failures
