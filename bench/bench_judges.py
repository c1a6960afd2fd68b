"""`make bench-judges`: the judge client layer under faults, its verdict cache, and its overhead.

Why: a judge timeout or 5xx that becomes a reward of 0 poisons a GRPO group's baseline; a
judgement paid for twice costs money; a client layer that adds milliseconds per call caps
throughput. Three measurements, each against real servers on loopback:

(a) **Faults.** A real OpenAI-compatible judge (``reward-service serve-judge``: a tiny random
    causal LM, guided_choice yes/no) behind the fault proxy, 10% of calls each: latency past the
    deadline, 429 (Retry-After), 500, a cut connection, a garbage verdict. Every judgement is
    made once cleanly (no proxy) for its true verdict, then through the proxy; the table counts
    rollouts scored like the clean verdict, scored differently (a fault turned into a reward:
    goal 0), and each unscored kind.
(b) **Replay.** 10,000 distinct judgements, twice, through one client with the verdict cache:
    calls saved on the second pass (goal >= 90%), and the latency ``complete`` adds on a hit
    (goal < 1 ms), in memory and from the SQLite file alone (a fresh replica).
(c) **Overhead.** 64 concurrent callers against a trivial local upstream (a fixed-reply
    endpoint in its own process): our client (limiter, metrics, ``openai`` library) vs a bare
    client of the HTTP library ``openai`` uses, posting the same bodies; median of interleaved
    repeats. The overhead is the difference, as client CPU per call and as latency per call.

    make bench-judges
    .venv/bin/python -m bench.bench_judges --rollouts 200 --replay 2000 --calls 2000 --repeats 1   # a quick look
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from reward_core.contract import RolloutStatus
from reward_core.ports import free_port
from reward_service.judges import JudgeCall, JudgeClient, JudgeEndpoint, JudgeError, VerdictCache
from reward_service.judges.judge_metrics import JudgeMetrics

ROOT = Path(__file__).resolve().parents[1]
VERDICTS = ("yes", "no")
MODEL = "tiny-judge"


# ---------------------------------------------------------------- the judgements and their parser
def judgement(i: int) -> JudgeCall:
    """Judgement ``i``: is a made-up answer equivalent to a made-up gold (distinct for every i)."""
    prompt = (f"Question {i}: what is {i % 97} + {i % 89}?\nGold answer: {i % 97 + i % 89}\n"
              f"Candidate answer: {i % 97 + i % 89 + (i % 3 == 0)}\nAre the two answers equivalent? yes or no")
    return JudgeCall(messages=({"role": "system", "content": "You are a strict grader."},
                               {"role": "user", "content": prompt}),
                     max_tokens=4, choices=VERDICTS, template_version="bench-v1")


def parse_verdict(text: str) -> float | None:
    """1.0 for yes, 0.0 for no, None when the reply is neither (stands in for the tasks' parsers)."""
    word = text.strip().lower().rstrip(".")
    return {"yes": 1.0, "no": 0.0}.get(word)


@dataclass(frozen=True)
class Judged:
    status: RolloutStatus
    score: float = 0.0


def judge_one(client: JudgeClient, call: JudgeCall, deadline_s: float, caller: str = "") -> Judged:
    """One rollout as a judge task answers it: a score, or an unscored status (never 0 for a failure)."""
    try:
        reply = client.complete(call, deadline_s=deadline_s, caller=caller,
                                accept=lambda text: parse_verdict(text) is not None)
    except JudgeError as exc:
        return Judged(exc.status)
    score = parse_verdict(reply.text)
    if score is None:
        return Judged(RolloutStatus.JUDGE_UNPARSEABLE)
    return Judged(RolloutStatus.OK, score)


# ---------------------------------------------------------------- servers in their own processes
def wait_http(url: str, proc: subprocess.Popen, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout_s} s")


def spawn(args: Sequence[str]) -> subprocess.Popen:
    """``python args...`` from the repository root, its log in a temporary file (never an undrained pipe)."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})
    proc.log = log  # type: ignore[attr-defined]
    return proc


def log_tail(proc: subprocess.Popen) -> str:
    proc.log.seek(0)  # type: ignore[attr-defined]
    return proc.log.read().decode(errors="replace")[-2000:]  # type: ignore[attr-defined]


def start_process(args: Sequence[str], ready_url: str) -> subprocess.Popen:
    proc = spawn(args)
    try:
        wait_http(ready_url, proc)
    except RuntimeError:
        stop_process(proc)
        raise RuntimeError(f"{' '.join(args)} did not start:\n{log_tail(proc)}") from None
    return proc


def stop_process(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- (a) faults
FAULTS = ("latency", "http_429", "http_500", "cut", "garbage")


def bench_faults(model_dir: Path, rollouts: int, rate: float, deadline_s: float, concurrency: int) -> dict:
    from reward_service.judges.fault_plan import FaultPlan
    from reward_service.judges.fault_proxy import FaultProxy

    port = free_port()
    server = start_process(["-m", "reward_service", "serve-judge", "--model", str(model_dir), "--port", str(port),
                            "--served-model-name", MODEL], f"http://127.0.0.1:{port}/v1/models")
    try:
        base = f"http://127.0.0.1:{port}/v1"
        calls = [judgement(i) for i in range(rollouts)]
        endpoint = JudgeEndpoint(base_url=base, model=MODEL, max_concurrency=concurrency, name="clean", cache="off")
        clean_client = JudgeClient(endpoint, None, metrics=JudgeMetrics())
        with ThreadPoolExecutor(concurrency) as pool:
            clean = list(pool.map(lambda c: judge_one(clean_client, c, 60.0), calls))
        if any(j.status is not RolloutStatus.OK for j in clean):
            raise RuntimeError(f"the clean pass did not score every judgement: {Counter(j.status.name for j in clean)}")
        plan = FaultPlan(rates=dict.fromkeys(FAULTS, rate), seed=7, latency_s=deadline_s + 2.0, retry_after_s=0.5)
        logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)  # each cut connection is logged as an error
        with FaultProxy(base, plan) as proxy:
            faulted_ep = JudgeEndpoint(base_url=proxy.base_url, model=MODEL, max_concurrency=concurrency,
                                       name="faulted", cache="off")
            client = JudgeClient(faulted_ep, None, metrics=JudgeMetrics())
            start = time.perf_counter()
            with ThreadPoolExecutor(concurrency) as pool:
                faulted = list(pool.map(lambda c: judge_one(client, c, deadline_s), calls))
            wall = time.perf_counter() - start
            client.close()
            time.sleep(plan.latency_s + 1.0)  # the proxy's delayed calls finish before it stops
            injected = proxy.counts
        retries = {reason: client.metrics.sample("reward_judge_retries_total", {"judge": "faulted", "reason": reason})
                   for reason in ("timeout", "connection", "rate_limited", "server_error")}
    finally:
        stop_process(server)
    outcome = compare(clean, faulted)
    return {"via": "client layer (bench parser)", "rollouts": rollouts, "deadline_s": deadline_s, "rate_each": rate,
            "wall_s": round(wall, 2), "outcomes": dict(outcome), "injected": injected, "retries": retries,
            "wrongly_scored": wrongly_scored(outcome)}


def wait_grpc(port: int, proc: subprocess.Popen, timeout_s: float = 180.0) -> None:
    from reward_core.clients.reward import RewardClient

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the reward server exited with {proc.returncode}:\n{log_tail(proc)}")
        try:
            with RewardClient(f"127.0.0.1:{port}", timeout_s=5) as client:
                if {"ref_clean", "ref_faulted"} <= {t.name for t in client.list_tasks()}:
                    return
        except Exception:  # noqa: BLE001 -- not up yet
            time.sleep(0.5)
    raise RuntimeError(f"the reward server on port {port} did not start within {timeout_s} s")


def bench_faults_server(model_dir: Path, rollouts: int, rate: float, deadline_s: float, concurrency: int,
                        work: Path) -> dict:
    """(a) end to end: the ``judge_reference`` task in a real reward server, its judge behind the proxy."""
    import yaml

    from reward_core.clients.reward import RewardClient
    from reward_service.judges.fault_plan import FaultPlan
    from reward_service.judges.fault_proxy import FaultProxy

    judge_port, reward_port = free_port(), free_port()
    judge = start_process(["-m", "reward_service", "serve-judge", "--model", str(model_dir), "--port",
                           str(judge_port), "--served-model-name", MODEL], f"http://127.0.0.1:{judge_port}/v1/models")
    base = f"http://127.0.0.1:{judge_port}/v1"
    plan = FaultPlan(rates=dict.fromkeys(FAULTS, rate), seed=7, latency_s=deadline_s + 2.0, retry_after_s=0.5)
    logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)  # each cut connection is logged as an error
    proxy = FaultProxy(base, plan)
    server = None
    try:
        settings = {"model": MODEL, "max_concurrency": concurrency, "cache": "off"}
        config = {"judges": {"clean": {"base_url": base, **settings},
                             "faulted": {"base_url": proxy.base_url, **settings}},
                  "tasks": {"ref_clean": {"task": "judge_reference", "options": {"judge": "clean", "timeout_s": 120}},
                            "ref_faulted": {"task": "judge_reference",
                                            "options": {"judge": "faulted", "timeout_s": deadline_s}}}}
        (work / "rewards.yaml").write_text(yaml.safe_dump(config))
        for attempt in range(3):  # a loaded machine may start the server's worker too slowly: try again
            server = spawn(["-m", "reward_service", "serve", "--port", str(reward_port), "--workers", "1",
                            "--config", str(work / "rewards.yaml")])
            try:
                wait_grpc(reward_port, server)
                break
            except RuntimeError:
                stop_process(server)
                server = None
                if attempt == 2:
                    raise
        rows = [{"id": str(i), "prompt": f"What is {i % 97} + {i % 89}?", "reference": {"answer": str(i % 97 + i % 89)},
                 "completion": f"The sum is {i % 97 + i % 89 + (i % 3 == 0)}."} for i in range(rollouts)]
        with RewardClient(f"127.0.0.1:{reward_port}", timeout_s=600, chunk_size=max(rollouts, 1)) as client:
            clean = client.score([{**r, "task": "ref_clean"} for r in rows])
            if any(not r.scored for r in clean):
                statuses = Counter(r.status.name for r in clean)
                raise RuntimeError(f"the clean pass did not score every rollout: {statuses}")
            start = time.perf_counter()
            faulted = client.score([{**r, "task": "ref_faulted"} for r in rows])
            wall = time.perf_counter() - start
        time.sleep(plan.latency_s + 1.0)  # the proxy's delayed calls finish before it stops
        injected = proxy.counts
    finally:
        proxy.stop()
        if server is not None:
            stop_process(server)
        stop_process(judge)
    outcome = compare([Judged(r.status, r.score) for r in clean], [Judged(r.status, r.score) for r in faulted])
    return {"via": "reward server (judge_reference task)", "rollouts": rollouts, "deadline_s": deadline_s,
            "rate_each": rate, "wall_s": round(wall, 2), "outcomes": dict(outcome), "injected": injected,
            "retries": {}, "wrongly_scored": wrongly_scored(outcome),
            "errors": sorted({r.error.split(" (after")[0][:90] for r in faulted if not r.scored})[:8]}


def compare(clean: Sequence[Judged], faulted: Sequence[Judged]) -> Counter[str]:
    """Each faulted rollout against its clean verdict."""
    outcome: Counter[str] = Counter()
    for truth, got in zip(clean, faulted):
        if got.status.scored:
            if got.score == truth.score:
                outcome["scored, same as the clean verdict"] += 1
            elif got.score == 0.0:
                outcome["scored 0 but the clean verdict is 1 (a fault as a 0)"] += 1
            else:
                outcome["scored, unlike the clean verdict"] += 1
        else:
            outcome[got.status.name] += 1
    return outcome


def wrongly_scored(outcome: Counter[str]) -> int:
    return sum(n for k, n in outcome.items() if k.startswith("scored") and "same" not in k)


# ---------------------------------------------------------------- the trivial upstream for (b) and (c)
def serve_fixed(port: int) -> None:
    """A fixed-reply OpenAI-compatible endpoint (``--serve-fixed PORT``): the least an upstream can cost."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    served = {"requests": 0}
    reply = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": MODEL,
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": "yes"}}],
                        "usage": {"prompt_tokens": 40, "completion_tokens": 1, "total_tokens": 41}}).encode()

    async def chat(request):  # noqa: ANN001, ANN202
        await request.body()
        served["requests"] += 1
        return Response(reply, media_type="application/json")

    async def stats(request):  # noqa: ANN001, ANN202
        return JSONResponse(served)

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/stats", stats)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def upstream_requests(base: str) -> int:
    with urllib.request.urlopen(f"{base}/stats", timeout=10) as resp:
        return int(json.loads(resp.read())["requests"])


