"""The built-in tools' names, descriptions and argument schemas (what the policy is shown)."""

from __future__ import annotations

from typing import Any

from reward_core.episode_contract import ToolSpec

#: The tools this package implements; an environment names the ones it offers in ``tools``.
BUILTIN_TOOLS = ("python", "run_code", "calculator", "submit_answer")


def _object(properties: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_SPECS = {
    "python": ToolSpec(
        "python",
        "Runs Python code in a sandbox and returns its output. Variables, functions and imports of earlier "
        "successful calls in this session are kept. The value of a final expression is printed.",
        _object({"code": {"type": "string", "description": "Python source to run"}}, ("code",))),
    "run_code": ToolSpec(
        "run_code",
        "Runs a program in a sandbox (any language it supports) with the given stdin and returns its output "
        "and exit status. Nothing is kept between calls.",
        _object({"code": {"type": "string", "description": "the program's source"},
                 "language": {"type": "string", "description": "e.g. python, cpp, nodejs, go (default: python)"},
                 "stdin": {"type": "string", "description": "the program's standard input"}}, ("code",))),
    "calculator": ToolSpec(
        "calculator",
        "Evaluates an arithmetic expression exactly: + - * / // % ** (or ^), parentheses, and functions such as "
        "sqrt, factorial, gcd, sin, log, with constants pi and E. Returns the exact value (and a decimal one).",
        _object({"expression": {"type": "string", "description": "e.g. 48213 * 902137 or sqrt(2)/3"}},
                ("expression",))),
    "submit_answer": ToolSpec(
        "submit_answer",
        "Submits the final answer; it is verified, and the episode ends with its reward.",
        _object({"answer": {"type": "string", "description": "the final answer only"}}, ("answer",))),
}


def builtin_spec(name: str) -> ToolSpec:
    """The spec of built-in tool ``name`` (KeyError for another name)."""
    return _SPECS[name]
