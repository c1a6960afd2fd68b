"""`make soak-episodes`: episodes under faults -- sandbox processes killed, clients that go away, a SIGTERM.

Why: an episode holds a session, a stream and sandbox work for many calls; a fault in the middle must
end it with a final answer or a typed failure, never a silent 0 and never a hang, and leave nothing
behind. This starts ``reward-service serve --serve-environments`` (and for ``--via ors`` the HTTP door
in front of it; bench/episode_paths.py) and runs the episode benchmark's scripted policy with the
sandbox in the path of every episode: ``math_tools`` with rows ``a * b``, ``python`` (the product),
``calculator`` (a check), ``submit_answer`` (10% wrong on purpose, so every reward is checked).

1. Faults for ``--seconds``: a seeded injector SIGKILLs a sandbox slot process, a running program or a
   verification worker every 1-3 s (bench/soak_procs.py), and ``--disconnect-share`` of the episodes are
   abandoned by their client at a random moment (the call in flight cancelled: the stream or the SSE
   connection dropped mid-call).
2. The load stops; what is left is read (goal 0: open sessions, episodes never ended, the door's
   sessions; the server's processes back to their count at the start, memory within 2x + 300 MB).
3. Episodes start again, their ``python`` call sleeping past the drain grace, and the server gets
   SIGTERM in the middle of them: each must end (typed) and no process the server ever had may outlive it.

Every episode ends ``right`` (the expected reward), with a typed failure (TOOL_FAILED, SANDBOX_FAILED,
SESSION_LOST, ...; or the client's typed ServerUnavailable/EndpointUnreachable once the server is gone),
or ``abandoned`` (phase 1's disconnects). Anything else -- a reward that disagrees, an untyped error, a
hang -- fails the soak (exit status 1), as does a leak or a survivor.

    make soak-episodes
    .venv/bin/python bench/soak_episodes.py --seconds 20 --concurrency 8            # a quick look
    .venv/bin/python bench/soak_episodes.py --seconds 20 --via ors --faults disconnect sigterm
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

import psutil
from episode_paths import Served, serve, settle
from episode_runs import TYPED, Tally, Workload, run_many, run_one
from soak_procs import FaultInjector, Watcher, sandbox_cgroups
from soak_report import log_tail, memory_bound

#: Typed errors of our clients once the server is gone (connection refused, draining): not silent.
CLIENT_TYPED = ("ServerUnavailable", "EndpointUnreachable")
GRACE_S = 1.0
#: The server's idle timeout: a session whose client vanished without closing it is reaped after this.
IDLE_S = 15.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0, help="how long phase 1 (faults) starts episodes")
    p.add_argument("--concurrency", type=int, default=16, help="episodes open at once")
    p.add_argument("--max-sessions", type=int, default=0,
                   help="the server's admission limit (default: half of --concurrency, so opens queue for a slot "
                        "and some are abandoned while they wait)")
    p.add_argument("--via", choices=("grpc", "ors"), default="grpc", help="how episodes reach the server")
    p.add_argument("--seed", type=int, default=0, help="seeds the fault injector and the disconnects")
    p.add_argument("--faults", nargs="+", default=["kill", "disconnect", "sigterm"],
                   choices=["kill", "disconnect", "sigterm"], help="which faults to inject")
    p.add_argument("--kill-kinds", nargs="+", default=["slot", "program", "worker"],
                   choices=["slot", "program", "worker"],
                   help="what the injector SIGKILLs: sandbox slot processes, programs, verification workers")
    p.add_argument("--fault-interval", type=float, nargs=2, default=(1.0, 3.0), metavar=("MIN", "MAX"))
    p.add_argument("--disconnect-share", type=float, default=0.1, help="share of episodes abandoned mid-way")
    p.add_argument("--episode-timeout", type=float, default=120.0, help="an episode not ended by then is HUNG")
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.concurrency < 1 or not 0 <= args.disconnect_share <= 1 or args.max_sessions < 0:
        p.error("need --seconds > 0, --concurrency >= 1, 0 <= --disconnect-share <= 1, --max-sessions >= 0")
    args.max_sessions = args.max_sessions or max(1, args.concurrency // 2)
    return args


def acceptable(label: str) -> bool:
    return label in ("right", "abandoned") or label in TYPED or label.startswith("UNAVAILABLE") or \
        label.split(":")[0] in CLIENT_TYPED


async def faulty_load(served: Served, workload: Workload, args: argparse.Namespace, tally: Tally,
                      stop_at: float) -> None:
    """Phase 1: episodes for ``--seconds``, a share of them abandoned by their client at a random moment."""
    rng = random.Random(f"{args.seed}-disconnect")
    counter = iter(range(10**9))

    async def worker() -> None:
        while time.monotonic() < stop_at:
            index = next(counter)
            task = asyncio.ensure_future(run_one(served, workload, index, tally))
            if "disconnect" in args.faults and rng.random() < args.disconnect_share:
                done, _ = await asyncio.wait({task}, timeout=rng.uniform(0.0, 0.5))
                if not done:
                    task.cancel()
                    try:
                        await task
                    except asyncio.CancelledError:
                        tally.endings["abandoned"] += 1
                    continue
            await task

    await asyncio.gather(*(worker() for _ in range(args.concurrency)))


async def sigterm_phase(served: Served, workload: Workload, args: argparse.Namespace, tally: Tally) -> float:
    """Phase 3: episodes whose ``python`` call sleeps past the drain grace start, then the server gets SIGTERM;
    returns how long the last episode took to end."""
    assert served.server is not None
    stopping = False
    slow = dataclasses.replace(workload, python_sleep_s=2 * GRACE_S)  # still mid-call when the grace ends
    load = asyncio.ensure_future(run_many(served, slow, range(10**6, 10**6 + 10**6), args.concurrency, tally,
                                          stop=lambda: stopping))
    await asyncio.sleep(3.0)
    served.server.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    await asyncio.sleep(1.0)  # episodes opened during the drain: refused, typed
    stopping = True
    await load
    return time.monotonic() - sent


async def soak(args: argparse.Namespace, log_dir: Path) -> dict:
    workload = Workload(environment="math_tools", first_tool="python", episode_timeout_s=args.episode_timeout)
    extra = ("--grace-s", str(GRACE_S), "--env-sandbox-concurrency", "2", "--env-program-timeout-s", "5",
             "--env-tool-deadline-s", "30", "--env-idle-timeout-s", str(IDLE_S))
    out: dict = {"faults": Tally(), "after_sigterm": Tally()}
    async with serve(args.via, args.max_sessions, log_dir, extra) as served:
        assert served.server is not None
        watcher = Watcher(served.server.pid)
        watcher.start()
        await run_many(served, workload, range(-args.concurrency, 0), args.concurrency)  # warm-up
        out["before"] = await settle(served)
        injector = None
        if "kill" in args.faults:
            injector = FaultInjector(served.server.pid, args.seed, tuple(args.fault_interval), tuple(args.kill_kinds))
            injector.start()
        await faulty_load(served, workload, args, out["faults"], time.monotonic() + args.seconds)
        if injector is not None:
            await asyncio.get_running_loop().run_in_executor(None, injector.stop)
            out["kills"] = injector.kills
        await asyncio.sleep(2.0)  # killed slots are replaced
        out["after"] = await settle(served, within_s=IDLE_S + 15.0, door=False)
        out["cancelled_opening"] = served.cancelled_opening[0]
        if "sigterm" in args.faults:
            out["drain_s"] = await sigterm_phase(served, workload, args, out["after_sigterm"])
            try:
                out["exit_code"] = await asyncio.get_running_loop().run_in_executor(
                    None, served.server.wait, GRACE_S + 30)
            except Exception as exc:  # noqa: BLE001 - reported: the server did not exit
                out["exit_code"] = f"did not exit: {exc}"
        watcher.stop()
    out["lingered"], out["survivors"] = await outlived(watcher)
    out["cgroups"] = sandbox_cgroups([served.server.pid])
    return out


async def outlived(watcher: Watcher, within_s: float = 10.0) -> tuple[list[str], list[str]]:
    """The server's processes still running 1 s after it exited (lingered), and those still running after
    ``within_s`` (left running: killed here and reported)."""
    await asyncio.sleep(1.0)
    lingered = {p.pid: describe(p) for p in watcher.survivors()}
    deadline = time.monotonic() + within_s
    while watcher.survivors() and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    left = []
    for p in watcher.survivors():
        left.append(describe(p))
        with contextlib.suppress(psutil.Error):
            p.kill()
    return list(lingered.values()), left


def describe(process: psutil.Process) -> str:
    try:
        return f"pid {process.pid} (parent {process.ppid()}) {' '.join(process.cmdline())[:100]}"
    except psutil.Error:
        return f"pid {process.pid} (gone)"


def report(args: argparse.Namespace, out: dict, log_dir: Path) -> int:
    failures = []
    print(f"\nsoak of episodes via {args.via}: {args.concurrency} concurrent for {args.max_sessions} session slots, "
          f"faults {' '.join(args.faults)} "
          f"(machine shared: figures are what this run saw)")
    for phase in ("faults", "after_sigterm"):
        tally: Tally = out[phase]
        if not tally.episodes:
            continue
        print(f"{phase}: {tally.episodes} episodes")
        for kind, count in tally.endings.most_common():
            ok = acceptable(kind)
            print(f"  {count:6d}  {kind}{'' if ok else '   <-- neither an answer nor a typed failure'}")
            if not ok:
                failures.append(f"{count} episodes ended {kind!r}")
        print(f"  first tool answered a wrong product (answered as the program's output): {tally.tool_outputs_wrong}")
    if "kills" in out:
        print(f"SIGKILLs: {dict(out['kills']) or 'none'}")
    before, after = out["before"], out["after"]
    print(f"after the faults: open sessions {after.sessions_open:.0f}, episodes never ended "
          f"{after.sessions_held - before.sessions_held:.0f}, door sessions {after.door_sessions:.0f} (goal 0 each); "
          f"server processes {before.processes} -> {after.processes}; memory {before.rss_mb:.0f} -> "
          f"{after.rss_mb:.0f} MiB")
    if after.sessions_open or after.sessions_held > before.sessions_held:
        failures.append("sessions left open after the faults")
    if after.door_sessions:
        print(f"  note: the door keeps {after.door_sessions:.0f} ORS session(s); {out['cancelled_opening']} episode(s) "
              "were cancelled while `async with env.session()` was being entered, and openreward then never deletes "
              f"what it made; the server's idle reaper ({IDLE_S:g} s) ended their episodes, the door drops its "
              "entries after 900 s without a ping")
    if after.processes > before.processes:
        failures.append(f"server processes grew {before.processes} -> {after.processes}")
    if after.rss_mb * 2**20 > memory_bound(int(before.rss_mb * 2**20)):
        failures.append("memory past 2x start + 300 MB")
    if "drain_s" in out:
        print(f"SIGTERM: the last episode ended {out['drain_s']:.1f} s after it (grace {GRACE_S:g} s); "
              f"server exit code {out['exit_code']}")
        if not isinstance(out["exit_code"], int):
            failures.append(f"the server {out['exit_code']}")
    print(f"processes still running 1 s after the server exited: {out['lingered'] or 'none'}")
    print(f"processes left running 11 s after it: {out['survivors'] or 'none'}; sandbox cgroups left: "
          f"{out['cgroups'] or 'none'}")
    if out["survivors"] or out["cgroups"]:
        failures.append("processes or cgroups left")
    if failures:
        print("FAILED: " + "; ".join(failures))
        for name in ("server.log", "door.log"):
            if (log_dir / name).exists():
                print(f"--- {name} (tail)\n" + "\n".join(log_tail(log_dir / name)))
        return 1
    print("PASSED: every episode ended with an answer or a typed failure; nothing left")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="soak-episodes-") as tmp:
        out = asyncio.run(soak(args, Path(tmp)))
        return report(args, out, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
