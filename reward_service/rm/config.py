"""The reward-model server's configuration: what ``reward-service serve-rm`` takes as flags.

A plain frozen dataclass with no server imports, so the CLI builds its flags without loading the
server or torch (``cli.py`` imports each program lazily).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reward_core.config_flags import nested
from reward_core.dtype_names import canonical_dtype
from reward_core.grpc_common import DEFAULT_MAX_CONNECTION_AGE_S, server_options
from reward_core.server_security import ServerSecurityConfig
from reward_service.rm.dynamic_batcher import BatcherConfig
from reward_service.rm.request_limits import MIB, RequestLimits


@dataclass(frozen=True)
class RewardModelServerConfig:
    """Everything ``reward-service serve-rm`` needs; built from CLI flags (see cli.py)."""

    checkpoint: str = field(default="", metadata={"help": "checkpoint directory written by trainer-client train-rm"})
    checkpoint_root: str = field(default="", metadata={
        "help": "Reload loads only checkpoints under this directory (default: the one holding --checkpoint)"})
    host: str = field(default="127.0.0.1", metadata={
        "help": "address to bind (0.0.0.0 for all: needs TLS, a token or --insecure)"})
    port: int = field(default=50052, metadata={"help": "port to bind; 0 picks a free one"})
    device: str = field(default="cpu", metadata={"help": "cpu or cuda[:N]"})
    dtype: str = field(default="float32", metadata={"help": "float32 or bfloat16 (fp32, bf16 also accepted)"})
    max_length: int = field(default=0, metadata={"help": "tokens per pair (0: the checkpoint's own)"})
    batching: BatcherConfig = nested(BatcherConfig)  # --max-batch-tokens, --max-wait-ms, ..., --no-batching
    limits: RequestLimits = nested(RequestLimits)     # --max-items-per-request, ..., --max-call-s
    max_connection_age_s: float = field(default=DEFAULT_MAX_CONNECTION_AGE_S, metadata={
        "help": "clients reconnect (re-resolving DNS) after this long, so new replicas get traffic (0: never)"})
    metrics_port: int = field(default=0, metadata={"help": "Prometheus /metrics port (0: off)"})
    metrics_host: str = field(default="", metadata={"help": "address /metrics binds (empty: the --host)"})
    torch_threads: int = field(default=0, metadata={"help": "torch intra-op threads (0: torch's default)"})
    grace_s: float = field(default=10.0, metadata={"help": "seconds in-flight calls get on SIGTERM"})
    security: ServerSecurityConfig = field(default_factory=ServerSecurityConfig)

    def __post_init__(self) -> None:
        if not self.checkpoint:
            raise ValueError("checkpoint is required: pass --checkpoint DIR (a directory from trainer-client train-rm)")
        if not 0 <= self.port <= 65535 or not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"port and metrics_port must be in 0..65535, got {self.port}, {self.metrics_port}")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if self.max_length < 0 or self.torch_threads < 0:
            raise ValueError("max_length and torch_threads must be >= 0 (0: default)")

    def reload_root(self) -> Path:
        """The directory Reload may load from: ``checkpoint_root``, else the parent of ``checkpoint``."""
        return Path(self.checkpoint_root or Path(self.checkpoint).resolve().parent).resolve()

    def grpc_options(self) -> list[tuple[str, int]]:
        """Transport options: requests up to twice ``max_message_mb`` reach the handler, which refuses
        those over the limit with a message naming the flag (grpc's own refusal names none)."""
        receive = "grpc.max_receive_message_length"
        max_message_mb = self.limits.max_message_mb
        return [(key, value) for key, value in server_options(max_message_mb, self.max_connection_age_s)
                if key != receive] + [(receive, 2 * max_message_mb * MIB)]
