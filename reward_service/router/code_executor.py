"""The reward server's SandboxService: the ``code`` task's one executor, also served over gRPC.

With a local ``code`` task the reward server already runs a sandbox; serving it as
``reward.v1.SandboxService`` on the same port lets SandboxFusion-style clients (the HTTP
front door's ``/run_code``, verl) share those slots instead of starting a second sandbox.
"""

from __future__ import annotations

from collections.abc import Sequence

from reward_core.sandbox_contract import Cancellation, ExecutionRequest, ExecutionResult
from reward_service.tasks.code_task import CodeTask
from sandbox.language_list import executor_versions
from sandbox.languages import Language
from sandbox.request_limits import RequestLimits
from sandbox.servicer import SandboxServicer


class CodeTaskExecutor:
    """The code task's executor of this process as an ``Executor`` (created on first use, closed by the task)."""

    def __init__(self, task: CodeTask) -> None:
        self._task = task
        self.name = f"code-task:{task.backend}"

    def execute(self, request: ExecutionRequest, cancel: Cancellation | None = None) -> ExecutionResult:
        return self._task.executor().execute(request, cancel=cancel)

    def execute_batch(self, requests: Sequence[ExecutionRequest]) -> list[ExecutionResult]:
        return list(self._task.executor().execute_batch(requests))

    def language_versions(self) -> dict[str, str]:
        """ListLanguages' versions: those of the task's executor (see sandbox/language_list.py)."""
        return executor_versions(self._task.executor(), self._task.language_table())

    def close(self) -> None:
        """Nothing: the task owns the executor (the Scorer closes it)."""


def shared_sandbox_servicer(task: CodeTask) -> SandboxServicer | None:
    """A SandboxService on ``task``'s executor, or None when the task uses a remote sandbox."""
    if task.endpoint:
        return None
    languages: dict[str, Language] = task.language_table()
    return SandboxServicer(CodeTaskExecutor(task), languages, RequestLimits(), task.concurrency)
