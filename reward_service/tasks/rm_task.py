"""The ``rm`` task: a learned reward model's score, from a RewardModelService over gRPC.

The reward server calls a separate reward-model server (``reward-service serve-rm``) through
the core's client (:class:`~reward_core.clients.RewardModelClient`), one call per job of up to
``batch_size`` items, so the RM server can batch them with other calls. Configure the endpoint
per deployment::

    tasks:
      rm: {options: {endpoint: "rm-host:50052", normalize: true}}
    rewards:
      math_rm: {components: {math: 1.0, rm: 0.1}}

or with the server's ``--rm-endpoint`` (``REWARD_SERVICE_RM_ENDPOINT``), which the registry
passes as the default ``endpoint``. Without an endpoint, or when the RM server fails, each
rollout is answered ERROR (unscored), never 0. TLS and the bearer token for the RM server come
from the ``REWARD_SUITE_*`` environment (``REWARD_SUITE_AUTH_TOKEN[_FILE]``,
``REWARD_SUITE_TLS_CA``; see ``reward_core/channel_security.py``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import grpc

from reward_core.channel_config import ChannelConfig
from reward_core.channel_security import ClientSecurity
from reward_core.clients import RewardModelClient
from reward_core.rm_contract import RewardModelReplyError
from reward_service.task_api import InvalidTaskOptions, Task, TaskInput, TaskOutcome

#: The server setting that gives this task its default endpoint (flag and environment variable).
ENDPOINT_SETTING = "--rm-endpoint (REWARD_SERVICE_RM_ENDPOINT)"
MAX_MESSAGE_MB = 64


class RewardModelUnavailable(RuntimeError):
    """The reward model could not score: no endpoint configured, or the RM server failed."""


class RewardModelTask(Task):
    """Scores (prompt, completion) with a reward model; ``normalize`` picks the normalized score."""

    name = "rm"
    runs_in_server = True  # one channel to the reward model for the whole server
    cacheable = False  # the model behind the endpoint may change: never answered from the reward cache
    description = "learned reward model score of (prompt, completion), from a RewardModelService"
    batch_size = 64
    endpoint_field = "rm_endpoint"

    def __init__(self, endpoint: str | None = "", normalize: bool = True, timeout_s: float = 30.0) -> None:
        super().__init__()
        endpoint = "" if endpoint is None else endpoint
        if not isinstance(endpoint, str):
            raise InvalidTaskOptions(f"rm endpoint must be a 'host:port' string, got {endpoint!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < math.inf:
            raise InvalidTaskOptions(f"rm timeout_s must be a positive number of seconds, got {timeout_s!r}")
        self.endpoint = endpoint.strip()
        if not isinstance(normalize, bool):
            raise InvalidTaskOptions(f"rm normalize must be true or false, got {normalize!r}")
        self.normalize = normalize
        self.timeout_s = float(timeout_s)
        self.time_limit_s = self.timeout_s + 5.0  # the reward server's hard limit for rm jobs
        self._lock = threading.Lock()
        self._client: RewardModelClient | None = None

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self.score_batch([TaskInput(completion, reference, prompt)])[0]

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        """One Score call for the whole batch; raises RewardModelUnavailable when it fails."""
        if not items:
            return []
        try:
            reply = self._rm().score([(item.prompt, item.completion) for item in items])
        except grpc.RpcError as exc:
            raise RewardModelUnavailable(
                f"reward model at {self.endpoint} failed: {exc.code().name}: {exc.details()}") from None
        except RewardModelReplyError as exc:
            raise RewardModelUnavailable(str(exc)) from None
        outcomes = []
        for result in reply.results:
            value = result.normalized_score if self.normalize else result.score
            outcomes.append(TaskOutcome(score=value, components={"rm": value},
                                        detail=f"truncated to {result.num_tokens} tokens" if result.truncated else ""))
        return outcomes

    def _rm(self) -> RewardModelClient:
        """The client, opened on first use: tasks are built before the worker pool starts, and no
        channel may exist before it forks."""
        if not self.endpoint:
            raise RewardModelUnavailable(
                f"task {self.name!r} has no reward-model endpoint: set tasks.rm.options.endpoint or the "
                f"server's {ENDPOINT_SETTING} to the host:port of a `reward-service serve-rm` server")
        with self._lock:
            if self._client is None:
                try:
                    # The core's channel factory: only UNAVAILABLE (a draining RM server) retried.
                    channel = ChannelConfig(max_message_mb=MAX_MESSAGE_MB, max_attempts=3, max_backoff_s=1.0,
                                            wait_for_ready=False, security=ClientSecurity.from_env())
                    self._client = RewardModelClient(self.endpoint, timeout_s=self.timeout_s, channel=channel,
                                                     connect_timeout_s=None)
                except (ValueError, OSError) as exc:
                    raise RewardModelUnavailable(
                        f"cannot open a channel to the reward model at {self.endpoint}: {exc}") from None
            return self._client
