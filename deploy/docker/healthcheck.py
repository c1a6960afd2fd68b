"""Container health check: the standard gRPC health protocol, or GET /healthz for the HTTP door.

    python /opt/reward-suite/healthcheck.py grpc 50051     # exit 0 when SERVING
    python /opt/reward-suite/healthcheck.py http 8080      # exit 0 on HTTP 200

Shipped in every image because no grpc_health_probe binary can be built offline here.
TLS settings come from the same ``REWARD_SUITE_*`` environment as the server's clients
(health needs no token). Exit 1 with the reason on stderr otherwise.
"""

from __future__ import annotations

import sys
import urllib.request


def grpc_serving(port: int, timeout_s: float) -> str:
    """"" when the server's overall health is SERVING, else the reason."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from reward_core.channel_security import ClientSecurity, open_channel

    with open_channel(f"127.0.0.1:{port}", security=ClientSecurity.from_env()) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
        except grpc.RpcError as exc:
            return f"{exc.code().name}: {exc.details()}"
    return ("" if reply.status == health_pb2.HealthCheckResponse.SERVING
            else health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def http_ok(port: int, timeout_s: float) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout_s) as reply:
            return "" if reply.status == 200 else f"HTTP {reply.status}"
    except OSError as exc:
        return str(exc)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("grpc", "http") or not argv[1].isdigit():
        print("usage: healthcheck.py grpc|http PORT", file=sys.stderr)
        return 2
    why = (grpc_serving if argv[0] == "grpc" else http_ok)(int(argv[1]), 3.0)
    if why:
        print(f"unhealthy: {why}", file=sys.stderr)
    return 1 if why else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