def run_parallel(fn: Callable[[int], None], n: int, concurrency: int) -> list[float]:
    """Runs fn(0..n-1) on ``concurrency`` threads; returns each call's latency in seconds."""
    latencies = [0.0] * n
    counter = iter(range(n))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t0 = time.perf_counter()
            fn(i)
            latencies[i] = time.perf_counter() - t0

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


# ---------------------------------------------------------------- (b) replay
def bench_replay(base: str, n: int, concurrency: int, workdir: Path) -> dict:
    calls = [judgement(i) for i in range(n)]
    db = workdir / "verdicts.db"
    endpoint = JudgeEndpoint(base_url=base, model=MODEL, max_concurrency=concurrency, name="replay")
    client = JudgeClient(endpoint, VerdictCache(n, db), metrics=JudgeMetrics())
    passes = []
    for _ in range(2):
        before = upstream_requests(base)
        start = time.perf_counter()
        run_parallel(lambda i: client.complete(calls[i], deadline_s=60.0), n, concurrency)
        passes.append({"wall_s": round(time.perf_counter() - start, 2),
                       "upstream_calls": upstream_requests(base) - before})
    # A fresh replica sharing the file: its memory is empty, every hit comes from SQLite.
    replica = JudgeClient(endpoint, VerdictCache(n, db), metrics=JudgeMetrics())
    before = upstream_requests(base)
    disk_hits = [_timed(lambda c=c: replica.complete(c, deadline_s=60.0)) for c in calls]
    replica_calls = upstream_requests(base) - before
    memory_hits = [_timed(lambda c=c: client.complete(c, deadline_s=60.0)) for c in calls]
    saved = 1 - passes[1]["upstream_calls"] / max(passes[0]["upstream_calls"], 1)
    return {"judgements": n, "first_pass": passes[0], "second_pass": passes[1], "saved_second_pass": saved,
            "replica_upstream_calls": replica_calls,
            "hit_us_memory": _summary_us(memory_hits), "hit_us_sqlite": _summary_us(disk_hits)}


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    reply = fn()
    elapsed = time.perf_counter() - t0
    if not getattr(reply, "cached", False):
        raise RuntimeError("expected a cache hit")
    return elapsed


