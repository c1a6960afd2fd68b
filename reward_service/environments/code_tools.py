"""The sandbox tools (``python``, ``run_code``): their execution requests, and results as tool output.

A program is run as one STDIO case with no expected output (nothing is judged: the output is the
answer). Whatever the program did -- printed, raised, ran past its time limit, used too much
memory, did not compile -- is the model's doing and is answered as output; only a SANDBOX_ERROR
(the sandbox died, is unreachable, refused to start) is a failure of ours: SANDBOX_FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reward_core.episode_contract import EpisodeStatus
from reward_service.environments.python_cells import cell_program
from sandbox import ExecutionRequest, ExecutionResult, LimitHit, Limits, TestCase, TestStyle, Verdict


@dataclass(frozen=True)
class ToolAnswer:
    """What a tool answered: ``output`` for the policy, or ``failure`` (an unscored status of ours that ends
    the episode, ``error`` saying why). ``ran_clean``: a ``python`` cell that exited 0 (it is kept)."""

    output: str
    failure: EpisodeStatus | None = None
    error: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    ran_clean: bool = False


def python_request(previous: list[str], code: str, seed: int, limits: Limits) -> ExecutionRequest:
    """The execution of one ``python`` call: the session's kept cells replayed, then ``code``."""
    return ExecutionRequest(code=cell_program(previous, code, seed), language="python", style=TestStyle.STDIO,
                            cases=(TestCase(stdin="", expected_stdout=""),), limits=limits)


def run_code_request(code: str, language: str, stdin: str, limits: Limits) -> ExecutionRequest:
    """The execution of one ``run_code`` call."""
    return ExecutionRequest(code=code, language=language or "python", style=TestStyle.STDIO,
                            cases=(TestCase(stdin=stdin, expected_stdout=""),), limits=limits)


_STOPPED = {LimitHit.WALL_TIME: "time limit", LimitHit.CPU_TIME: "CPU time limit", LimitHit.MEMORY: "memory limit",
            LimitHit.OUTPUT: "output limit", LimitHit.FILE_SIZE: "file size limit",
            LimitHit.PROCESSES: "process limit"}


def answer_from_result(result: ExecutionResult, limits: Limits, max_chars: int) -> ToolAnswer:
    """A sandbox result as the tool's answer (see the module docstring)."""
    metadata = {"verdict": result.verdict.value, "exit_code": result.exit_code, "wall_s": result.wall_s}
    if result.verdict is Verdict.SANDBOX_ERROR:
        return ToolAnswer("", EpisodeStatus.SANDBOX_FAILED, f"the sandbox failed: {result.error or 'no detail'}",
                          metadata)
    parts = []
    if result.verdict is Verdict.COMPILE_ERROR:
        compiled = result.compile
        text = (compiled.stderr or compiled.stdout) if compiled is not None else ""
        parts.append(text or result.error or result.stderr)
        parts.append("[compile error]")
    else:
        parts += [result.stdout, result.stderr]
        if result.limit_hit is not LimitHit.NONE:
            what = _STOPPED.get(result.limit_hit, result.limit_hit.value)
            wall = f" of {limits.wall_s:g} s" if result.limit_hit is LimitHit.WALL_TIME else ""
            parts.append(f"[stopped: the program exceeded the {what}{wall}]")
        elif result.exit_code not in (0, None):
            parts.append(f"[exit code {result.exit_code}]")
        elif result.signal:
            parts.append(f"[killed by signal {result.signal}]")
    output = "\n".join(p.rstrip("\n") for p in parts if p and p.strip())
    clean = result.verdict in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER) and result.limit_hit is LimitHit.NONE
    return ToolAnswer(truncate(output or "[no output]", max_chars), metadata=metadata, ran_clean=clean)


def truncate(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` with a note of how much was left out."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n[... {len(text) - max_chars} more characters cut]"
