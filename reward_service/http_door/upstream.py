"""The gRPC servers behind the HTTP front door: one client each, the core's (``reward_core.clients``).

``Upstreams.score`` sends rollouts to the reward server through a :class:`MicroBatcher`, so
hundreds of one-sample HTTP calls become a few ``Score`` calls. The sandbox and reward-model
clients are used call for call (one HTTP call, one gRPC call: those servers batch themselves).
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import grpc

from reward_core.channel_config import ChannelConfig
from reward_core.channel_security import ClientSecurity
from reward_core.clients import AsyncRewardClient, AsyncRewardModelClient, AsyncSandboxClient
from reward_core.clients.environment import EnvironmentClient
from reward_core.clients.errors import ClientError
from reward_core.contract import Rollout, RolloutResult, ScoreBatchResult, TaskInfo
from reward_core.micro_batch import MicroBatcher


class UpstreamError(RuntimeError):
    """An upstream gRPC call failed; ``code`` is its status (the route maps it to an HTTP status)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class UpstreamConfig:
    """Where the front door sends its work (flags of ``reward-service serve-http``, but for the last two)."""

    reward: str = field(metadata={"help": "host:port of the reward server", "flag": "upstream"})
    sandbox: str = field(default="", metadata={"help": "host:port of a SandboxService (default: --upstream)"})
    rm: str = field(default="", metadata={"help": "host:port of the reward-model server (for /classify)"})
    timeout_s: float = field(default=300.0, metadata={"help": "deadline of each upstream call",
                                                      "flag": "upstream-timeout-s"})
    max_batch: int = field(default=256, metadata={"help": "rollouts per merged upstream Score call"})
    max_wait_ms: float = field(default=5.0, metadata={"help": "how long a merged batch waits for more calls"})
    environments: str = field(default="", metadata={
        "help": "host:port of the EnvironmentService behind the ORS, Gym and OpenEnv routes (default: --upstream)"})
    client_id: str = "http-door"     # the reward server's fair-share key for this front door
    security: ClientSecurity | None = None  # None: from the REWARD_SUITE_* environment

    def __post_init__(self) -> None:
        if not self.reward:
            raise ValueError("--upstream is empty: give the host:port of `reward-service serve`")
        if self.max_batch < 1 or self.max_wait_ms < 0 or self.timeout_s <= 0:
            raise ValueError("need --max-batch >= 1, --max-wait-ms >= 0 and --upstream-timeout-s > 0")


def upstream_message(exc: grpc.RpcError) -> str:
    """What to say of a failed upstream call: the client's own words naming the upstream when it went away
    or did not answer in time (gRPC's raw text, such as ``failed to connect to all addresses; ... ipv4:...``,
    says neither), else what the server said (a refusal's reason, for the caller to fix)."""
    code = exc.code()
    if isinstance(exc, ClientError) and code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return str(exc)
    return exc.details() or code.name


def upstream_error(exc: grpc.RpcError) -> UpstreamError:
    """The door's error for a failed upstream call (raise it ``from None``): its code and
    :func:`upstream_message`."""
    return UpstreamError(exc.code(), upstream_message(exc))


