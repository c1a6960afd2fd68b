"""Reading an instruction-following reference in any of the row shapes trainers send.

- IFEval / NeMo Gym ``instruction_following``: ``instruction_id_list`` + ``kwargs`` (a list of
  objects or nulls, one per instruction), optional ``prompt`` and Gym's ``grading_mode``
  (``binary`` | ``fraction``); newer Gym rows nest them under ``verifier_metadata``.
- open-instruct's IFEvalG ground truth: ``instruction_id`` + ``kwargs``, usually as the string
  ``"[{'instruction_id': [...], 'kwargs': [...]}]"`` (a Python literal: its first element is used).
- Tulu 3 RLVR-IFeval ground truth: ``{"func_name": ..., <argument>: <value or null>, ...}``.
- Any of those as a JSON (or Python-literal) string under ``answer`` / ``ground_truth`` / ``label``:
  how the HTTP door hands over an OpenRLHF/slime label or a Gym ``ground_truth``.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reward_service.verifiers.instructions.args import BadInstruction
from reward_service.verifiers.instructions.open_instruct import OPEN_INSTRUCT_ARGUMENTS

Dialect = Literal["ifeval", "open_instruct"]
#: Gym's grading modes, as our aggregations.
GRADING_MODES = {"binary": "all", "fraction": "fraction", "all": "all"}
_STRING_FIELDS = ("answer", "ground_truth", "label")
_MAX_DEPTH = 4


@dataclass(frozen=True)
class InstructionRow:
    """The instructions one reference asks for: ids, their kwargs, and what the row says about scoring.

    ``dialect`` ``open_instruct`` means the ids are open-instruct ``if_functions`` names (Tulu 3
    RLVR-IFeval rows); ``aggregation`` is the row's own ``grading_mode`` (None when it has none).
    """

    instruction_ids: tuple[str, ...]
    kwargs: tuple[Mapping[str, Any], ...]
    prompt: str = ""
    dialect: Dialect = "ifeval"
    aggregation: str | None = None


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _aggregation(row: Mapping[str, Any]) -> str | None:
    mode = row.get("grading_mode")
    if mode is None:
        return None
    if mode not in GRADING_MODES:
        raise BadInstruction(f"grading_mode must be one of {sorted(GRADING_MODES)}, got {mode!r}")
    return GRADING_MODES[mode]


def _is_list(value: Any) -> bool:
    """A list, tuple or other sequence that is not a string (plain lists first: the ABC check is slow)."""
    return type(value) in (list, tuple) or (not isinstance(value, (str, bytes)) and isinstance(value, Sequence))


def _listed(row: Mapping[str, Any], ids_key: str) -> InstructionRow:
    ids = row[ids_key]
    if not _is_list(ids) or not ids or not all(type(i) is str or isinstance(i, str) for i in ids):
        raise BadInstruction(f"{ids_key} must be a non-empty list of instruction ids, got {ids!r}")
    kwargs = row.get("kwargs")
    if kwargs is None:
        kwargs = [None] * len(ids)
    if not _is_list(kwargs) or len(kwargs) != len(ids):
        raise BadInstruction(f"kwargs must be a list of {len(ids)} objects (one per instruction), got {kwargs!r}")
    if not all(k is None or type(k) is dict or isinstance(k, Mapping) for k in kwargs):
        raise BadInstruction(f"each entry of kwargs must be an object or null, got {kwargs!r}")
    prompt = row.get("prompt")
    return InstructionRow(tuple(ids), tuple(k or {} for k in kwargs), prompt if isinstance(prompt, str) else "",
                          "ifeval", _aggregation(row))


def _function(row: Mapping[str, Any]) -> InstructionRow:
    name = row["func_name"]
    if not isinstance(name, str) or not name:
        raise BadInstruction(f"func_name must be a function name, got {name!r}")
    arguments = {k: v for k, v in row.items() if k in OPEN_INSTRUCT_ARGUMENTS and v is not None}
    return InstructionRow((name,), (arguments,), dialect="open_instruct", aggregation=_aggregation(row))


def parse_instructions(reference: Any, depth: int = 0) -> InstructionRow:
    """The instructions of ``reference`` (see the module docstring); raises BadInstruction."""
    if depth > _MAX_DEPTH:
        raise BadInstruction("the reference nests its instructions too deeply")
    if isinstance(reference, str):
        parsed = _literal(reference)
        if parsed is None or isinstance(parsed, str):
            raise BadInstruction("the reference string is not a JSON or Python literal holding instructions")
        return parse_instructions(parsed, depth + 1)
    if isinstance(reference, Sequence) and not isinstance(reference, (str, bytes)):
        if not reference:
            raise BadInstruction("the reference is an empty list")
        return parse_instructions(reference[0], depth + 1)  # open-instruct reads the first element
    if not isinstance(reference, Mapping):
        raise BadInstruction(f"the reference must be an object, got {type(reference).__name__}")
    if isinstance(reference.get("verifier_metadata"), Mapping):
        return parse_instructions(reference["verifier_metadata"], depth + 1)
    if "instruction_id_list" in reference:
        return _listed(reference, "instruction_id_list")
    if "instruction_id" in reference:
        return _listed(reference, "instruction_id")
    if "func_name" in reference:
        return _function(reference)
    for key in _STRING_FIELDS:
        if reference.get(key) not in (None, ""):
            return parse_instructions(reference[key], depth + 1)
    raise BadInstruction("the reference names no instructions: expected instruction_id_list + kwargs "
                         "(IFEval, NeMo Gym), instruction_id + kwargs or func_name (open-instruct); "
                         f"got {sorted(reference)}")
