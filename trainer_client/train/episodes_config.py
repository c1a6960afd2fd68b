"""The ``episodes`` section: multi-turn, tool-using rollouts from an environment (``episodes``).

With ``episodes.environment`` set, ``trainer-client grpo`` trains on episodes instead of single
completions: each row of the environment's ``split`` is opened as a session, the policy writes a
turn, a tool call in it (``tool_call_format``) is answered by the environment, and so on until the
answer is submitted, the policy writes a turn with no call, or ``max_turns`` turns were written.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainer_client.train.config import _help

TOOL_CALL_FORMATS = ("hermes",)
TOOL_PROMPTS = ("full", "names", "none")


@dataclass(frozen=True)
class EpisodesConfig:
    environment: str = _help("environment to train on (e.g. arithmetic_tools; docs/environments.md); empty: "
                             "single-turn rollouts from data.train", default="")
    endpoint: str = _help("host:port of a server with the environment service (reward-service serve "
                          "--serve-environments); empty: the embedded reward server, started with "
                          "--serve-environments", default="")
    split: str = _help("the environment's split whose rows are trained on", default="train")
    rows: int = _help("train on the split's first N rows, drawn in a seeded order (checked against the split's "
                      "size at the first step)", default=1000)
    seed: int = _help("the seed each episode is opened with (rows generated from it; same seed, same rows)",
                      default=0)
    max_turns: int = _help("most policy turns per episode; an episode still running then is finished with its "
                           "last turn as the final message", default=4)
    tool_call_format: str = _help("how a turn calls a tool: hermes = <tool_call>{\"name\": ..., \"arguments\": "
                                  "{...}}</tool_call> (Hermes/Qwen templates); a turn stops at the closing tag",
                                  default="hermes")
    tool_prompt: str = _help("what the system prompt says about the tools: full (the format and each tool's "
                             "JSON schema), names (the format and the tool names), none (the environment's "
                             "prompt only)", default="full")
    tool_role: str = _help("the chat role tool output is rendered with: tool, or user for a chat template "
                           "without a tool role (the output wrapped in <tool_response> tags)", default="tool")
    max_tool_output_chars: int = _help("tool output longer than this is cut before the policy sees it",
                                       default=2000)
    deadline_s: float = _help("deadline of one episode asked of the server (0: the server's default)",
                              default=0.0)
    timeout_s: float = _help("client deadline of one call on the environment service", default=120.0)

    @property
    def enabled(self) -> bool:
        return bool(self.environment)

    def __post_init__(self) -> None:
        if self.tool_call_format not in TOOL_CALL_FORMATS:
            raise ValueError(f"episodes.tool_call_format must be one of {TOOL_CALL_FORMATS}, "
                             f"got {self.tool_call_format!r}")
        if self.tool_prompt not in TOOL_PROMPTS:
            raise ValueError(f"episodes.tool_prompt must be one of {TOOL_PROMPTS}, got {self.tool_prompt!r}")
        if self.tool_role not in ("tool", "user"):
            raise ValueError(f"episodes.tool_role must be tool or user, got {self.tool_role!r}")
        if self.max_turns < 1 or self.rows < 1 or self.max_tool_output_chars < 1:
            raise ValueError("need episodes.max_turns >= 1, episodes.rows >= 1, episodes.max_tool_output_chars >= 1")
        if self.deadline_s < 0 or self.timeout_s <= 0:
            raise ValueError("need episodes.deadline_s >= 0 (0: the server's default) and episodes.timeout_s > 0")
        if self.endpoint and ":" not in self.endpoint:
            raise ValueError(f"episodes.endpoint must be host:port, got {self.endpoint!r}")
