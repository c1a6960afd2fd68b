"""JSON Schema conformance with the ``jsonschema`` library (draft from ``$schema``, else 2020-12).

``strict`` makes a schema strict as NeMo Gym's ``structured_outputs`` server does before it
validates: every object schema that lists ``properties`` requires all of them and allows no
others; like Gym's, the walk goes through object values only (not into lists such as ``anyOf``).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from typing import Any

import jsonschema
import referencing.exceptions
from jsonschema import Draft202012Validator


class BadSchema(ValueError):
    """The schema itself is not a valid JSON Schema (or not JSON)."""


def strictified(schema: Any) -> Any:
    """A copy of ``schema`` made strict (see the module docstring)."""
    schema = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("properties"), Mapping):
                node["required"] = list(node["properties"])
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)

    walk(schema)
    return schema


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str, strict: bool) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    if not isinstance(schema, (dict, bool)):
        raise BadSchema(f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
    if strict:
        schema = strictified(schema)
    cls = jsonschema.validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise BadSchema(f"invalid JSON Schema: {exc.message[:200]}") from None
    return cls(schema)


def schema_from(value: Any) -> Any:
    """A schema given as an object or as a JSON string (NeMo Gym's ``schema_str``); raises BadSchema."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise BadSchema(f"the schema string is not JSON: {exc}") from None
    return value


def check_schema(schema: Any, strict: bool = False) -> None:
    """Raises BadSchema when ``schema`` is no valid JSON Schema."""
    _validator(json.dumps(schema, sort_keys=True), strict)


def schema_errors(instance: Any, schema: Any, strict: bool = False, limit: int = 3) -> list[str]:
    """Up to ``limit`` messages of how ``instance`` breaks ``schema`` (empty: it conforms).

    Raises BadSchema for an invalid schema, or one whose ``$ref`` cannot be resolved offline.
    """
    validator = _validator(json.dumps(schema, sort_keys=True), strict)
    try:
        errors = []
        for error in validator.iter_errors(instance):
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            errors.append(f"{where}: {error.message[:200]}")
            if len(errors) >= limit:
                break
        return errors
    except referencing.exceptions.Unresolvable as exc:
        raise BadSchema(f"the schema has a $ref that cannot be resolved: {exc}") from None