class Upstreams:
    """The open clients (create inside the event loop that will use them)."""

    def __init__(self, config: UpstreamConfig) -> None:
        self.config = config
        security = config.security if config.security is not None else ClientSecurity.from_env()
        channel = ChannelConfig(security=security, wait_for_ready=False)
        common = dict(timeout_s=config.timeout_s, channel=channel, client_id=config.client_id)
        # The door answers an unreachable upstream per call (503 with Retry-After), so its clients do not
        # wait for a first connection: wait_for_ready=False fails a call at once.
        self.reward = AsyncRewardClient(config.reward, connect_timeout_s=None, **common)
        self.sandbox_address = config.sandbox or config.reward
        self.sandbox = AsyncSandboxClient(self.sandbox_address, connect_timeout_s=None, **common)
        self.rm = AsyncRewardModelClient(config.rm, connect_timeout_s=None, **common) if config.rm else None
        # One stream per episode: a session stays on the replica that opened it (door replicas need affinity).
        self.environments = EnvironmentClient(config.environments or config.reward, connect_timeout_s=None,
                                              **common)
        self.batcher: MicroBatcher[Rollout, RolloutResult] = MicroBatcher(
            self._score_now, max_items=config.max_batch, max_wait_s=config.max_wait_ms / 1000.0)
        self._tasks: list[TaskInfo] | None = None
        self._tasks_by_name: dict[str, TaskInfo] = {}
        self._tasks_fetch: asyncio.Task[list[TaskInfo]] | None = None

    async def score(self, rollouts: Sequence[Rollout]) -> list[RolloutResult]:
        """One result per rollout, in order; concurrent callers share merged Score calls.

        Rollout ids must be unique within one caller's list; the batcher makes them unique
        across callers and restores them. A caller's groups (``group_id``) stay its own: they are
        tagged with the call before they are merged, so two callers' ``g0`` never join one group.
        """
        if not any(r.group_id for r in rollouts):  # nothing to tag (the usual one-sample call): no copies
            return await self.batcher.submit(rollouts)
        call = uuid.uuid4().hex[:12]
        tagged = [dataclasses.replace(r, group_id=f"{call}/{r.group_id}") if r.group_id else r for r in rollouts]
        results = await self.batcher.submit(tagged)
        return [dataclasses.replace(result, group_id=original.group_id)
                for result, original in zip(results, rollouts)]

    async def _score_now(self, rollouts: list[Rollout]) -> list[RolloutResult]:
        # ids made unique across callers (each caller's group ids are already its own: ``score``)
        unique = [Rollout(f"{i}", r.task, r.completion, r.reference, r.prompt, r.metadata, r.group_id)
                  for i, r in enumerate(rollouts)]
        try:
            batch = await self.reward.score_once(unique, f"http-{uuid.uuid4().hex[:12]}", 0.0)
        except grpc.RpcError as exc:  # gRPC's own or a client's typed error: same code() and details()
            raise upstream_error(exc) from None
        by_id = {r.id: r for r in batch.results}
        out = []
        for i, original in enumerate(rollouts):
            result = by_id[f"{i}"]
            error = result.error.replace(repr(f"{i}"), repr(original.id))   # messages name the caller's id
            out.append(dataclasses.replace(result, id=original.id, error=error, group_id=original.group_id,
                                           explanation=result.explanation.replace(repr(f"{i}"), repr(original.id))))
        return out

    async def score_request(self, rollouts: Sequence[Rollout], request_id: str,
                            item_timeout_s: float) -> ScoreBatchResult:
        """A request as it is (for ``POST /v1/score``): one Score call, no merging."""
        try:
            return await self.reward.score_once(rollouts, request_id, item_timeout_s)
        except grpc.RpcError as exc:  # gRPC's own or a client's typed error: same code() and details()
            raise upstream_error(exc) from None

    async def tasks(self) -> list[TaskInfo]:
        """The reward server's tasks (asked once, then cached; concurrent first callers share one
        ``ListTasks`` call and its failure, and the next caller after a failure asks again)."""
        if self._tasks is not None:
            return self._tasks
        if self._tasks_fetch is None:
            self._tasks_fetch = asyncio.get_running_loop().create_task(self.reward.list_tasks())
            self._tasks_fetch.add_done_callback(self._tasks_fetched)
        return await asyncio.shield(self._tasks_fetch)  # a cancelled caller leaves the others' call alone

    def _tasks_fetched(self, fetch: asyncio.Task[list[TaskInfo]]) -> None:
        self._tasks_fetch = None
        if not fetch.cancelled() and fetch.exception() is None:
            self._tasks = fetch.result()

    async def tasks_by_name(self) -> Mapping[str, TaskInfo]:
        """:meth:`tasks` by name (one lookup per call instead of a scan of every task)."""
        tasks = await self.tasks()
        if len(self._tasks_by_name) != len(tasks):  # first use (a name is never listed twice)
            self._tasks_by_name = {t.name: t for t in tasks}
        return self._tasks_by_name

    async def healthy(self) -> dict[str, bool]:
        """SERVING or not, per upstream (health checks need no token)."""
        clients = {"reward": self.reward, "sandbox": self.sandbox}
        if self.rm is not None:
            clients["rm"] = self.rm
        return {name: await client.serving(timeout_s=5) for name, client in clients.items()}

    async def close(self) -> None:
        await self.environments.close_client()  # releases the sessions it still holds
        for client in (self.reward, self.sandbox, self.rm):
            if client is not None:
                await client.close()
