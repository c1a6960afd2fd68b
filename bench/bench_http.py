"""`make bench-http`: the HTTP front door against one gRPC batch, same 1,024 GSM8K rollouts.

Why: trainers that speak HTTP (OpenRLHF, slime, NeMo Gym, verl, curl) send one sample per
call, many at once; the door merges them into batched gRPC calls (micro-batcher). The claim
"HTTP costs at most 3x the gRPC batch" is measured here, side by side with its peer:

* peer: the 1,024 rollouts as one ``Score`` call (``RewardClient.score``); every rollout's
  latency is the batch's wall time;
* each adapter registered in ``reward_service/http_door/adapters.py`` at run time that has a
  body builder here (``/v1/score``, ``/openrlhf/{reward}``, ``/slime/{reward}``,
  ``/gym/{reward}/verify``, ``/run_code``): 1,024 single-sample calls from 64 concurrent
  clients (64 ``httpx.AsyncClient``, one connection each: see ``http_run``); an adapter not
  registered is skipped with a note.

A real reward server (``reward-service serve``, 2 workers) and the door (uvicorn) each run in
their own process; the figures are the median of 3 interleaved repeats (the machine is
shared and noisy). Every answer is checked against the known gold (reward 1 iff the answer
is the gold). The door's micro-batcher counters (``batches_sent``/``items_sent``) are read
from a bench-only route the door process adds. CPU per call is read for the door, this process (the
load generator: it shares the cores) and the reward server with its workers. Every run (the gRPC batch
and each adapter, in every repeat) sends rollouts of the same distribution that the server has not seen
(a new seed, written into the prompt), as a training step does, so the reward cache answers none of them
on either side; ``--reward-cache-entries 0`` turns the cache off as well.

    make bench-http
    .venv/bin/python bench/bench_http.py --calls 256 --repeats 1     # a quick look
    .venv/bin/python bench/bench_http.py --only '/slime/{reward}' --profile-door /tmp/door.prof
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from reward_core.ports import free_port

#: Concurrent HTTP clients, as a trainer's reward workers would be.
CLIENTS = 64


@dataclass(frozen=True)
class Sample:
    """One GSM8K-style rollout with its known gold."""

    id: str
    prompt: str
    completion: str
    gold: str
    expected: float  # 1.0 iff the completion's final answer is the gold
    code: str        # a program printing the gold (for /run_code)


def gsm8k_samples(n: int, seed: int = 0) -> list[Sample]:
    """``n`` rollouts, about half right, each ending in ``#### <answer>`` (the GSM8K format)."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        a, b, c = rng.randint(10, 99), rng.randint(2, 9), rng.randint(1, 50)
        gold = a * b + c
        answer = gold if rng.random() < 0.5 else gold + rng.choice([-10, -1, 1, 2, 100])
        # The seed in the prompt makes every run's rollouts new to the server's reward cache (see main).
        prompt = f"[{seed}] Ann buys {b} boxes of {a} pens and finds {c} more. How many pens does she have?"
        completion = f"{b} * {a} = {a * b}, and {a * b} + {c} = {answer}.\n#### {answer}"
        out.append(Sample(f"s{k}", prompt, completion, str(gold), float(answer == gold), f"print({a} * {b} + {c})"))
    return out


# --- one request body and one reading of the answer per adapter --------------------------------

def _reward_of(body: Any) -> float:
    """slime and NeMo Gym answer a number or an object holding the reward."""
    if isinstance(body, (int, float)):
        return float(body)
    for key in ("reward", "score", "rewards"):
        if key in body:
            value = body[key]
            return float(value[0] if isinstance(value, list) else value)
    raise KeyError(f"no reward in {str(body)[:200]}")


@dataclass(frozen=True)
class Adapter:
    """How to call one route template with one sample and read its reward."""

    template: str
    url: Callable[[Sample], str]
    body: Callable[[Sample], dict]
    reward: Callable[[Any], float]
    check: Callable[[Sample, float], bool] = lambda s, r: r == s.expected
    note: str = ""


