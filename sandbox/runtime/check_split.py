"""How a HumanEval ``check(candidate)`` is cut into test cases.

Partial credit needs per-case outcomes, but HumanEval's tests are one
function of asserts. Rule (documented in sandbox/ARCHITECTURE.md):

* ``check_code``'s top-level statements (imports, ``METADATA``, helpers, the
  ``def check``) are *setup*, executed once.
* Each top-level statement of ``check``'s body that contains an ``assert``
  whose test is not a constant (``assert True, "..."`` is decoration) is one
  *case*; the others (assignments, imports, docstrings) are setup steps. All
  steps run in order in one namespace, so later statements see earlier
  assignments, and ``check``'s parameter is bound to the candidate.
* If no statement qualifies, or one cannot be compiled on its own (``return``,
  ``nonlocal``, ``yield`` in check's body), the whole ``check(candidate)``
  call is the single case.

The host uses :func:`count_cases` to know how many outcomes a report must
carry; the trusted supervisor uses :func:`plan_check` to run them. Both call
the same code, so they cannot disagree. Stdlib only.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from types import CodeType

FILENAME = "<check>"
PROMPT_FILENAME = "<prompt>"


class CheckCodeError(ValueError):
    """check_code is unusable: does not parse, or defines no ``check(candidate)``."""


@dataclass(frozen=True)
class Step:
    code: CodeType
    is_case: bool
    node: ast.stmt       # unparsed only when a message needs it ("assert candidate(2) == 4")

    @property
    def source(self) -> str:
        return _source(self.node)


@dataclass(frozen=True)
class CheckPlan:
    setup: CodeType      # the whole check module (defines check, imports, constants)
    param: str           # check's parameter name, bound to the candidate proxy
    steps: tuple[Step, ...]
    #: (args, kwargs) of the candidate calls the steps will certainly make first, in order: the
    #: supervisor sends them to B before running the check (pipelining; see harness.Remote).
    prefetch: tuple[tuple[tuple, dict], ...] = ()

    @property
    def n_cases(self) -> int:
        return sum(1 for s in self.steps if s.is_case)


def _find_check(module: ast.Module) -> ast.FunctionDef:
    found = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if not found:
        raise CheckCodeError("check_code must define a top-level function check(candidate)")
    func = found[-1]
    params = func.args.posonlyargs + func.args.args
    if not params:
        raise CheckCodeError("check() must take the candidate as its first parameter")
    return func


def _is_case(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Assert) and not isinstance(n.test, ast.Constant) for n in ast.walk(stmt))


_CONDITIONAL = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


def _certain_call(stmt: ast.stmt, param: str) -> tuple[tuple, dict] | None | bool:
    """For pipelining: the literal (args, kwargs) of the one candidate call ``stmt`` certainly makes.

    None: the statement does not mention the candidate (skip it). False: it does, but not as
    one unconditional call with literal arguments (stop prefetching here: what follows may
    depend on it).
    """
    mentions = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == param]
    if not mentions:
        return None
    if not isinstance(stmt, (ast.Assert, ast.Expr, ast.Assign)) or len(mentions) != 1:
        return False
    root = stmt.test if isinstance(stmt, ast.Assert) else stmt.value
    call = _find_unconditional_call(root, param)
    if call is None or any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    try:
        return (tuple(ast.literal_eval(a) for a in call.args),
                {k.arg: ast.literal_eval(k.value) for k in call.keywords})
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _find_unconditional_call(node: ast.AST, param: str) -> ast.Call | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == param:
        return node
    if isinstance(node, _CONDITIONAL):
        return None
    children = [node.left, node.comparators[0]] if isinstance(node, ast.Compare) else ast.iter_child_nodes(node)
    for child in children:                            # (a chained comparison's later operands are conditional)
        found = _find_unconditional_call(child, param)
        if found is not None:
            return found
    return None


def _prefetch(func: ast.FunctionDef, param: str, limit: int = 1000) -> tuple:
    calls = []
    for stmt in func.body:
        got = _certain_call(stmt, param)
        if got is False or len(calls) >= limit:
            break
        if got is not None:
            calls.append(got)
    return tuple(calls)


def _source(stmt: ast.stmt) -> str:
    try:
        text = ast.unparse(stmt)
    except Exception:  # noqa: BLE001 - unparse is best effort, only used for messages
        text = type(stmt).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def plan_check(check_code: str) -> CheckPlan:
    """Parse and compile check_code into setup + ordered steps. Raises CheckCodeError."""
    try:
        module = ast.parse(check_code, FILENAME)
        setup = compile(module, FILENAME, "exec")
    except (SyntaxError, ValueError) as exc:
        raise CheckCodeError(f"check_code does not compile: {exc}") from None
    func = _find_check(module)
    param = (func.args.posonlyargs + func.args.args)[0].arg
    steps = []
    for stmt in func.body:
        try:
            code = compile(ast.Module(body=[stmt], type_ignores=[]), FILENAME, "exec")
        except (SyntaxError, ValueError):
            steps = []
            break
        steps.append(Step(code=code, is_case=_is_case(stmt), node=stmt))
    if not any(s.is_case for s in steps):
        whole = ast.parse(f"check({param})").body[0]
        steps = [Step(code=compile(ast.Module(body=[whole], type_ignores=[]), FILENAME, "exec"), is_case=True,
                      node=whole)]
        return CheckPlan(setup=setup, param=param, steps=tuple(steps))
    return CheckPlan(setup=setup, param=param, steps=tuple(steps), prefetch=_prefetch(func, param))


def compile_prompt(prompt: str) -> CodeType:
    """The trusted prompt, compiled to run before the check's setup. Raises CheckCodeError.

    A prompt is trusted like the check code: the supervisor runs it, so the helpers it
    defines are the dataset's, whatever the program redefines (see harness.run_check).
    It must compile on its own (a HumanEval prompt does: its stub's body is a docstring).
    """
    try:
        return compile(prompt, PROMPT_FILENAME, "exec")
    except (SyntaxError, ValueError) as exc:
        raise CheckCodeError(f"prompt does not compile on its own ({exc}); send it only when it does, "
                             "e.g. a HumanEval prompt, whose function stub ends in a docstring") from None


@functools.lru_cache(maxsize=1024)
def check_prompt(prompt: str) -> None:
    """Raises CheckCodeError unless ``prompt`` compiles (host side; cached like count_cases)."""
    compile_prompt(prompt)


@functools.lru_cache(maxsize=1024)
def count_cases(check_code: str) -> int:
    """How many test cases check_code has (raises CheckCodeError if it is unusable).

    Cached: a GRPO group sends the same check code with every completion.
    """
    return plan_check(check_code).n_cases
