"""NeMo Gym ``code_gen`` rows on the Gym routes: LiveCodeBench unit tests run by our ``code`` task.

A row of NeMo Gym's ``code_gen`` resources server carries its tests as
``verifier_metadata.unit_tests = {"inputs": [str], "outputs": [str], "fn_name": str | null}``
(LiveCodeBench's format; also ``{"packed": <base64 zlib JSON {inputs, outputs}>, "fn_name"}``).
The door (``nemo_gym.py``) sends such a row here when it has ``verifier_metadata.unit_tests``.
Definitions mirrored, from NVIDIA-NeMo/Gym ``resources_servers/code_gen/``:

- ``app.py`` (``UnitTests``, ``CompCodingVerifyRequest``/``CompCodingVerifyResponse``, ``verify``):
  a blank ``response.output_text`` is reward 0; the code is ``extract_code(output_text,
  LMStyle.OpenAIChat)``; no code is reward 0 with ``extracted_model_output``; otherwise the
  tests run and the reward is 1.0 when every test passed, else 0.0 -- unless the response
  breaks the reasoning format (``<think>``/``</think>`` in the answer, or more than one of
  either in the reasoning summaries), which is ``reasoning_format_penalty`` (default 0.0).
- ``lcb_integration/extraction_utils.py`` (``extract_code``): the lines strictly between the
  last two lines that contain a triple backtick anywhere (any language tag, or none); fewer
  than two such lines is no code. :func:`extract_code`.
- ``lcb_integration/testing_util.py`` (``run_test``): ``fn_name`` null is stdin/stdout tests,
  else function-call tests: each input is one JSON value per line (the arguments), each output
  one JSON value; the function is ``Solution().<fn_name>`` when the code defines ``class
  Solution`` (LeetCode), else the top-level ``<fn_name>``. Every Python solution runs after
  LiveCodeBench's imports (:data:`LCB_STAR_IMPORTS`; ``List``, ``defaultdict``, ``heapq``...
  need no import). ``result`` is ``True`` per passed test, stopping at the first failure with
  its code: -2 wrong answer, -3 time limit, -4 runtime error.

Mapping onto our ``code`` task (``reward_service/tasks/code_task.py``): the reference is
``{"cases": [...], "style": "stdio"|"function_call", "entry_point": fn_name, "language"}``;
the rollout's completion is the extracted code, after the LiveCodeBench imports for Python
(the task's own extraction leaves code without a fence as it is). ``verifier_metadata.language``
(or the row's ``language``) picks a language of ``sandbox/languages.toml``; Gym's rows name none:
Python. ``fn_name`` "" counts as null, as Gym's LiveCodeBench preparation writes it
(``benchmarks/livecodebench/prepare_utils.py``: ``func_name or None``).

Deliberate differences, each a failure of the data or of ours made loud instead of a 0:
unit tests Gym's ``UnitTests`` model would reject, unequal ``inputs``/``outputs`` counts (Gym
zips them and drops the extra) and function-call lines that are not JSON are 422, not a 500 or
a 0; no tests at all is 400 (the ``code`` task refuses it; Gym gives reward 1.0 for
``all([])``); a sandbox failure is an HTTP error (or ``?unscored=mask``), never a reward.
The time limit is the ``code`` task's ``timeout_s`` for all the tests of a program together
(Gym: ``unit_test_timeout_secs`` per test). ``result`` is rebuilt from the task's verdict and
counts (``"wrong_answer (3/5 tests)"``): ``True`` per passed test then the failure's code.
Outputs are compared with the ``code`` task's ``float`` comparator (:data:`COMPARE`): tokens, numbers
within 1e-6; LiveCodeBench compares stripped lines, a line's tokens as decimals within 1e-6 only
when one of them has a point or an exponent, and return values with Python's ``==`` (``1 ==
True``) or ``np.allclose`` for scalars.

Pure functions; no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reward_core.contract import Rollout, RolloutResult, RolloutStatus

#: Where a code_gen row keeps its tests.
VERIFIER_METADATA, UNIT_TESTS = "verifier_metadata", "unit_tests"
FENCE = "```"

#: LiveCodeBench's imports before every Python solution (testing_util.py ``import_string``): these
#: modules star-imported in this order (``builtins`` after the others, so ``pow`` or ``compile`` is
#: the builtin again, then ``typing``), then the modules themselves, then a recursion limit.
LCB_STAR_IMPORTS = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
                    "statistics", "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing")
LCB_MODULE_IMPORTS = LCB_STAR_IMPORTS[:-2]
LCB_RECURSION_LIMIT = 50000
PYTHON_PRELUDE = "".join(
    [f"from {m} import *\n" for m in LCB_STAR_IMPORTS] + [f"import {m}\n" for m in LCB_MODULE_IMPORTS]
    + [f"sys.setrecursionlimit({LCB_RECURSION_LIMIT})\n\n"])

#: The ``code`` task's comparator closest to LiveCodeBench's: whitespace-separated tokens, numbers
#: within 1e-6 absolute or relative (LiveCodeBench: stripped lines, decimal tokens within 1e-6; return
#: values equal, or ``np.allclose`` for scalars).
COMPARE = "float"
#: LiveCodeBench's per-test codes and messages (testing_util.py) for our verdicts.
LCB_FAILURES = {"wrong_answer": (-2, "Wrong Answer"), "timeout": (-3, "Time Limit Exceeded"),
                "runtime_error": (-4, "Runtime Error"), "memory_limit": (-4, "Runtime Error"),
                "output_limit": (-4, "Runtime Error"), "compile_error": (-4, "Error during testing")}
#: The ``code`` task's ``extracted``: "<verdict> (<passed>/<total> tests)".
VERDICT_RE = re.compile(r"^(\w+) \((\d+)/(\d+) tests\)$")
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class InvalidUnitTests(ValueError):
    """``verifier_metadata.unit_tests`` is not LiveCodeBench unit tests (the door answers 422)."""


@dataclass(frozen=True)
class UnitTests:
    """LiveCodeBench unit tests: ``fn_name`` None is stdin/stdout, else function-call tests."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    fn_name: str | None = None


