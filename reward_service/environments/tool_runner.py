"""Runs one tool call of a session: argument checks, then the tool, off the event loop.

* ``python`` / ``run_code`` -- a program in the sandbox (``code_tools.py``; state across ``python``
  calls: ``python_cells.py``), on a thread; stopping the call kills the program.
* ``calculator`` -- ``calculator.evaluate`` in a supervised worker pool (hard time and memory limit).
* plugin tools -- the environment's function on a thread.

``submit_answer`` ends the episode, so the session manager handles it (``verify`` here).
Arguments that do not match a tool's schema, or an unknown tool, are the model's doing: answered
as output, the episode goes on. Failures of ours are a :class:`ToolAnswer` with ``failure`` set.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
from collections.abc import Mapping
from typing import Any

import jsonschema

from reward_core.episode_contract import EpisodeStatus, ToolCall, ToolSpec
from reward_core.sandbox_contract import Cancellation
from reward_service.environments.answer_check import AnswerCheck, AnswerVerifier
from reward_service.environments.code_tools import (
    ToolAnswer,
    answer_from_result,
    python_request,
    run_code_request,
    truncate,
)
from reward_service.environments.env_api import PluginTool, ToolContext
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.session_state import EpisodeSession
from reward_service.pool.worker_pool import ItemTimeout, JobError, PoolError, WorkerCrashed, WorkerPool
from sandbox import ExecutionRequest, Executor, InvalidExecutionRequest, Limits


def argument_errors(spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
    """Why ``arguments`` do not match the tool's schema ("" when they do)."""
    validator = jsonschema.Draft202012Validator(dict(spec.parameters))
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    return "; ".join(f"{'/'.join(map(str, e.absolute_path)) or 'arguments'}: {e.message}" for e in errors[:3])