ADAPTERS = [
    Adapter("/v1/score", lambda s: "/v1/score",
            lambda s: {"rollouts": [{"id": s.id, "task": "gsm8k", "completion": s.completion,
                                     "reference": {"answer": s.gold}}]},
            lambda b: b["results"][0]["score"]),
    # OpenRLHF remote RM (openrlhf/utils/remote_rm_utils.py): query = prompt + response
    Adapter("/openrlhf/{reward}", lambda s: "/openrlhf/gsm8k",
            lambda s: {"query": [s.prompt + s.completion], "prompts": [s.prompt], "labels": [s.gold]},
            lambda b: float(b["rewards"][0])),
    # slime's remote_rm (slime/rollout/rm_hub): {"prompt", "response", "label"}
    Adapter("/slime/{reward}", lambda s: "/slime/gsm8k",
            lambda s: {"prompt": s.prompt, "response": s.completion, "label": s.gold}, _reward_of),
    # NeMo Gym resources server /verify: the Responses API request and response, plus task fields
    Adapter("/gym/{reward}/verify", lambda s: "/gym/gsm8k/verify",
            lambda s: {"responses_create_params": {"input": [{"role": "user", "content": s.prompt}]},
                       "response": {"id": f"resp-{s.id}", "object": "response", "output": [
                           {"type": "message", "role": "assistant", "id": f"msg-{s.id}",
                            "content": [{"type": "output_text", "text": s.completion, "annotations": []}]}]},
                       "expected_answer": s.gold, "answer": s.gold},
            _reward_of),
    # SandboxFusion /run_code: runs code, not gsm8k; its gRPC peer is not the batch below
    Adapter("/run_code", lambda s: "/run_code", lambda s: {"code": s.code, "language": "python"},
            lambda b: float(b.get("status") == "Success" and b["run_result"]["stdout"].strip() != ""),
            check=lambda s, r: r == 1.0, note="code execution: not the same work as the gsm8k batch"),
]


# --- processes ----------------------------------------------------------------------------------

def registered_templates() -> set[str]:
    """Route templates of every adapter in ``adapters.py`` now (building the app opens nothing)."""
    from reward_service.http_door.app import create_app
    from reward_service.http_door.door import DoorConfig
    from reward_service.http_door.upstream import UpstreamConfig

    return {getattr(r, "path", "") for r in create_app(DoorConfig(UpstreamConfig("127.0.0.1:9"))).routes}


