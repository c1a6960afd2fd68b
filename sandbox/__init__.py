"""Isolated execution of untrusted code against tests, with verdicts that cannot be forged.

One interface (:class:`Executor`): ``execute(request) -> ExecutionResult`` and
``execute_batch``; results carry a :class:`Verdict`, per-test outcomes
(partial credit), captured output, exit status, resource usage and which limit
was hit. Executors never raise on hostile code.

* ``create_executor("process")`` (default) -- bubblewrap slots with warm
  zygotes; OS isolation (namespaces, unprivileged uid, rlimits, cgroups).
* ``create_executor("docker")`` -- the same runtime inside containers.
* ``create_remote_executor("host:port")`` -- a SandboxService (``python -m sandbox serve``) over gRPC.

Before anything runs: ``build_request`` turns JSON-shaped tests (a HumanEval check, a list of
cases) into a request, ``validate_request`` refuses one a local executor could not run (unknown
language, no tests for the style, check code that does not parse), ``prompt_compiles`` says
whether a HumanEval prompt may travel as the request's trusted prompt, and ``load_languages``
reads a languages file.

Test styles: HumanEval ``check(candidate)`` (asserts evaluated by a trusted
process on plain data), STDIO (output compared on the host), FUNCTION_CALL
(return values compared on the host). Design: sandbox/ARCHITECTURE.md.
Importing this package starts nothing.
"""

from reward_core.sandbox_contract import (
    CaseOutcome,
    ExecutionRequest,
    ExecutionResult,
    Executor,
    InvalidExecutionRequest,
    LimitHit,
    Limits,
    OutputCompare,
    SandboxUnavailable,
    TestCase,
    TestResult,
    TestStyle,
    Verdict,
)
from sandbox.factory import BACKENDS, create_executor, create_remote_executor
from sandbox.languages import load_languages
from sandbox.submissions import build_request
from sandbox.zygote_client import prompt_compiles, validate_request

__all__ = [
    "BACKENDS",
    "CaseOutcome",
    "ExecutionRequest",
    "ExecutionResult",
    "Executor",
    "InvalidExecutionRequest",
    "LimitHit",
    "Limits",
    "OutputCompare",
    "SandboxUnavailable",
    "TestCase",
    "TestResult",
    "TestStyle",
    "Verdict",
    "build_request",
    "create_executor",
    "load_languages",
    "prompt_compiles",
    "create_remote_executor",
    "validate_request",
]
