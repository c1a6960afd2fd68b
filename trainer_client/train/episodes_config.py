"""The ``episodes`` section: multi-turn, tool-using rollouts from an environment (``episodes``).

With ``episodes.environment`` set, ``trainer-client grpo`` trains on episodes instead of single
completions: each row (of the environment's ``split``, or with ``rows_from: data`` the rows of
``data.train``, sent to the environment) is opened as a session, the policy writes a turn, the tool
calls in it (``tool_call_format``) are answered by the environment, and so on until the answer is
submitted, the policy writes a turn with no call, or ``max_turns`` turns were written. With
``run.eval_every`` the held-out episodes are ``eval_split``'s first ``eval_rows`` rows (or
``run.eval_data``'s rows).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainer_client.train.config import _help
from trainer_client.train.tool_calls import TOOL_CALL_FORMATS

ROWS_FROM = ("environment", "data")
TOOL_PROMPTS = ("full", "names", "none")


@dataclass(frozen=True)
class EpisodesConfig:
    environment: str = _help("environment to train on (e.g. arithmetic_tools; docs/environments.md); empty: "
                             "single-turn rollouts from data.train", default="")
    endpoint: str = _help("host:port of a server with the environment service (reward-service serve "
                          "--serve-environments); empty: the embedded reward server, started with "
                          "--serve-environments", default="")
    rows_from: str = _help("where the rows come from: environment (rows 0..rows-1 of its split, made by the "
                           "server) or data (the rows of data.train, read with data.prompt_key/reference_key and "
                           "sent to the environment: {\"prompt\": text or messages, \"reference\": {...}}; "
                           "split and rows unused)", default="environment")
    split: str = _help("the environment's split whose rows are trained on", default="train")
    rows: int = _help("train on the split's first N rows, drawn in a seeded order (checked against the split's "
                      "size at the first step)", default=1000)
    eval_split: str = _help("run.eval_every: the environment's split of held-out rows (unless run.eval_data "
                            "names a file of rows)", default="test")
    eval_rows: int = _help("run.eval_every: evaluate on the eval split's first N rows, one greedy episode each",
                           default=100)
    seed: int = _help("the seed each episode is opened with (rows generated from it; same seed, same rows)",
                      default=0)
    max_turns: int = _help("most policy turns per episode; an episode still running then is finished with its "
                           "last turn as the final message", default=4)
    tool_call_format: str = _help("how a turn calls a tool: hermes = <tool_call>{\"name\": ..., \"arguments\": "
                                  "{...}}</tool_call> (Hermes/Qwen templates; a turn stops at the closing tag), "
                                  "llama3_json = [<|python_tag|>]{\"name\": ..., \"parameters\": {...}} (Llama "
                                  "3.1-3.3; calls separated by ;), mistral = [TOOL_CALLS][{\"name\": ..., "
                                  "\"arguments\": {...}}] (Mistral v0.3/Nemo/Small); every call of a turn is "
                                  "answered, in order", default="hermes")
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
        if self.rows_from not in ROWS_FROM:
            raise ValueError(f"episodes.rows_from must be one of {ROWS_FROM}, got {self.rows_from!r}")
        if self.max_turns < 1 or self.rows < 1 or self.max_tool_output_chars < 1 or self.eval_rows < 1:
            raise ValueError("need episodes.max_turns >= 1, episodes.rows >= 1, episodes.max_tool_output_chars >= 1, "
                             "episodes.eval_rows >= 1")
        if self.deadline_s < 0 or self.timeout_s <= 0:
            raise ValueError("need episodes.deadline_s >= 0 (0: the server's default) and episodes.timeout_s > 0")
        if self.endpoint and ":" not in self.endpoint:
            raise ValueError(f"episodes.endpoint must be host:port, got {self.endpoint!r}")
