"""The ``tool_call`` task: the completion's function calls against the expected ones.

Expected calls: ``tool_calls`` (a list of ``{"name", "arguments"}`` or OpenAI ``{"type":
"function", "function": {...}}`` objects, or a JSON string of one), NeMo Gym's ``xlam_fc`` field
``expected_answers``, or ``answer`` holding them as a JSON string (an OpenRLHF label). An empty
list means no call should be made.

Predicted calls: from the text (Hermes ``<tool_call>`` blocks, OpenAI ``tool_calls`` JSON, see
``reward_service.verifiers.structured.tool_calls``), or, when the rollout's metadata carries
``function_calls`` (a JSON list of ``{"name", "arguments"}``: what the HTTP door's NeMo Gym route
sends for the response's ``function_call`` items), from there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reward_service.task_api import Canary, InvalidReference, InvalidTaskOptions, Task, TaskInput, TaskOutcome
from reward_service.tasks.canaries import generic_canaries
from reward_service.verifiers.structured import BadCalls, ToolCall, expected_calls, match_calls, parse_calls
from reward_service.verifiers.structured.tool_calls import calls_from_value

#: The rollout metadata key the HTTP door fills with a Responses API output's function calls.
FUNCTION_CALLS_METADATA = "function_calls"
EXPECTED_FIELDS = ("tool_calls", "expected_answers", "answer")
#: The canaries' row: one expected call, the tool as a prompt declares it, and other cities to hedge with.
WEATHER_CALL = {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}
WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather forecast for a city",
                                                  "parameters": {"type": "object", "properties": {
                                                      "city": {"type": "string"}, "days": {"type": "integer"}},
                                                      "required": ["city", "days"]}}}
PROMPT = f"Tools: {json.dumps([WEATHER_TOOL])}\nWhat will the weather be in Paris over the next 3 days?"


class ToolCallTask(Task):
    """1 when the predicted calls are the expected ones, in any order (``reward: fraction``: the
    share matched, over the larger of the two counts, so extra calls cost too)."""

    name = "tool_call"
    description = ("function calls (Hermes <tool_call> blocks or OpenAI tool_calls JSON) against the expected "
                   "calls: name and JSON arguments, order-insensitive; all-or-nothing or a fraction")
    reference_fields = EXPECTED_FIELDS

    def __init__(self, reward: str = "exact", extra_arguments: str = "forbid") -> None:
        super().__init__()
        if reward not in ("exact", "fraction"):
            raise InvalidTaskOptions(f"option 'reward' must be 'exact' or 'fraction', got {reward!r}")
        if extra_arguments not in ("forbid", "allow"):
            raise InvalidTaskOptions(f"option 'extra_arguments' must be 'forbid' or 'allow', got {extra_arguments!r}")
        self._reward = reward
        self._extra = extra_arguments

    def _expected(self, reference: Mapping[str, Any]) -> list[ToolCall]:
        field = next((f for f in EXPECTED_FIELDS if reference.get(f) is not None), None)
        if field is None:
            raise InvalidReference(f"task 'tool_call' needs the expected calls in one of {list(EXPECTED_FIELDS)}; "
                                   f"got fields {sorted(reference)}")
        try:
            return expected_calls(reference[field])
        except BadCalls as exc:
            raise InvalidReference(f"tool_call: {field}: {exc}") from None

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        self._expected(reference)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self._score(completion, reference, {})

    def score_item(self, item: TaskInput) -> TaskOutcome:
        return self._score(item.completion, item.reference, item.metadata)

    def _score(self, completion: str, reference: Mapping[str, Any], metadata: Mapping[str, str]) -> TaskOutcome:
        expected = self._expected(reference)
        predicted = _metadata_calls(metadata.get(FUNCTION_CALLS_METADATA)) or parse_calls(completion)
        if expected and not predicted:
            return TaskOutcome.no_answer("no function call found")
        match = match_calls(predicted, expected, self._extra)
        reward = match.fraction if self._reward == "fraction" else (1.0 if match.exact else 0.0)
        denominator = max(len(expected), 1)
        components = {"calls_matched": match.matched / denominator if expected else float(not predicted),
                      "names_matched": match.names_matched / denominator if expected else float(not predicted)}
        detail = (f"{match.matched} of {len(expected)} expected call(s) matched by {len(predicted)} predicted"
                  + (f" ({match.malformed} malformed)" if match.malformed else ""))
        extracted = json.dumps([c.as_json() for c in predicted], ensure_ascii=False)[:300]
        return TaskOutcome(reward, components=components, extracted=extracted, detail=detail)

    def canaries(self) -> list[Canary]:
        """Extra calls cost: with ``reward: fraction`` a hedge of k calls holding the right one earns 1/k."""
        row = {"tool_calls": [WEATHER_CALL]}
        cities = ["Rome", "Paris", "Berlin", "Madrid"]
        hedge = "\n".join(f'<tool_call>{{"name": "get_weather", "arguments": {{"city": "{c}", "days": 3}}}}</tool_call>'
                          for c in cities)
        share = 1 / len(cities) if self._reward == "fraction" else 0.0
        every_argument = '<tool_call>{"name": "get_weather", "arguments": {"city": ["Rome", "Paris"], "days": 3}}' \
                         "</tool_call>"
        return [*generic_canaries(row, prompt=PROMPT), Canary("the prompt echoed", PROMPT, row, PROMPT),
                Canary("the tool's declaration echoed", json.dumps(WEATHER_TOOL), row, PROMPT),
                Canary("hedge: a call per candidate city", hedge, row, PROMPT, share),
                Canary("hedge: every candidate in one argument", every_argument, row, PROMPT)]

    def self_check(self) -> list[str]:
        gold = [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
                {"name": "get_time", "arguments": {"tz": "CET"}}]
        hermes = ('<tool_call>{"name": "get_time", "arguments": {"tz": "CET"}}</tool_call>\n'
                  '<tool_call>{"name": "get_weather", "arguments": {"days": 3.0, "city": "Paris"}}</tool_call>')
        openai = json.dumps({"tool_calls": [{"type": "function", "function": {"name": n["name"], "arguments":
                                                                           json.dumps(n["arguments"])}} for n in gold]})
        wrong = '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome", "days": 3}}</tool_call>'
        cases = [(hermes, 1.0), (openai, 1.0), (wrong, 0.0)]
        return [f"{text[:60]!r}: got {got}, want {want}" for text, want in cases
                if (got := self.score(text, {"tool_calls": gold}).score) != want]


def _metadata_calls(raw: str | None) -> list[ToolCall]:
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    return calls_from_value(value) or []
