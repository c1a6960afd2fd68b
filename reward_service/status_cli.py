"""``reward-service status``: one screen on a running reward server, for a person at a terminal.

    reward-service status --endpoint localhost:50051
    reward-service status --endpoint rewards:50051 --metrics-url http://rewards:9100/metrics --interval 5

Health (the standard gRPC health check of the server and of ``reward.v1.RewardService``) and
the tasks it serves; with ``--metrics-url``, what its /metrics says: throughput over
``--interval`` seconds (two scrapes), error rates, the worker pool's backlog and restarts,
open streams, and the share of zero-variance groups. The security flags are those of every
client (``--tls-ca``, ``--auth-token-file``, ...). Tasks whose plugin failed to load (per-task
health NOT_SERVING, left out of ListTasks) are named. Exit status 0 when the server is serving,
answers and serves every task it was given, 1 when it is not serving, cannot be reached, or left a
task out.
"""

from __future__ import annotations

import argparse
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from reward.v1 import reward_pb2, reward_pb2_grpc
from reward_core.channel_security import add_client_security_flags, client_security_from_args, open_channel
from reward_core.contract import RolloutStatus

__all__ = ["MetricsSnapshot", "add_status_command", "cmd_status", "metrics_lines", "scrape"]

SERVICE_NAME = reward_pb2.DESCRIPTOR.services_by_name["RewardService"].full_name
SERVING = health_pb2.HealthCheckResponse.ServingStatus.Name(health_pb2.HealthCheckResponse.SERVING)
Labels = tuple[tuple[str, str], ...]


def add_status_command(sub: argparse._SubParsersAction) -> None:
    """Adds ``status`` to the ``reward-service`` subcommands."""
    status = sub.add_parser("status", help="health, tasks and metrics of a running server, on one screen")
    status.add_argument("--endpoint", required=True, help="host:port of the reward server")
    status.add_argument("--metrics-url", default="", help="its /metrics URL, e.g. http://host:9100/metrics")
    status.add_argument("--interval", type=float, default=1.0,
                        help="seconds between the two /metrics scrapes that give the rates (0: one scrape, "
                             "no rates; default: %(default)s)")
    status.add_argument("--timeout", type=float, default=5.0, help="seconds per call (default: %(default)s)")
    add_client_security_flags(status)
    status.set_defaults(func=cmd_status)


# --------------------------------------------------------------------------- gRPC
def _health(channel: grpc.Channel, timeout: float) -> tuple[list[str], bool]:
    stub = health_pb2_grpc.HealthStub(channel)
    parts, healthy = [], True
    for service in ("", SERVICE_NAME):
        label = service or "server"
        try:
            status = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout).status
            name = health_pb2.HealthCheckResponse.ServingStatus.Name(status)
        except grpc.RpcError as exc:
            name = "UNKNOWN SERVICE" if exc.code() == grpc.StatusCode.NOT_FOUND else exc.code().name
        healthy = healthy and name == SERVING
        parts.append(f"{label} {name}")
    return parts, healthy


def _tasks(channel: grpc.Channel, timeout: float) -> tuple[str, list[str]]:
    """The tasks lines, and the tasks the server could not load (see :func:`not_loaded`)."""
    response = reward_pb2_grpc.RewardServiceStub(channel).ListTasks(reward_pb2.ListTasksRequest(), timeout=timeout)
    tasks = sorted((t.name, t.kind or "task") for t in response.tasks)
    text = f"{len(tasks)}: " + ", ".join(f"{name} ({kind})" for name, kind in tasks) + "\n" + \
        "  checks        " + checks_summary(response.tasks)
    return text, not_loaded(channel, {name for name, _ in tasks}, timeout)


