"""An Executor that runs programs on a SandboxService over gRPC (``python -m sandbox serve``).

It speaks the same :class:`~reward_core.sandbox_contract.Executor` protocol as the local
backends, so the ``code`` reward task (or anything else) switches between an
in-process sandbox and a remote one by configuration::

    executor = create_remote_executor("sandbox-host:50053", call_timeout_s=300)   # from sandbox
    results = executor.execute_batch(requests)

The calls go through the core's :class:`~reward_core.clients.SandboxClient`. Error mapping,
following the protocol: a request the service refuses as unusable (INVALID_ARGUMENT) raises
InvalidExecutionRequest; any other failure of a call (unreachable, draining past the retries,
queue full, deadline, an answer that does not match the request) is a SANDBOX_ERROR result for
each of its programs -- never a verdict on the code. Only UNAVAILABLE is retried, by gRPC itself
(a service-config retry policy). The client is opened on first use in the calling process
(after any fork), with ``security`` (TLS, bearer token; default: the ``REWARD_SUITE_*``
environment, see ``reward_core/channel_security.py``): a server that wants a token it did not get
answers UNAUTHENTICATED, which is a SANDBOX_ERROR result like any other failed call.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence

import grpc

from reward_core.channel_config import SANDBOX_SERVICE, ChannelConfig
from reward_core.channel_security import ClientSecurity
from reward_core.clients import SandboxClient, SandboxReplyError
from reward_core.sandbox_contract import (
    Cancellation,
    ExecutionRequest,
    ExecutionResult,
    InvalidExecutionRequest,
    UnsupportedLanguage,
    Verdict,
)

logger = logging.getLogger(__name__)

SERVICE = SANDBOX_SERVICE


def sandbox_error(request: ExecutionRequest, error: str) -> ExecutionResult:
    return ExecutionResult(id=request.id, verdict=Verdict.SANDBOX_ERROR, error=error, backend="remote")


class RemoteExecutor:
    """Executor over a SandboxService endpoint. Thread-safe; ``close()`` closes the channel."""

    def __init__(self, endpoint: str, *, call_timeout_s: float = 300.0, max_batch: int = 256,
                 max_message_mb: int = 64, max_attempts: int = 3, security: ClientSecurity | None = None) -> None:
        if not endpoint:
            raise ValueError("endpoint is empty: give the host:port of a `python -m sandbox serve` server")
        if call_timeout_s <= 0 or max_batch < 1 or max_message_mb < 1 or not 1 <= max_attempts <= 5:
            raise ValueError("need call_timeout_s > 0, max_batch >= 1, max_message_mb >= 1, 1 <= max_attempts <= 5")
        self.endpoint = endpoint
        self.name = f"remote:{endpoint}"
        self.call_timeout_s = call_timeout_s
        self.max_batch = max_batch
        self.security = ClientSecurity.from_env() if security is None else security
        # The core's channel factory: UNAVAILABLE retried by gRPC, keepalive, sizes, TLS and token.
        self._channel_config = ChannelConfig(max_message_mb=max_message_mb, max_attempts=max_attempts,
                                             initial_backoff_s=0.2, max_backoff_s=2.0, wait_for_ready=False,
                                             services=(SERVICE,), security=self.security)
        self._lock = threading.Lock()
        self._client: SandboxClient | None = None
        self._pid = -1

    def _sandbox(self) -> SandboxClient:
        """This process's client (one inherited through a fork is the parent's: never used)."""
        with self._lock:
            if self._client is None or self._pid != os.getpid():
                self._client = SandboxClient(self.endpoint, timeout_s=self.call_timeout_s,
                                             channel=self._channel_config, connect_timeout_s=None)
                self._pid = os.getpid()
            return self._client

    def execute(self, request: ExecutionRequest, cancel: Cancellation | None = None) -> ExecutionResult:
        """One program; ``cancel`` firing cancels its call (a SANDBOX_ERROR result, the server stops it)."""
        return self._call([request], cancel)[0]

    def execute_batch(self, requests: Sequence[ExecutionRequest]) -> list[ExecutionResult]:
        """One ExecuteBatch call per ``max_batch`` requests; results in request order."""
        results: list[ExecutionResult] = []
        for start in range(0, len(requests), self.max_batch):
            results += self._call(requests[start:start + self.max_batch])
        return results

    def _call(self, requests: Sequence[ExecutionRequest], cancel: Cancellation | None = None) -> list[ExecutionResult]:
        try:
            return self._sandbox().execute_batch(requests, cancel=cancel)
        except grpc.FutureCancelledError:
            return [sandbox_error(r, f"sandbox at {self.endpoint}: cancelled: the call was cancelled or its "
                                     "deadline passed") for r in requests]
        except grpc.RpcError as exc:
            code, details = exc.code(), exc.details()
            if code == grpc.StatusCode.INVALID_ARGUMENT:
                unsupported = UnsupportedLanguage.from_message(details or "")
                if unsupported is not None:   # the server lacks the toolchain: unscored, never a 0
                    raise unsupported from None
                raise InvalidExecutionRequest(f"sandbox at {self.endpoint} refused the request: {details}") from None
            logger.warning("sandbox at %s failed a call of %d programs: %s: %s",
                           self.endpoint, len(requests), code.name, details)
            return [sandbox_error(r, f"sandbox at {self.endpoint}: {code.name}: {details}") for r in requests]
        except SandboxReplyError as exc:
            return [sandbox_error(r, str(exc)) for r in requests]

    def close(self) -> None:
        with self._lock:
            if self._client is not None and self._pid == os.getpid():
                self._client.close()
            self._client = None
