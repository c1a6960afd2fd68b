"""What a judge call is: the endpoint it goes to, the call itself, and the reply.

Plain frozen dataclasses, shared by the client layer (``client.py``), the tasks that judge
(``reward_service/tasks/judge_*.py``) and the rewards config's ``judges:`` section.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The APIs a judge endpoint may be called through.
JUDGE_APIS = ("chat", "responses")


def _cache_spec_ok(spec: str) -> bool:
    return spec in ("memory", "off") or (spec.startswith("sqlite:") and len(spec) > len("sqlite:"))


@dataclass(frozen=True)
class JudgeEndpoint:
    """One judge: an OpenAI-compatible endpoint and model, with the limits this server keeps for it.

    Built from the rewards config's ``judges: {name: {...}}`` or from a task's ``judge`` option
    (:meth:`from_options`). The limits are shared by every task and caller in this server process.
    """

    base_url: str = field(metadata={"help": "the endpoint's base URL, ending in /v1"})
    model: str = field(metadata={"help": "the model name sent in each request"})
    api: str = field(default="chat", metadata={"help": "'chat' (/v1/chat/completions) or 'responses' (/v1/responses)"})
    api_key_env: str = field(default="", metadata={
        "help": "name of an environment variable holding the API key ('': none, sent as 'EMPTY')"})
    max_concurrency: int = field(default=8, metadata={"help": "calls in flight to this endpoint, all callers together"})
    requests_per_minute: float = field(default=0.0, metadata={"help": "request quota per minute (0: no limit)"})
    tokens_per_minute: float = field(default=0.0, metadata={
        "help": "token quota per minute, prompt (estimated at 4 characters a token) plus max_tokens (0: no limit)"})
    max_retries: int = field(default=3, metadata={
        "help": "retries of a timeout-free failure (connection error, 429, 5xx), all within the call's deadline"})
    name: str = field(default="", metadata={"help": "the judge's name in metrics and logs"})
    cache: str = field(default="memory", metadata={
        "help": "verdict cache: 'memory', 'sqlite:PATH' (shared by replicas on one file system) or 'off'"})
    cache_entries: int = field(default=100_000, metadata={"help": "verdicts kept in memory (least recently used go)"})

    def __post_init__(self) -> None:
        if not self.base_url:
            raise ValueError("judge endpoint: 'base_url' is required, e.g. http://localhost:8000/v1")
        if not self.model:
            raise ValueError(f"judge endpoint {self.base_url}: 'model' is required (the name the server serves)")
        if self.api not in JUDGE_APIS:
            raise ValueError(f"judge endpoint {self.label}: api must be one of {JUDGE_APIS}, not {self.api!r}")
        if self.max_concurrency < 1:
            raise ValueError(f"judge endpoint {self.label}: max_concurrency must be >= 1, not {self.max_concurrency}")
        if self.requests_per_minute < 0 or self.tokens_per_minute < 0:
            raise ValueError(f"judge endpoint {self.label}: requests_per_minute and tokens_per_minute must be >= 0 "
                             "(0: no limit)")
        if self.max_retries < 0:
            raise ValueError(f"judge endpoint {self.label}: max_retries must be >= 0, not {self.max_retries}")
        if not _cache_spec_ok(self.cache):
            raise ValueError(f"judge endpoint {self.label}: cache must be 'memory', 'off' or 'sqlite:PATH', "
                             f"not {self.cache!r}")
        if self.cache_entries < 1:
            raise ValueError(f"judge endpoint {self.label}: cache_entries must be >= 1, not {self.cache_entries}")

    @property
    def label(self) -> str:
        """The judge's name, or ``model@base_url`` when it has none (the ``judge`` label of its metrics)."""
        return self.name or f"{self.model}@{self.base_url}"

    @classmethod
    def from_options(cls, value: JudgeEndpoint | Mapping[str, Any], *, name: str = "") -> JudgeEndpoint:
        """A task's ``judge`` option (or one entry of the config's ``judges:``) as an endpoint.

        Raises ValueError naming the unknown keys and the accepted ones.
        """
        if isinstance(value, JudgeEndpoint):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"a judge must be a mapping of {sorted(f.name for f in dataclasses.fields(cls))} "
                             f"(or the name of one under the rewards config's 'judges:'), not {value!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(value) - known
        if unknown:
            raise ValueError(f"judge {name or value.get('name', '')!r}: unknown settings {sorted(unknown)}; "
                             f"known: {sorted(known)}")
        missing = [k for k in ("base_url", "model") if not value.get(k)]
        if missing:
            raise ValueError(f"judge {name or value.get('name', '')!r}: {' and '.join(missing)} required "
                             "(e.g. base_url: http://localhost:8000/v1, model: the name the server serves)")
        settings = dict(value)
        if name and not settings.get("name"):
            settings["name"] = name
        return cls(**settings)

    def to_options(self) -> dict[str, Any]:
        """The settings as a plain mapping (what :meth:`from_options` reads back)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class JudgeCall:
    """One request to a judge: chat messages and sampling parameters.

    Every field is part of the verdict cache's key, with the endpoint's model, URL and API.
    """

    messages: tuple[Mapping[str, str], ...]
    temperature: float = 0.0
    max_tokens: int = 64
    seed: int | None = 0
    #: Non-empty: the reply must be exactly one of these (vLLM's ``guided_choice``, sent in the body).
    choices: tuple[str, ...] = ()
    #: Hash of the template and parser that built the messages and will read the reply.
    template_version: str = ""

    def __post_init__(self) -> None:
        if not self.messages:
            raise ValueError("a judge call needs at least one message")
        for m in self.messages:
            if not (isinstance(m, Mapping) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                raise ValueError(f"each judge message must be a mapping with string 'role' and 'content', not {m!r}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, not {self.max_tokens}")

    @property
    def deterministic(self) -> bool:
        """Whether the same call should get the same verdict: greedy, or sampled with a fixed seed.

        Only these are cached: a sampled call without a seed asks for a fresh sample each time.
        """
        return self.temperature == 0.0 or self.seed is not None

    def estimated_tokens(self) -> int:
        """Tokens this call may use, for the tokens-per-minute quota: the prompt at 4 characters a
        token (no tokenizer needed), plus the most the judge may write."""
        chars = sum(len(m["content"]) for m in self.messages)
        return chars // 4 + 1 + self.max_tokens


@dataclass(frozen=True)
class JudgeReply:
    """The judge's text; ``cached`` when it came from the verdict cache (no call made)."""

    text: str
    cached: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0