def _summary_us(seconds: list[float]) -> dict:
    ordered = sorted(seconds)
    return {"median": round(statistics.median(ordered) * 1e6, 1),
            "p99": round(ordered[int(0.99 * len(ordered))] * 1e6, 1), "mean": round(statistics.fmean(ordered) * 1e6, 1)}


# ---------------------------------------------------------------- (c) overhead
def _raw_caller(base: str, concurrency: int) -> tuple[Callable[[JudgeCall], str], Callable[[], None]]:
    """The peer: the same request body posted with a bare client of the HTTP library ``openai`` itself uses
    (``httpx2`` in openai 3, ``httpx`` before), the reply's text read."""
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx

    http = httpx.Client(limits=httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2),
                        timeout=60.0)
    url = f"{base}/chat/completions"

    def call(c: JudgeCall) -> str:
        body = {"model": MODEL, "messages": [dict(m) for m in c.messages], "temperature": c.temperature,
                "max_tokens": c.max_tokens, "seed": c.seed, "guided_choice": list(c.choices)}
        resp = http.post(url, json=body)
        resp.raise_for_status()
        return resp.json()["choices"][0]["message"]["content"]

    return call, http.close


def bench_overhead(base: str, calls_n: int, concurrency: int, repeats: int) -> dict:
    calls = [judgement(i) for i in range(calls_n)]
    endpoint = JudgeEndpoint(base_url=base, model=MODEL, max_concurrency=concurrency, name="overhead", cache="off")
    ours = JudgeClient(endpoint, None, metrics=JudgeMetrics())
    raw, close_raw = _raw_caller(base, concurrency)
    runners = {"ours": lambda i: ours.complete(calls[i], deadline_s=60.0), "raw_http": lambda i: raw(calls[i])}
    for fn in runners.values():  # warm the connection pools
        run_parallel(fn, concurrency * 2, concurrency)
    runs: dict[str, list[dict]] = {name: [] for name in runners}
    for _ in range(repeats):
        for name, fn in runners.items():
            cpu0, wall0 = time.process_time(), time.perf_counter()
            latencies = run_parallel(fn, calls_n, concurrency)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            runs[name].append({"cpu_ms_per_call": cpu / calls_n * 1e3,
                               "latency_ms_median": statistics.median(latencies) * 1e3,
                               "latency_ms_mean": statistics.fmean(latencies) * 1e3, "calls_per_s": calls_n / wall})
    close_raw()
    ours.close()
    med = {name: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]} for name, rs in runs.items()}
    ours_m, raw_m = med["ours"], med["raw_http"]
    return {"calls": calls_n, "concurrency": concurrency, "repeats": repeats, "median": med,
            "overhead_cpu_ms_per_call": round(ours_m["cpu_ms_per_call"] - raw_m["cpu_ms_per_call"], 3),
            "overhead_latency_ms_median": round(ours_m["latency_ms_median"] - raw_m["latency_ms_median"], 3),
            "overhead_latency_ms_mean": round(ours_m["latency_ms_mean"] - raw_m["latency_ms_mean"], 3)}


