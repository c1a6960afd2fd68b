"""The reward router's configuration: what ``reward-service serve`` and ``score`` take as flags.

Plain frozen dataclasses with no server imports, so the CLI builds its flags without loading the
router (``cli.py`` imports each program lazily).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reward_core.config_flags import nested
from reward_core.grpc_common import DEFAULT_MAX_CALL_S, DEFAULT_MAX_CONNECTION_AGE_S, server_options
from reward_core.server_security import ServerSecurityConfig
from reward_service.router.environments_config import EnvironmentsConfig
from reward_service.router.rewards_config import RewardsConfig, TaskEndpoints


@dataclass(frozen=True)
class ScorerConfig:
    """How the engine verifies: worker processes, limits, and the tasks it knows.

    Its fields are flags of ``reward-service serve`` (and ``score``); ``rewards`` comes from the
    ``--config`` file, ``endpoints`` has flags of its own (``--sandbox-endpoint``, ...).
    """

    workers: int = field(default=2, metadata={"help": "verification worker processes"})
    item_timeout_s: float = field(default=5.0, metadata={"help": "default hard time limit per item"})
    max_queue: int = field(default=100_000, metadata={"help": "pending items before RESOURCE_EXHAUSTED"})
    max_client_queue: int = field(default=25_000, metadata={
        "help": "pending items of one client (its reward-client-id metadata) before RESOURCE_EXHAUSTED"})
    memory_limit_mb: int = field(default=4096, metadata={"help": "address-space limit per worker (0: none)"})
    job_size: int = field(default=16, metadata={"help": "most unique items of one task per worker job"})
    io_threads: int = field(default=32, metadata={
        "help": "threads for tasks that wait on another service (code -> sandbox, rm -> reward model)"})
    strict_plugins: bool = field(default=False, metadata={
        "help": "refuse to start when an installed task plugin fails to import or load; without it the plugin "
                "is skipped, logged with its traceback, and calls naming its task are told why"})
    reward_cache_entries: int = field(default=500_000, metadata={
        "help": "outcomes the reward cache keeps in memory, least recently used dropped first (0: no cache; a "
                "repeated rollout of a deterministic task is then verified again)"})
    reward_cache_mb: int = field(default=512, metadata={"help": "memory the reward cache may use (MiB)"})
    reward_cache: str = field(default="", metadata={
        "help": "SQLite file backing the reward cache, shared by the replicas that name it (empty: memory only)"})
    reward_cache_disk_entries: int = field(default=10_000_000, metadata={
        "help": "rows the --reward-cache file keeps, the oldest written dropped first"})
    rewards: RewardsConfig = field(default_factory=RewardsConfig)
    endpoints: TaskEndpoints = nested(TaskEndpoints, help="where tasks that call another service (code, rm, prm) "
                                                          "find it")

    def __post_init__(self) -> None:
        if self.workers < 1 or self.job_size < 1 or self.io_threads < 1:
            raise ValueError(f"workers ({self.workers}), job_size ({self.job_size}) and io_threads "
                             f"({self.io_threads}) must be >= 1")
        if self.max_queue < 1 or self.max_client_queue < 1:
            raise ValueError(f"max_queue ({self.max_queue}) and max_client_queue ({self.max_client_queue}) "
                             "must be >= 1")
        if not self.item_timeout_s > 0:
            raise ValueError(f"item_timeout_s must be > 0 seconds, got {self.item_timeout_s}")
        if self.reward_cache_entries < 0 or self.reward_cache_mb < 1 or self.reward_cache_disk_entries < 1:
            raise ValueError(f"reward_cache_entries ({self.reward_cache_entries}) must be >= 0, reward_cache_mb "
                             f"({self.reward_cache_mb}) and reward_cache_disk_entries "
                             f"({self.reward_cache_disk_entries}) >= 1")
        if self.reward_cache and not self.reward_cache_entries:
            raise ValueError("--reward-cache names a file but --reward-cache-entries is 0 (no cache): drop one")


@dataclass(frozen=True)
class RequestLimits:
    """Limits checked on every request, each a flag of ``reward-service serve`` (named when it refuses)."""

    max_rollouts_per_request: int = field(default=8192, metadata={"help": "larger requests: INVALID_ARGUMENT"})
    max_item_timeout_s: float = field(default=60.0, metadata={"help": "largest item limit a request may ask"})
    max_completion_chars: int = field(default=1_000_000, metadata={
        "help": "longest completion accepted (characters); longer: INVALID_ARGUMENT"})
    max_streams: int = field(default=1024, metadata={
        "help": "open ScoreStream calls before RESOURCE_EXHAUSTED (health is always served)"})
    max_stream_pending: int = field(default=32, metadata={
        "help": "requests of one stream in progress before the server stops reading it (flow control)"})
    max_call_s: float = field(default=DEFAULT_MAX_CALL_S, metadata={
        "help": "longest a call waits for its rollouts, with or without a client deadline; then DEADLINE_EXCEEDED"})

    def __post_init__(self) -> None:
        small = {name: getattr(self, name) for name in ("max_rollouts_per_request", "max_streams",
                                                        "max_stream_pending", "max_completion_chars")}
        if min(small.values()) < 1:
            raise ValueError(f"each of {small} must be >= 1")
        if not self.max_call_s > 0:
            raise ValueError(f"max_call_s must be > 0 seconds, got {self.max_call_s}")


@dataclass(frozen=True)
class ServerConfig:
    """Everything ``reward-service serve`` needs; built from CLI flags (see cli.py)."""

    host: str = field(default="127.0.0.1", metadata={
        "help": "address to bind (0.0.0.0 for all: needs TLS, a token or --insecure)"})
    port: int = field(default=50051, metadata={"help": "port to bind; 0 picks a free one"})
    scorer: ScorerConfig = nested(ScorerConfig)      # --workers, --item-timeout-s, ..., --io-threads, endpoints
    limits: RequestLimits = nested(RequestLimits)    # --max-rollouts-per-request, ..., --max-call-s
    max_message_mb: int = field(default=64, metadata={"help": "largest request/response message"})
    grace_s: float = field(default=10.0, metadata={"help": "seconds in-flight calls get on SIGTERM"})
    max_connection_age_s: float = field(default=DEFAULT_MAX_CONNECTION_AGE_S, metadata={
        "help": "clients reconnect (re-resolving DNS) after this long, so new replicas get traffic (0: never)"})
    serve_sandbox: bool = field(default=True, metadata={
        "help": "also serve reward.v1.SandboxService on this port, on the code task's executor"})
    serve_environments: bool = field(default=False, metadata={
        "help": "also serve reward.v1.EnvironmentService on this port: multi-turn tool-using episodes "
                "(docs/environments.md; starts its own sandbox and calculator workers)"})
    environments: EnvironmentsConfig = nested(EnvironmentsConfig, flag_prefix="env-", env_prefix="ENV_",
                                              help="episodes (with --serve-environments): admission, deadlines, "
                                                   "tools")
    exit_with_parent: bool = field(default=False, metadata={
        "help": "drain and exit when the process that started this server dies (an embedded server)"})
    strict_canaries: bool = field(default=False, metadata={
        "help": "refuse to start when a task rewards one of its canaries (adversarial completions run at "
                "start-up: empty, special tokens, huge, hedges, echoes); without it each is logged as a warning"})
    metrics_port: int = field(default=0, metadata={"help": "Prometheus /metrics port (0: off)"})
    metrics_host: str = field(default="", metadata={"help": "address /metrics binds (empty: the --host)"})
    security: ServerSecurityConfig = field(default_factory=ServerSecurityConfig)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        if self.max_message_mb < 1:
            raise ValueError(f"max_message_mb must be >= 1, got {self.max_message_mb}")
        if not self.grace_s >= 0:
            raise ValueError(f"grace_s must be >= 0 seconds, got {self.grace_s}")
        if not self.scorer.item_timeout_s <= self.limits.max_item_timeout_s:
            raise ValueError(f"need 0 < item_timeout_s ({self.scorer.item_timeout_s}) <= max_item_timeout_s "
                             f"({self.limits.max_item_timeout_s})")

    def grpc_options(self) -> list[tuple[str, int]]:
        return server_options(self.max_message_mb, self.max_connection_age_s) + [
            ("grpc.keepalive_time_ms", 30_000),
            ("grpc.keepalive_timeout_ms", 10_000),
        ]