def is_code_gen_row(row: Any) -> bool:
    """Does the verify body carry code_gen's ``verifier_metadata.unit_tests``?"""
    metadata = row.get(VERIFIER_METADATA) if isinstance(row, Mapping) else None
    return isinstance(metadata, Mapping) and UNIT_TESTS in metadata


def extract_code(model_output: str) -> str:
    """Gym's code: the lines between the last two lines holding a triple backtick; "" with fewer than two."""
    lines = model_output.split("\n")
    fences = [i for i, line in enumerate(lines) if FENCE in line]
    if len(fences) < 2:
        return ""
    return "\n".join(lines[fences[-2] + 1:fences[-1]])


def _strings(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidUnitTests(f"unit_tests.{name} must be a list of strings")
    return tuple(value)


def _unpack(packed: Any) -> Mapping[str, Any]:
    try:
        unpacked = json.loads(zlib.decompress(base64.b64decode(packed, validate=True)))
    except (TypeError, ValueError, binascii.Error, zlib.error) as exc:
        raise InvalidUnitTests(f"unit_tests.packed is not base64 of zlib-compressed JSON: {exc}") from None
    if not isinstance(unpacked, Mapping):
        raise InvalidUnitTests("unit_tests.packed must hold a JSON object {inputs, outputs}")
    return unpacked


def parse_unit_tests(raw: Any) -> UnitTests:
    """``verifier_metadata.unit_tests`` (plain or packed) as :class:`UnitTests`; raises InvalidUnitTests."""
    if not isinstance(raw, Mapping):
        raise InvalidUnitTests("verifier_metadata.unit_tests must be an object {inputs, outputs, fn_name?}")
    source = _unpack(raw["packed"]) if "packed" in raw else raw
    for name in ("inputs", "outputs"):
        if name not in source:
            raise InvalidUnitTests(f"unit_tests.{name} is required")
    inputs, outputs = _strings(source["inputs"], "inputs"), _strings(source["outputs"], "outputs")
    if len(inputs) != len(outputs):
        raise InvalidUnitTests(f"unit_tests has {len(inputs)} inputs but {len(outputs)} outputs")
    fn_name = raw.get("fn_name")
    if fn_name is not None and not isinstance(fn_name, str):
        raise InvalidUnitTests(f"unit_tests.fn_name must be a string or null, got {type(fn_name).__name__}")
    return UnitTests(inputs, outputs, fn_name or None)


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidUnitTests(f"{what} is not JSON ({exc}): {text[:80]!r}") from None


def call_case(inputs: str, output: str, index: int) -> dict[str, Any]:
    """One function-call test: a JSON value per line of ``inputs`` (the arguments), ``output`` JSON."""
    args = [_json(line, f"unit_tests.inputs[{index}] line {n + 1}") for n, line in enumerate(inputs.split("\n"))]
    return {"args": args, "expected": _json(output, f"unit_tests.outputs[{index}]")}


def reference_of(tests: UnitTests, language: str = "python") -> dict[str, Any]:
    """The ``code`` task's reference for the tests."""
    if tests.fn_name is None:
        cases = [{"stdin": i, "expected_stdout": o} for i, o in zip(tests.inputs, tests.outputs)]
        return {"cases": cases, "style": "stdio", "language": language, "compare": COMPARE}
    cases = [call_case(i, o, n) for n, (i, o) in enumerate(zip(tests.inputs, tests.outputs))]
    return {"cases": cases, "style": "function_call", "entry_point": tests.fn_name, "language": language,
            "compare": COMPARE}


def language_of(row: Mapping[str, Any]) -> str:
    """``verifier_metadata.language``, else the row's ``language``, else Python."""
    for value in (row[VERIFIER_METADATA].get("language"), row.get("language")):
        if value not in (None, ""):
            if not isinstance(value, str):
                raise InvalidUnitTests(f"language must be a string, got {type(value).__name__}")
            return value
    return "python"


def is_python(language: str) -> bool:
    return language.lower() in ("python", "python3", "py")


def program_of(code: str, language: str) -> str:
    """What the sandbox runs: the code, after LiveCodeBench's imports for Python; "" for no code."""
    if not code:
        return ""
    return PYTHON_PRELUDE + code if is_python(language) else code


def reasoning_format_violation(response: Any, output_text: str) -> bool:
    """Gym's check: a think tag in the answer, or more than one opening or closing tag in the reasoning."""
    if THINK_OPEN in output_text or THINK_CLOSE in output_text:
        return True
    summaries = [summary for item in response.get("output") or []
                 if isinstance(item, Mapping) and item.get("type") == "reasoning"
                 for summary in item.get("summary") or []]
    reasoning = "".join(s["text"] for s in summaries if isinstance(s, Mapping) and isinstance(s.get("text"), str))
    return reasoning.count(THINK_OPEN) > 1 or reasoning.count(THINK_CLOSE) > 1


def lcb_result(extracted: str) -> tuple[list[bool | int] | None, dict[str, Any]]:
    """Gym's ``result`` and ``metadata`` from the ``code`` task's ``"<verdict> (<passed>/<total> tests)"``."""
    match = VERDICT_RE.match(extracted)
    if match is None:
        return None, {"verdict": extracted}
    verdict, passed, total = match.group(1), int(match.group(2)), int(match.group(3))
    if verdict == "accepted":
        return [True] * total, {"verdict": extracted}
    code, message = LCB_FAILURES.get(verdict, (-4, "Runtime Error"))
    return [True] * min(passed, max(total - 1, 0)) + [code], {"error_code": code, "error_message": message,
                                                               "verdict": extracted}


@dataclass(frozen=True)
class CodeGenRollout:
    """One code_gen verify body as our rollout, with what Gym's reply reports besides the reward."""

    rollout: Rollout
    model_output: str
    code: str
    difficulty: Any
    format_violation: bool


def rollout_of(reward: str, row: Mapping[str, Any], model_output: str, prompt: str) -> CodeGenRollout:
    """The rollout for a code_gen body whose ``response`` text is ``model_output``; raises InvalidUnitTests."""
    language = language_of(row)
    reference = reference_of(parse_unit_tests(row[VERIFIER_METADATA][UNIT_TESTS]), language)
    code = extract_code(model_output) if model_output.strip() else ""
    return CodeGenRollout(Rollout(id="0", task=reward, completion=program_of(code, language), reference=reference,
                                  prompt=prompt),
                          model_output, code, row[VERIFIER_METADATA].get("difficulty"),
                          bool(code) and reasoning_format_violation(row["response"], model_output))


def verify_response(row: Mapping[str, Any], job: CodeGenRollout, result: RolloutResult,
                    seconds: float) -> dict[str, Any]:
    """``CompCodingVerifyResponse`` for a scored rollout: the row, the reward and Gym's code_gen fields."""
    components = {k: float(v) for k, v in result.components.items()}
    reply = {**row, "reward": result.score, "reward_components": components, "extracted_model_output": None,
             "extracted_model_code": None, "result": None, "metadata": None, "unit_tests_time_taken": None,
             "reasoning_format_violation_rate": 0.0, "difficulty": job.difficulty}
    if not job.model_output.strip():
        return reply
    reply["extracted_model_output"] = job.model_output
    if not job.code or result.status is RolloutStatus.NO_ANSWER:
        return reply
    results, metadata = lcb_result(result.extracted)
    reply.update(extracted_model_code=job.code, result=results, metadata=metadata, unit_tests_time_taken=seconds)
    if job.format_violation:
        reply.update(reward=0.0, reasoning_format_violation_rate=1.0)  # Gym's reasoning_format_penalty default
    return reply
