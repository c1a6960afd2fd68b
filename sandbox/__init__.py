"""Isolated execution of untrusted code against tests, with verdicts that cannot be forged.

One interface (:class:`Executor`): ``execute(request) -> ExecutionResult`` and
``execute_batch``; results carry a :class:`Verdict`, per-test outcomes
(partial credit), captured output, exit status, resource usage and which limit
was hit. Executors never raise on hostile code.

* ``create_executor("process")`` (default) -- bubblewrap slots with warm
  zygotes; OS isolation (namespaces, unprivileged uid, rlimits, cgroups).
* ``create_executor("docker")`` -- the same runtime inside containers.

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
from sandbox.factory import BACKENDS, create_executor

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
    "create_executor",
]