class ToolRunner:
    """The tools' shared machinery: one sandbox executor, the calculator pool, the verifier, a thread pool.

    Created and closed by the session manager's factory; the parts it is given are owned by their creator.
    """

    def __init__(self, config: EnvironmentsConfig, executor: Executor, calculator: WorkerPool,
                 verifier: AnswerVerifier, threads: concurrent.futures.ThreadPoolExecutor) -> None:
        self.config, self.executor, self.calculator, self.verifier = config, executor, calculator, verifier
        self._threads = threads
        #: Tool work running now, in every session (programs, plugin functions, calculator jobs).
        self.running: set[concurrent.futures.Future] = set()
        self.limits = Limits(wall_s=config.program_timeout_s, cpu_s=config.program_timeout_s,
                             memory_mb=config.program_memory_mb)

    async def run(self, session: EpisodeSession, call: ToolCall) -> ToolAnswer:
        """Runs ``call`` (not ``submit_answer``) in ``session``."""
        specs = {spec.name: spec for spec in session.env.tool_specs()}
        spec = specs.get(call.name)
        if spec is None:
            return ToolAnswer(f"error: unknown tool {call.name!r}; tools: {sorted(specs)}")
        problem = argument_errors(spec, call.arguments)
        if problem:
            return ToolAnswer(f"error: invalid arguments for {call.name}: {problem}")
        args = call.arguments
        if call.name == "python":
            return await self._python(session, str(args["code"]))
        if call.name == "run_code":
            request = run_code_request(str(args["code"]), str(args.get("language") or "python"),
                                       str(args.get("stdin") or ""), self.limits)
            return await self._sandbox(session, request)
        if call.name == "calculator":
            return await self._calculate(str(args["expression"]))
        plugin = {tool.name: tool for tool in session.env.plugin_tools()}[call.name]
        return await self._plugin(session, plugin, args)

    async def _python(self, session: EpisodeSession, code: str) -> ToolAnswer:
        if len(session.cells) >= self.config.max_python_cells:
            return ToolAnswer(f"error: this session already keeps {len(session.cells)} python cells, the most "
                              "it may; use run_code for more programs")
        answer = await self._sandbox(session, python_request(session.cells, code, session.spec.seed, self.limits))
        if answer.ran_clean:
            session.cells.append(code)
        return answer

    async def _sandbox(self, session: EpisodeSession, request: ExecutionRequest) -> ToolAnswer:
        """Runs ``request`` on a thread; a cancelled call kills its program (the session waits for it on close)."""
        cancel = Cancellation()
        try:
            future = self._threads.submit(self.executor.execute, request, cancel)
        except RuntimeError as exc:  # the thread pool is shut down: the manager is closing
            return ToolAnswer("", EpisodeStatus.SANDBOX_FAILED, f"the sandbox is closed: {exc}")
        self._track(session, future, cancel)
        try:
            result = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            cancel.cancel()
            raise
        except InvalidExecutionRequest as exc:  # an unknown language, a toolchain this sandbox lacks
            return ToolAnswer(f"error: {exc}")
        except Exception as exc:  # noqa: BLE001 - an executor that raises is a failed sandbox, never a verdict
            return ToolAnswer("", EpisodeStatus.SANDBOX_FAILED, f"the sandbox failed: {type(exc).__name__}: {exc}")
        return answer_from_result(result, request.limits, self.config.max_output_chars)

    async def _calculate(self, expression: str) -> ToolAnswer:
        try:
            future = self.calculator.submit(expression, timeout_s=self.config.calculator_timeout_s)
        except PoolError as exc:  # closed, or its queue is full
            return ToolAnswer("", EpisodeStatus.TOOL_FAILED, f"the calculator is unavailable: {exc}")
        self._track(None, future, None)
        try:
            value = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except ItemTimeout:
            return ToolAnswer(f"error: the expression took longer than {self.config.calculator_timeout_s:g} s "
                              "to evaluate")
        except WorkerCrashed:
            return ToolAnswer("error: evaluating the expression exhausted the calculator's memory")
        except JobError as exc:  # sympy raised on this input (MemoryError, RecursionError): the expression's doing
            return ToolAnswer(f"error: the expression could not be evaluated ({exc.exc_type})")
        except PoolError as exc:
            return ToolAnswer("", EpisodeStatus.TOOL_FAILED, f"the calculator failed: {exc}")
        return ToolAnswer(truncate(str(value), self.config.max_output_chars))

    async def _plugin(self, session: EpisodeSession, tool: PluginTool, args: Mapping[str, Any]) -> ToolAnswer:
        context = ToolContext(session.session_id, session.row, session.spec.seed,
                              random.Random(f"{session.env.name}:{session.spec.seed}:{session.turns}"))
        future = self._threads.submit(tool.function, dict(args), context)
        self._track(session, future, None)
        try:
            output = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug, unscored
            return ToolAnswer("", EpisodeStatus.ERROR, f"tool {tool.name!r} of environment "
                              f"{session.env.name!r} raised {type(exc).__name__}: {exc}")
        if not isinstance(output, str):
            return ToolAnswer("", EpisodeStatus.ERROR, f"tool {tool.name!r} returned {type(output).__name__}, "
                              "not the text the policy sees")
        return ToolAnswer(truncate(output, self.config.max_output_chars))

    def _track(self, session: EpisodeSession | None, future: concurrent.futures.Future,
               cancel: Cancellation | None) -> None:
        """Counts ``future`` as running until done; the session (if any) stops it when it ends."""
        self.running.add(future)
        future.add_done_callback(self.running.discard)
        if session is not None:
            session.track(future, cancel)

    async def verify(self, session: EpisodeSession, completion: str) -> AnswerCheck:
        """The environment's task on ``completion`` (a submitted answer as ``Environment.completion`` makes it,
        or the policy's final message as it is)."""
        return await self.verifier.verify(session.env.task, completion, session.reference, session.prompt_text,
                                          session.spec.client_id)
