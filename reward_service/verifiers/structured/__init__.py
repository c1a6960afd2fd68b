"""Structured-output verifiers: JSON found and parsed strictly, JSON Schema conformance
(``jsonschema``), and function calls read from a completion and matched with the expected ones.
Pure functions, no I/O."""

from reward_service.verifiers.structured.json_text import EXTRACT_MODES, JsonParse, json_equal, parse_completion
from reward_service.verifiers.structured.schema import BadSchema, check_schema, schema_errors, schema_from
from reward_service.verifiers.structured.tool_calls import (
    BadCalls,
    CallMatch,
    ToolCall,
    expected_calls,
    match_calls,
    parse_calls,
)

__all__ = ["EXTRACT_MODES", "BadCalls", "BadSchema", "CallMatch", "JsonParse", "ToolCall", "check_schema",
           "expected_calls", "json_equal", "match_calls", "parse_calls", "parse_completion", "schema_errors",
           "schema_from"]