def serve_door(upstream: str, port: int, profile: str = "") -> None:
    """The door process: every registered adapter plus ``GET /bench/batcher`` (the counters);
    ``profile``: a path to write the door's cProfile statistics to when it stops."""
    import uvicorn
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from reward_service.http_door.adapters import ALL_ADAPTERS
    from reward_service.http_door.app import create_app
    from reward_service.http_door.door import DoorConfig, FrontDoor
    from reward_service.http_door.upstream import UpstreamConfig

    def batcher_route(door: FrontDoor) -> list:
        async def stats(_: Request) -> JSONResponse:
            b = door.up.batcher
            return JSONResponse({"batches_sent": b.batches_sent, "items_sent": b.items_sent})
        return [Route("/bench/batcher", stats, methods=["GET"])]

    app = create_app(DoorConfig(UpstreamConfig(upstream)), adapters=[*ALL_ADAPTERS, batcher_route])
    if not profile:
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        return
    import cProfile

    # uvicorn raises the SIGTERM it caught again once stopped: let that one pass, so the stats are written
    signal.signal(signal.SIGTERM, lambda *_: None)
    with cProfile.Profile(time.process_time) as profiler:  # CPU time, not time waited
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    profiler.dump_stats(profile)


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_healthy(base: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the front door process exited")
        try:
            if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the front door did not become healthy")


def wait_serving(client: Any, proc: subprocess.Popen, timeout_s: float = 180) -> None:
    """Returns once the reward server answers its health check SERVING (a refused connection
    fails a first call at once, and the server takes seconds to start on a loaded machine)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the reward server process exited")
        if client.serving(timeout_s=5):
            return
        time.sleep(0.5)
    raise RuntimeError("the reward server did not become SERVING")


# --- measurements -------------------------------------------------------------------------------

@dataclass
class Run:
    seconds: float
    latencies: list[float]
    wrong: int = 0
    errors: list[str] = field(default_factory=list)
    door_cpu_s: float = 0.0    # CPU the door process spent during the run
    client_cpu_s: float = 0.0  # CPU this (client) process spent during the run
    server_cpu_s: float = 0.0  # CPU the reward server and its workers spent during the run

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def http_run(base: str, adapter: Adapter, samples: list[Sample]) -> Run:
    """``samples`` as single-sample calls from ``CLIENTS`` clients, each its own aiohttp session
    (one trainer worker each; aiohttp is what OpenRLHF's own remote-reward client posts with).

    httpx was measured first: ~1 ms of client CPU per call and a pool that rescans every
    connection per waiting request, so on 2 shared cores it measured the client, not the door.
    """
    import aiohttp

    queue: asyncio.Queue[Sample] = asyncio.Queue()
    for s in samples:
        queue.put_nowait(s)
    latencies: list[float] = []
    run = Run(0.0, latencies)
    sessions = [aiohttp.ClientSession(base_url=base, timeout=aiohttp.ClientTimeout(total=300),
                                      connector=aiohttp.TCPConnector(limit=1)) for _ in range(CLIENTS)]

    async def worker(session: aiohttp.ClientSession) -> None:
        async with session:
            while not queue.empty():
                s = queue.get_nowait()
                start = time.perf_counter()
                async with session.post(adapter.url(s), json=adapter.body(s)) as reply:
                    text = await reply.text()
                latencies.append(time.perf_counter() - start)
                try:
                    if reply.status != 200:
                        raise ValueError(f"HTTP {reply.status}")
                    run.wrong += not adapter.check(s, adapter.reward(json.loads(text)))
                except (KeyError, TypeError, ValueError, IndexError) as exc:
                    run.errors.append(f"{type(exc).__name__}: {str(exc)[:160]} {text[:200]}")

    start = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in sessions))
    run.seconds = time.perf_counter() - start
    return run


def grpc_run(client: Any, samples: list[Sample]) -> Run:
    rollouts = [{"id": s.id, "task": "gsm8k", "completion": s.completion, "reference": {"answer": s.gold}}
                for s in samples]
    start = time.perf_counter()
    results = client.score(rollouts)
    seconds = time.perf_counter() - start
    wrong = sum(r.score != s.expected for r, s in zip(results, samples))
    return Run(seconds, [seconds] * len(samples), wrong)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` so far (Linux ``/proc``)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU of process ``pid`` and of its live descendants (the reward server's workers)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += cpu_seconds(p)
            for task in os.listdir(f"/proc/{p}/task"):
                todo.extend(int(c) for c in open(f"/proc/{p}/task/{task}/children").read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def measured_http_run(base: str, adapter: Adapter, samples: list[Sample], door_pid: int, server_pid: int) -> Run:
    door0, client0, server0 = cpu_seconds(door_pid), time.process_time(), tree_cpu_seconds(server_pid)
    import uvloop

    run = uvloop.run(http_run(base, adapter, samples))
    run.door_cpu_s, run.client_cpu_s = cpu_seconds(door_pid) - door0, time.process_time() - client0
    run.server_cpu_s = tree_cpu_seconds(server_pid) - server0
    return run


def measured_grpc_run(client: Any, samples: list[Sample], server_pid: int) -> Run:
    server0, client0 = tree_cpu_seconds(server_pid), time.process_time()
    run = grpc_run(client, samples)
    run.server_cpu_s, run.client_cpu_s = tree_cpu_seconds(server_pid) - server0, time.process_time() - client0
    return run


def batcher(base: str) -> tuple[int, int]:
    stats = httpx.get(f"{base}/bench/batcher", timeout=10).json()
    return stats["batches_sent"], stats["items_sent"]


def report(runs: dict[str, list[Run]], notes: dict[str, str], batched: dict[str, tuple[int, int]], n: int) -> None:
    def med(label: str, f: Callable[[Run], float]) -> float:
        return statistics.median(f(r) for r in runs[label])

    peer = "gRPC Score, one batch"
    peer_tput = n / med(peer, lambda r: r.seconds)
    print(f"\n== {n} GSM8K rollouts: {CLIENTS} concurrent single-sample HTTP calls vs one gRPC batch "
          f"(median of {len(runs[peer])}; {os.cpu_count()} cores) ==")
    print(f"{'path':<26}{'rollouts/s':>11}{'p50 ms':>9}{'p99 ms':>9}{'HTTP/gRPC time':>16}"
          f"{'wrong':>7}{'errors':>8}{'batches/items':>15}{'door CPU ms/call':>18}{'client CPU ms/call':>20}"
          f"{'server CPU ms/rollout':>23}")
    for label, rs in runs.items():
        tput = n / med(label, lambda r: r.seconds)
        ratio = "" if label == peer or notes.get(label) else f"{peer_tput / tput:.2f}x"
        b = batched.get(label)
        print(f"{label:<26}{tput:>11.0f}{1000 * med(label, lambda r: r.pct(0.5)):>9.1f}"
              f"{1000 * med(label, lambda r: r.pct(0.99)):>9.1f}{ratio:>16}"
              f"{max(r.wrong for r in rs):>7}{max(len(r.errors) for r in rs):>8}"
              f"{'' if b is None else f'{b[0]}/{b[1]}':>15}"
              f"{'' if b is None else f'{1000 * med(label, lambda r: r.door_cpu_s) / n:.2f}':>18}"
              f"{1000 * med(label, lambda r: r.client_cpu_s) / n:>20.2f}"
              f"{1000 * med(label, lambda r: r.server_cpu_s) / n:>23.2f}")
    for label, note in notes.items():
        print(f"note: {label}: {note}")
    for label, rs in runs.items():
        for r in rs:
            if r.errors:
                print(f"first error of {label}: {r.errors[0]}")
                break


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1024, help="rollouts (one per HTTP call)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats; the median is reported")
    parser.add_argument("--workers", type=int, default=2, help="the reward server's verification workers")
    parser.add_argument("--reward-cache-entries", type=int, default=None, metavar="N",
                        help="the reward server's --reward-cache-entries (default: the server's own; 0: no cache, "
                             "so every repeat verifies its rollouts again, as a training step's new rollouts are)")
    parser.add_argument("--only", action="append", default=[], metavar="TEMPLATE",
                        help="measure only this adapter's route template (repeatable), e.g. '/slime/{reward}'")
    parser.add_argument("--profile-door", default="", metavar="PATH",
                        help="run the door under cProfile and write its statistics to PATH (read with pstats)")
    parser.add_argument("--door", action="store_true", help=argparse.SUPPRESS)  # internal: run the door
    parser.add_argument("--upstream", default="", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.door:
        serve_door(args.upstream, args.port, args.profile_door)
        return 0

    from trainer_client import RewardClient

    templates = registered_templates()
    adapters = [a for a in ADAPTERS if a.template in templates and (not args.only or a.template in args.only)]
    for a in ADAPTERS:
        if a.template not in templates:
            print(f"skipped {a.template}: no such adapter in reward_service/http_door/adapters.py yet")
    grpc_port, http_port = free_port(), free_port()
    server_cmd = [sys.executable, "-m", "reward_service", "--log-level", "WARNING", "serve", "--port", str(grpc_port),
                  "--workers", str(args.workers), "--max-rollouts-per-request", str(max(1024, args.calls))]
    if any(a.template == "/run_code" for a in adapters):
        server_cmd.append("--serve-sandbox")
    if args.reward_cache_entries is not None:
        server_cmd += ["--reward-cache-entries", str(args.reward_cache_entries)]
    server = subprocess.Popen(server_cmd)
    door = None
    try:
        upstream, base = f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{http_port}"
        door = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--door", "--upstream", upstream,
                                 "--port", str(http_port), "--profile-door", args.profile_door])
        with RewardClient(upstream, timeout_s=300, chunk_size=max(1024, args.calls)) as client:
            wait_serving(client, server)
            grpc_run(client, gsm8k_samples(64, seed=99))  # warms the workers
            wait_healthy(base, door)
            for a in adapters:  # warm each route (connections, first-call imports)
                asyncio.run(http_run(base, a, gsm8k_samples(64, seed=98)))
            runs: dict[str, list[Run]] = {"gRPC Score, one batch": []}
            batched: dict[str, tuple[int, int]] = {}
            for repeat in range(args.repeats):
                # Every run sends rollouts the server has not seen (same distribution, new seed), as a training
                # step does: with the same rollouts, the reward cache would answer every run after the first.
                seed = 1000 + 100 * repeat
                runs["gRPC Score, one batch"].append(measured_grpc_run(client, gsm8k_samples(args.calls, seed),
                                                                       server.pid))
                for i, a in enumerate(adapters, start=1):
                    before = batcher(base)
                    fresh = gsm8k_samples(args.calls, seed + i)
                    runs.setdefault(f"HTTP {a.template}", []).append(measured_http_run(base, a, fresh, door.pid,
                                                                                             server.pid))
                    after = batcher(base)
                    batched[f"HTTP {a.template}"] = (after[0] - before[0], after[1] - before[1])
    finally:
        if door is not None:
            stop(door)
        stop(server)
    report(runs, {f"HTTP {a.template}": a.note for a in adapters if a.note}, batched, args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