def not_loaded(channel: grpc.Channel, listed: set[str], timeout: float) -> list[str]:
    """Tasks whose per-task health (``<service>/task/<name>``) is NOT_SERVING and that ListTasks leaves
    out: those whose plugin failed to load (the server log says why). Empty when the server's health
    service cannot list its services (an older grpcio-health-checking)."""
    try:
        services = health_pb2_grpc.HealthStub(channel).List(health_pb2.HealthListRequest(), timeout=timeout).statuses
    except grpc.RpcError:
        return []
    prefix = f"{SERVICE_NAME}/task/"
    return sorted(name.removeprefix(prefix) for name, status in services.items()
                  if name.startswith(prefix) and name.removeprefix(prefix) not in listed
                  and status.status == health_pb2.HealthCheckResponse.NOT_SERVING)


def checks_summary(tasks: Sequence[reward_pb2.TaskInfo]) -> str:
    """One line on the tasks' start-up checks: self-checks and canaries, naming the tasks that failed."""
    checked = [t for t in tasks if t.HasField("checks")]
    done = [t for t in checked if t.checks.done]
    bad_self = sorted(t.name for t in checked if t.checks.self_check_failures)
    bad_canary = sorted(f"{t.name} ({', '.join(t.checks.failed_canaries)})" for t in done if t.checks.canaries_failed)
    line = (f"{len(done)}/{len(checked)} tasks checked; canaries: "
            f"{sum(t.checks.canaries_passed for t in done)} passed, {sum(t.checks.canaries_failed for t in done)} "
            f"failed, {sum(1 for t in done if t.checks.canaries_skipped)} tasks exempt")
    if bad_self:
        line += "; self-check failed: " + ", ".join(bad_self)
    if bad_canary:
        line += "; rewarded canaries: " + "; ".join(bad_canary)
    return line


def _rpc_error(exc: grpc.RpcError) -> str:
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return f"{exc.code().name}: {details}"  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- /metrics
@dataclass
class MetricsSnapshot:
    """The samples of one scrape, by sample name, and when it was taken (monotonic seconds)."""

    samples: dict[str, dict[Labels, float]] = field(default_factory=dict)
    taken_at: float = 0.0

    @classmethod
    def parse(cls, text: str, taken_at: float = 0.0) -> MetricsSnapshot:
        samples: dict[str, dict[Labels, float]] = defaultdict(dict)
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples[s.name][tuple(sorted(s.labels.items()))] = s.value
        return cls(dict(samples), taken_at)

    def has(self, name: str) -> bool:
        return name in self.samples

    def total(self, name: str, **match: str) -> float:
        """Sum of ``name``'s samples whose labels include ``match``."""
        return sum(v for labels, v in self.samples.get(name, {}).items() if set(match.items()) <= set(labels))

    def by(self, name: str, label: str) -> dict[str, float]:
        """``name``'s samples summed per value of ``label``."""
        out: dict[str, float] = defaultdict(float)
        for labels, v in self.samples.get(name, {}).items():
            out[dict(labels).get(label, "")] += v
        return dict(out)


