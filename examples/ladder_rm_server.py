"""``reward-service serve-rm`` as a child process on loopback, for the length of a ``with`` block.

Why: the ladder comparison (``examples/ladder_compare.py``) trains PPO against a learned reward
served the way a deployment serves it: the reward service's ``rm`` task calls a separate
RewardModelService over gRPC. This starts that server on a free port, waits on the standard
health check's Watch stream until the model is loaded (no sleep-polling), and stops it with
SIGTERM (graceful drain) at the end.

    with ServedRewardModel("runs/ladder/rm", "runs/ladder/rm_server.log") as rm:
        ...  # tasks: {rm: {options: {endpoint: rm.address}}}
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward_core.channel_config import REWARD_MODEL_SERVICE
from reward_core.ports import free_port


class RewardModelServerError(RuntimeError):
    """The reward-model server did not come up (its log file says why)."""


class ServedRewardModel:
    """A ``serve-rm`` child process serving ``checkpoint`` on ``127.0.0.1:<free port>``."""

    def __init__(self, checkpoint: str | Path, log_path: str | Path, threads: int = 1,
                 startup_timeout_s: float = 120.0) -> None:
        self.address = f"127.0.0.1:{free_port()}"
        self.command = [sys.executable, "-m", "reward_service", "serve-rm", "--checkpoint", str(checkpoint),
                        "--host", "127.0.0.1", "--port", self.address.rsplit(":", 1)[1],
                        "--torch-threads", str(threads), "--grace-s", "2"]
        self.log_path = Path(log_path)
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def __enter__(self) -> ServedRewardModel:
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_until_serving()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_until_serving(self) -> None:
        request = health_pb2.HealthCheckRequest(service=REWARD_MODEL_SERVICE)
        try:
            with grpc.insecure_channel(self.address) as channel:
                grpc.channel_ready_future(channel).result(timeout=self.startup_timeout_s)
                for reply in health_pb2_grpc.HealthStub(channel).Watch(request, timeout=self.startup_timeout_s):
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
        except (grpc.RpcError, grpc.FutureTimeoutError) as exc:
            raise RewardModelServerError(f"serve-rm at {self.address} did not come up: {exc}; see "
                                         f"{self.log_path}") from None
        raise RewardModelServerError(f"serve-rm at {self.address} ended its health stream; see {self.log_path}")

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
