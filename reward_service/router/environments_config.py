"""The episodes' configuration (``--env-*`` flags of ``reward-service serve --serve-environments``).

Admission, deadlines, the sandbox and verifier settings of the environments' session manager. It
lives beside the router's config, which holds it as the ``environments`` section of ``ServerConfig``,
so the router's config (and the CLI's flags) need no import of ``reward_service.environments``: that
package sits above the router (it verifies answers with the router's scorer). A plain frozen
dataclass with no server imports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class EnvironmentsConfig:
    """How episodes are admitted, bounded and run; each field's ``help`` says what it does."""

    max_sessions: int = field(default=64, metadata={"help": "episodes open at once; more wait for admission"})
    queue_timeout_s: float = field(default=10.0, metadata={
        "help": "how long an open waits for admission before it is REFUSED (with a retry hint)"})
    episode_deadline_s: float = field(default=600.0, metadata={
        "help": "default deadline of a whole episode (a spec's deadline_s overrides it, up to the maximum)"})
    max_episode_deadline_s: float = field(default=3600.0, metadata={"help": "largest deadline a spec may ask"})
    tool_deadline_s: float = field(default=60.0, metadata={
        "help": "deadline of one tool call (past it: TOOL_FAILED); a program's own time limit is below it"})
    idle_timeout_s: float = field(default=300.0, metadata={
        "help": "a session with no call for this long is reaped (its next call: SESSION_LOST)"})
    cleanup_deadline_s: float = field(default=10.0, metadata={
        "help": "how long closing a session waits for its running tool calls to stop"})
    reap_interval_s: float = field(default=1.0, metadata={"help": "how often deadlines and idle sessions are checked"})
    sandbox_backend: str = field(default="process", metadata={"help": "local sandbox backend: process or docker"})
    sandbox_endpoint: str = field(default="", metadata={
        "help": "a SandboxService host:port instead of a local sandbox (empty: local)"})
    sandbox_concurrency: int = field(default=0, metadata={"help": "local sandbox slots (0: the CPUs available)"})
    program_timeout_s: float = field(default=10.0, metadata={
        "help": "wall and CPU limit of one program run by python or run_code (the model's: answered as output)"})
    program_memory_mb: int = field(default=512, metadata={"help": "memory limit of one program"})
    max_python_cells: int = field(default=64, metadata={
        "help": "python cells a session keeps (replayed on each call); past it the call is refused as output"})
    calculator_timeout_s: float = field(default=2.0, metadata={"help": "hard limit of one calculator evaluation"})
    calculator_workers: int = field(default=1, metadata={"help": "calculator worker processes"})
    verify_workers: int = field(default=2, metadata={"help": "answer-verification worker processes"})
    verify_timeout_s: float = field(default=10.0, metadata={"help": "hard limit of one answer verification"})
    max_output_chars: int = field(default=8192, metadata={"help": "longest tool output returned (characters)"})
    max_tombstones: int = field(default=10_000, metadata={
        "help": "ids of reaped sessions remembered, so their next call says why they are gone"})

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            floor = 0 if f.name == "sandbox_concurrency" else 1e-9
            if not (value >= floor and math.isfinite(value)):
                raise ValueError(f"environments: {f.name}={value!r} must be a finite number "
                                 f"{'>= 0' if floor == 0 else '> 0'} (--{f.name.replace('_', '-')})")
        if self.episode_deadline_s > self.max_episode_deadline_s:
            raise ValueError(f"environments: episode_deadline_s={self.episode_deadline_s} is above "
                             f"max_episode_deadline_s={self.max_episode_deadline_s}: raise the maximum or lower it")
        if self.program_timeout_s >= self.tool_deadline_s:
            raise ValueError(f"environments: program_timeout_s={self.program_timeout_s} must be below "
                             f"tool_deadline_s={self.tool_deadline_s} (a program past its own limit is the model's "
                             "doing; the tool deadline is for our failures)")