def scrape(url: str, timeout: float) -> MetricsSnapshot:
    """Fetches and parses ``url``; raises OSError (unreachable) or ValueError (not Prometheus text)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 -- a URL the user gave
        text = response.read().decode("utf-8", errors="replace")
    return MetricsSnapshot.parse(text, time.monotonic())


def _share(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def _counts(values: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(values.items()) if v) or "none"


def _unscored(status: str) -> bool:
    try:
        return not RolloutStatus.from_name(status).scored
    except ValueError:
        return True


def metrics_lines(last: MetricsSnapshot, first: MetricsSnapshot | None = None) -> list[str]:
    """The metrics part of the screen; rates need ``first``, an earlier scrape."""
    rollouts = last.total("reward_rollouts_total")
    requests = last.total("reward_requests_total")
    lines = [f"  rollouts      {rollouts:g} answered" + _rates(last, first, "reward_rollouts_total", "rollouts"),
             f"  requests      {requests:g} answered" + _rates(last, first, "reward_requests_total", "requests")]
    unscored = {k: v for k, v in last.by("reward_rollouts_total", "status").items() if _unscored(k)}
    failed = {k: v for k, v in last.by("reward_requests_total", "code").items() if k != "OK"}
    lines.append(f"  unscored      {_share(sum(unscored.values()), rollouts)} of rollouts ({_counts(unscored)})")
    lines.append(f"  failed calls  {_share(sum(failed.values()), requests)} of requests ({_counts(failed)})")
    if last.has("reward_pool_queue_depth"):
        workers = last.by("reward_pool_workers", "state")
        lines.append(f"  queue depth   {last.total('reward_pool_queue_depth'):g} pool items queued or running; "
                     f"workers {workers.get('busy', 0):g} busy of {workers.get('alive', 0):g}")
        restarts = last.by("reward_worker_restarts_total", "reason")
        lines.append(f"  restarts      {sum(restarts.values()):g} workers replaced ({_counts(restarts)})")
    else:
        lines.append("  queue depth   n/a (the server exports no pool metrics)")
    if last.has("reward_open_streams"):
        lines.append(f"  open streams  {last.total('reward_open_streams'):g}")
    groups = last.total("reward_groups_total")
    zero = last.total("reward_zero_variance_groups_total")
    lines.append(f"  zero variance {_share(zero, groups)} of {groups:g} groups")
    means = []
    for task, count in sorted(last.by("reward_score_count", "task").items()):
        if count:
            means.append(f"{task} {last.total('reward_score_total_sum', task=task) / count:.3f} (n={count:g})")
    lines.append("  mean score    " + (", ".join(means) or "no scored rollouts yet"))
    return lines


def _rates(last: MetricsSnapshot, first: MetricsSnapshot | None, name: str, unit: str) -> str:
    if first is None:
        return ""
    seconds = last.taken_at - first.taken_at
    if seconds <= 0:
        return ""
    return f", {(last.total(name) - first.total(name)) / seconds:.1f} {unit}/s over the last {seconds:.1f}s"


# --------------------------------------------------------------------------- the command
def cmd_status(args: argparse.Namespace) -> int:
    """Prints the screen; 0 when serving and answering, 1 otherwise."""
    healthy = True
    missing: list[str] = []
    print(f"reward server {args.endpoint}")
    channel = open_channel(args.endpoint, security=client_security_from_args(args))
    try:
        parts, healthy = _health(channel, args.timeout)
        print("  health        " + ", ".join(parts))
        if "UNAVAILABLE" in " ".join(parts):
            print(f"  unreachable: no answer from {args.endpoint} (is the server running, and is this "
                  "the right host, port and TLS setting?)")
        else:
            try:
                text, missing = _tasks(channel, args.timeout)
                print("  tasks         " + text)
            except grpc.RpcError as exc:
                healthy = False
                print(f"  tasks         ListTasks failed: {_rpc_error(exc)}")
    finally:
        channel.close()
    if missing:  # served without them: callers naming them get unscored results
        healthy = False
        print(f"  not loaded    {len(missing)} task(s) whose plugin failed to load: {', '.join(missing)} "
              "(health NOT_SERVING; the server log says why; --strict-plugins refuses to start instead)")
    if args.metrics_url:
        healthy = _print_metrics(args) and healthy
    print("status: " + ("OK" if healthy else "NOT OK") + (f" ({len(missing)} task(s) not loaded: "
                                                          f"{', '.join(missing)})" if missing else ""))
    return 0 if healthy else 1


def _print_metrics(args: argparse.Namespace) -> bool:
    print(f"metrics {args.metrics_url}")
    try:
        first = scrape(args.metrics_url, args.timeout) if args.interval > 0 else None
        if first is not None:
            time.sleep(args.interval)
        last = scrape(args.metrics_url, args.timeout)
    except (OSError, ValueError) as exc:  # URLError is an OSError
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        print(f"  unreachable: {reason}")
        return False
    for line in metrics_lines(last, first):
        print(line)
    return True
