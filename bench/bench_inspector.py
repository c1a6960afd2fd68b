"""How fast `reward-service inspect` opens a 100,000-rollout file (issue 22's goal: under 2 s).

    make bench-inspector
    python -m bench.bench_inspector --rollouts 100000 --repeats 3 [--path runs/x/rollouts.jsonl]

"Opens" is measured as a user meets it: from starting the command to the page's three answers
(summary, the first page of groups, the reward histograms) from the real server on loopback, the
process start, imports and the index build included (median of ``--repeats`` fresh starts). Also
printed: the index build alone (wall and CPU seconds), warm API latencies (a filter, a deep page), and,
where Chromium is installed, the time `chromium --dump-dom` takes to show the rendered page next to
the same browser on a blank page (its own start-up). The machine's load average is printed with the
figures: on a shared machine wall times stretch, CPU times much less.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from reward_core.ports import free_port
from reward_service.inspector.filters import Filters
from reward_service.inspector.index import RolloutIndex
from tests.inspector_fixtures import write_rollouts

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 2.0
PAGE_QUERIES = ("api/summary", "api/groups?page=0", "api/histograms")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read()


def open_time(path: Path) -> tuple[float, float]:
    """(wall seconds from spawning `reward-service inspect` to the page's three answers, the CPU seconds it used)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "reward_service", "inspect", str(path), "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                _get(base + PAGE_QUERIES[0])
                break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None:
                    raise RuntimeError("the inspector exited; run it by hand to see why") from None
                time.sleep(0.01)
        for query in PAGE_QUERIES[1:]:
            _get(base + query)
        wall = time.perf_counter() - started
    finally:
        proc.terminate()
    _, _, usage = os.wait4(proc.pid, 0)  # idle after its answers: its CPU time is what opening cost
    return wall, usage.ru_utime + usage.ru_stime


def index_times(path: Path, repeats: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        RolloutIndex(path).close()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def api_latencies(path: Path, repeats: int) -> dict[str, float]:
    """Warm in-process query times (ms): what each click costs once the file is indexed."""
    index = RolloutIndex(path)
    cases = {"first page": lambda: index.page(Filters()),
             "status=TIMEOUT page 0": lambda: index.page(Filters.from_query({"status": "TIMEOUT"})),
             "page 300": lambda: index.page(Filters(), page=300),
             "histograms": lambda: index.histograms(Filters()),
             "histograms task=code min_reward=0.5": lambda: index.histograms(
                 Filters.from_query({"task": "code", "min_reward": "0.5"}))}
    out = {}
    for name, call in cases.items():
        times = []
        for _ in range(repeats):
            index._cache.clear()  # a fresh filter each time: the walk over the columns is counted
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
        out[name] = statistics.median(times) * 1000
    index.close()
    return out


def browser_times(path: Path, workdir: Path) -> tuple[float, float] | None:
    """(rendered page, blank page) seconds of `chromium --dump-dom`; None without Chromium."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return None
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--virtual-time-budget=15000",
             "--window-size=1400,900"]
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "reward_service", "inspect", str(path), "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                _get(f"http://127.0.0.1:{port}/api/summary")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        times = []
        for url in (f"http://127.0.0.1:{port}/", "about:blank"):
            t = time.perf_counter()
            dom = subprocess.run([browser, *flags, f"--user-data-dir={workdir / f'profile-{len(times)}'}",
                                  "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
            times.append(time.perf_counter() - t)
            if url != "about:blank" and 'data-state="ready"' not in dom:
                raise RuntimeError("the page did not render")
        return times[0], times[1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=100_000, help="rollouts in the generated file")
    parser.add_argument("--path", help="time this rollouts file instead of a generated one")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-inspector-") as tmp:
        workdir = Path(tmp)
        path = Path(args.path) if args.path else write_rollouts(workdir / "rollouts.jsonl", args.rollouts)
        lines = sum(1 for _ in path.open("rb"))
        print(f"file: {path} ({lines:,} rollouts, {path.stat().st_size / 2**20:.1f} MB); "
              f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
        wall, cpu = index_times(path, args.repeats)
        print(f"index build (in process): {wall:.2f} s wall, {cpu:.2f} s CPU (median of {args.repeats})")
        opens = [open_time(path) for _ in range(args.repeats)]
        median = statistics.median(wall for wall, _ in opens)
        cpu = statistics.median(cpu for _, cpu in opens)
        print(f"open: start `reward-service inspect` -> summary, first page, histograms answered: {median:.2f} s "
              f"wall, {cpu:.2f} s CPU (median of {args.repeats}: {', '.join(f'{w:.2f}' for w, _ in opens)}); "
              f"target < {TARGET_S:.0f} s: {'met' if median < TARGET_S else 'NOT met'} on this machine now")
        for name, ms in api_latencies(path, max(args.repeats, 5)).items():
            print(f"  warm query {name}: {ms:.1f} ms")
        browser = browser_times(path, workdir)
        if browser is None:
            print("chromium: not installed (scripts/system_setup.sh with INSPECTOR_BROWSER=1): page render not timed")
        else:
            print(f"chromium --dump-dom of the rendered first page: {browser[0]:.2f} s "
                  f"(the same browser on about:blank: {browser[1]:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