# ---------------------------------------------------------------- report
def print_report(results: dict) -> None:
    for key in ("faults_server", "faults"):
        if key not in results:
            continue
        f = results[key]
        print(f"\n(a) {f['rollouts']} judgements via the {f['via']}, through the fault proxy ({f['rate_each']:.0%} of "
              f"calls each: {', '.join(FAULTS)}; deadline {f['deadline_s']} s per verification), {f['wall_s']} s")
        print(f"    {'outcome':<56} rollouts")
        for name, n in sorted(f["outcomes"].items(), key=lambda kv: -kv[1]):
            print(f"    {name:<56} {n}")
        print(f"    faults injected (retries included): {f['injected']}")
        if f["retries"]:
            print(f"    retries by reason: {f['retries']}")
        if f.get("errors"):
            print(f"    unscored reasons (a sample): {f['errors']}")
        print(f"    scored unlike the clean verdict: {f['wrongly_scored']}  (goal: 0)")
    if "replay" in results:
        r = results["replay"]
        print(f"\n(b) replay of {r['judgements']} judgements: upstream calls {r['first_pass']['upstream_calls']} then "
              f"{r['second_pass']['upstream_calls']} -> {r['saved_second_pass']:.1%} saved (goal >= 90%); a replica "
              f"on the same SQLite file made {r['replica_upstream_calls']} calls")
        print(f"    hit latency (us): memory {r['hit_us_memory']}, SQLite only {r['hit_us_sqlite']}  (goal < 1000)")
    if "overhead" in results:
        o = results["overhead"]
        print(f"\n(c) {o['calls']} calls, {o['concurrency']} concurrent, median of {o['repeats']} interleaved repeats")
        for name, m in o["median"].items():
            print(f"    {name:<10} {m}")
        print(f"    our layer's overhead per call: {o['overhead_cpu_ms_per_call']} ms client CPU, "
              f"{o['overhead_latency_ms_median']} ms median latency, {o['overhead_latency_ms_mean']} ms mean latency "
              "(goal < 2 ms)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="a,b,c",
                        help="which parts to run (a: faults, end to end through a reward server; a0: faults at the "
                             "client layer; b: replay; c: overhead)")
    parser.add_argument("--rollouts", type=int, default=500, help="(a) judgements under faults")
    parser.add_argument("--fault-rate", type=float, default=0.10, help="(a) share of calls that get each fault")
    parser.add_argument("--deadline-s", type=float, default=3.0, help="(a) the deadline of each verification")
    parser.add_argument("--fault-concurrency", type=int, default=16)
    parser.add_argument("--replay", type=int, default=10_000, help="(b) judgements replayed")
    parser.add_argument("--calls", type=int, default=6400, help="(c) calls per repeat")
    parser.add_argument("--concurrency", type=int, default=64, help="(b, c) concurrent callers")
    parser.add_argument("--repeats", type=int, default=3, help="(c) interleaved repeats")
    parser.add_argument("--json", default="", help="also write the figures to this file")
    parser.add_argument("--serve-fixed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_fixed:
        serve_fixed(args.serve_fixed)
        return 0
    parts = set(args.parts.split(","))
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_judges_") as tmp:
        work = Path(tmp)
        if parts & {"a", "a0"}:
            from tests.judge_fixtures import make_tiny_judge_model

            model_dir = make_tiny_judge_model(work / MODEL)
            if "a" in parts:
                results["faults_server"] = bench_faults_server(model_dir, args.rollouts, args.fault_rate,
                                                               args.deadline_s, args.fault_concurrency, work)
            if "a0" in parts:
                results["faults"] = bench_faults(model_dir, args.rollouts, args.fault_rate, args.deadline_s,
                                                 args.fault_concurrency)
        if parts & {"b", "c"}:
            port = free_port()
            fixed = start_process(["-m", "bench.bench_judges", "--serve-fixed", str(port)],
                                  f"http://127.0.0.1:{port}/v1/stats")
            base = f"http://127.0.0.1:{port}/v1"
            try:
                if "b" in parts:
                    results["replay"] = bench_replay(base, args.replay, args.concurrency, work)
                if "c" in parts:
                    results["overhead"] = bench_overhead(base, args.calls, args.concurrency, args.repeats)
            finally:
                stop_process(fixed)
    print_report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
