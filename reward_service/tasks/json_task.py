"""Structured-output tasks: ``json_valid`` (the answer parses as JSON) and ``json_schema`` (it
conforms to the reference's JSON Schema, checked with the ``jsonschema`` library).

``json_schema`` reads the schema from ``schema`` (an object, or a JSON string) or from NeMo Gym's
``structured_outputs`` row fields ``schema_str`` with ``schema_type`` (only ``"json"`` here). An
invalid schema is INVALID_REFERENCE, never a 0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reward_service.task_api import Canary, InvalidReference, InvalidTaskOptions, Task, TaskOutcome
from reward_service.tasks.canaries import generic_canaries
from reward_service.tasks.options import choice_option
from reward_service.verifiers.structured import (
    EXTRACT_MODES,
    BadSchema,
    JsonParse,
    check_schema,
    parse_completion,
    schema_errors,
    schema_from,
)

TOP_LEVELS = {"any": (object,), "object": (dict,), "array": (list,), "container": (dict, list)}
#: The self-check's schema, and a prompt asking for it (the canaries' echo).
PERSON_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                 "required": ["name", "age"]}
PROMPT = "Reply with a JSON object giving the person's name and age."



def _excerpt(parsed: JsonParse) -> str:
    return json.dumps(parsed.value, ensure_ascii=False)[:200] if parsed.ok else parsed.text[:200]


class JsonValidTask(Task):
    """1 if the answer (the whole completion, or its fenced ```json block: ``extract``) is valid JSON."""

    name = "json_valid"
    description = "1 if the completion (or its fenced json block) parses as strict JSON, else 0"

    def __init__(self, extract: str = "auto", top_level: str = "any") -> None:
        super().__init__()
        self._extract = choice_option(self.name, "extract", extract, EXTRACT_MODES)
        self._top_level = choice_option(self.name, "top_level", top_level, TOP_LEVELS)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        parsed = parse_completion(completion, self._extract)
        if parsed is None:
            return TaskOutcome.no_answer("no JSON text found")
        if not parsed.ok:
            return TaskOutcome(0.0, components={"valid_json": 0.0}, extracted=parsed.text[:200], detail=parsed.error)
        if not isinstance(parsed.value, TOP_LEVELS[self._top_level]):
            return TaskOutcome(0.0, components={"valid_json": 1.0}, extracted=_excerpt(parsed),
                               detail=f"valid JSON, but a {type(parsed.value).__name__}, not a {self._top_level}")
        return TaskOutcome(1.0, components={"valid_json": 1.0}, extracted=_excerpt(parsed))

    def self_check(self) -> list[str]:
        cases = [('{"a": [1, 2.5, null, true]}', 1.0), ('```json\n{"a": 1}\n```', 1.0 if self._extract != "whole"
                                                                                   else 0.0),
                 ('{"a": 1,}', 0.0), ("NaN", 0.0), ("{'a': 1}", 0.0)]
        if self._top_level != "any":
            return []
        return [f"{text!r}: got {got}, want {want}" for text, want in cases
                if (got := self.score(text, {}).score) != want]

    def canaries(self) -> list[Canary]:
        """Any valid JSON text passes by definition ("{}", "0"; ``top_level`` narrows it): no such canary."""
        return [*generic_canaries({}, prompt=PROMPT), Canary("the prompt echoed", PROMPT, {}, PROMPT)]


class JsonSchemaTask(Task):
    """1 if the answer is JSON that conforms to the reference's JSON Schema (``strict``: as NeMo Gym)."""

    name = "json_schema"
    description = "1 if the completion's JSON conforms to reference.schema (JSON Schema), else 0"
    reference_fields = ("schema", "schema_str", "schema_type")

    def __init__(self, extract: str = "auto", strict: bool = False) -> None:
        super().__init__()
        self._extract = choice_option(self.name, "extract", extract, EXTRACT_MODES)
        if not isinstance(strict, bool):
            raise InvalidTaskOptions(f"option 'strict' must be true or false, got {strict!r}")
        self._strict = strict

    def _schema(self, reference: Mapping[str, Any]) -> Any:
        kind = reference.get("schema_type", "json")
        if str(kind).lower() != "json":
            raise InvalidReference(f"json_schema: schema_type {kind!r} is not supported (only 'json')")
        raw = reference.get("schema", reference.get("schema_str"))
        if raw is None:
            raise InvalidReference(f"task 'json_schema' needs 'schema' (or NeMo Gym's 'schema_str'); "
                                   f"got fields {sorted(reference)}")
        try:
            schema = schema_from(raw)
            check_schema(schema, self._strict)
        except BadSchema as exc:
            raise InvalidReference(f"json_schema: {exc}") from None
        return schema

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        self._schema(reference)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        schema = self._schema(reference)
        parsed = parse_completion(completion, self._extract)
        if parsed is None:
            return TaskOutcome.no_answer("no JSON text found")
        if not parsed.ok:
            return TaskOutcome(0.0, components={"valid_json": 0.0, "conforms": 0.0}, extracted=parsed.text[:200],
                               detail=parsed.error)
        try:
            errors = schema_errors(parsed.value, schema, self._strict)
        except BadSchema as exc:
            raise InvalidReference(f"json_schema: {exc}") from None
        conforms = 0.0 if errors else 1.0
        return TaskOutcome(conforms, components={"valid_json": 1.0, "conforms": conforms},
                           extracted=_excerpt(parsed), detail="; ".join(errors))

    def canaries(self) -> list[Canary]:
        row = {"schema": PERSON_SCHEMA}
        return [*generic_canaries(row, prompt=PROMPT), Canary("the prompt echoed", PROMPT, row, PROMPT),
                Canary("the schema echoed", json.dumps(PERSON_SCHEMA), row, PROMPT),
                Canary("an empty object", "{}", row, PROMPT),
                Canary("every candidate object", '{"name": "Ada"}\n{"age": 36}\n{"name": "Ada", "age": "36"}', row,
                       PROMPT)]

    def self_check(self) -> list[str]:
        schema = PERSON_SCHEMA
        cases = [('{"name": "Ada", "age": 36}', 1.0), ('{"name": "Ada", "age": "36"}', 0.0), ('{"name": "Ada"}', 0.0),
                 ('{"name": "Ada", "age": 36, "x": 1}', 0.0 if self._strict else 1.0), ("not json", 0.0)]
        return [f"{text!r}: got {got}, want {want}" for text, want in cases
                if (got := self.score(text, {"schema": schema}).score) != want]
