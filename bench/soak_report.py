"""The soak's bookkeeping: every rollout sent, every result received, checked against its known score."""

from __future__ import annotations

import argparse
import threading
from collections import Counter, defaultdict
from pathlib import Path

from soak_workload import Expect

MB = 1024 * 1024
MEMORY_FACTOR, MEMORY_SLACK_MB = 2.0, 300
EXAMPLES = 3


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Ledger:
    """Thread-safe: what was sent, what came back, and what disagrees."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.expect: dict[str, Expect] = {}
        self.answered: dict[str, object] = {}
        self.calls: Counter[str] = Counter()
        self.rpc_errors: Counter[str] = Counter()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.status: Counter[str] = Counter()
        self.unscored: Counter[tuple[str, str]] = Counter()     # (kind, status)
        self.verdicts: dict[str, Counter[str]] = defaultdict(Counter)  # pathological kind -> status/verdict
        self.wrong_ids = 0
        self.duplicates = 0
        self.wrong: list[str] = []
        self.examples: dict[str, list[str]] = defaultdict(list)

    def sent(self, groups: list[list[tuple[dict, Expect]]]) -> None:
        with self._lock:
            for group in groups:
                for rollout, expect in group:
                    self.expect[rollout["id"]] = expect

    def record(self, method: str, seconds: float, groups, results, error: str | None, *, ordered: bool) -> None:
        ids = [r["id"] for g in groups for r, _ in g]
        with self._lock:
            self.calls[method] += 1
            self.latency[method].append(seconds)
            if error:
                self.rpc_errors[f"{method} {error.split(':')[0]}"] += 1
                self._example("rpc error", f"{method}: {error}")
            mine, got = set(ids), set()
            for i, r in enumerate(results):
                if r.id not in mine or (ordered and (i >= len(ids) or ids[i] != r.id)):
                    self.wrong_ids += 1
                    self._example("wrong id", f"{method}: result #{i} has id {r.id!r}, sent {ids[i:i + 1]}")
                    continue
                if r.id in got:
                    self.duplicates += 1
                    self._example("duplicate", f"{method}: two results for {r.id!r}")
                    continue
                got.add(r.id)
                self.answered[r.id] = r
                self._check(r)
            missing = [i for i in ids if i not in got]
            if missing:
                self._example("unanswered", f"{method}: {len(missing)} of {len(ids)} unanswered "
                                            f"({error or 'the call ended OK'}), e.g. {missing[0]}")

    def _check(self, r) -> None:
        expect = self.expect[r.id]
        self.status[r.status.name] += 1
        if expect.pathological:
            verdict = r.extracted.split(" (")[0] if r.scored and expect.kind in ("loop", "memory", "fork") else ""
            self.verdicts[expect.kind][f"{r.status.name} {verdict}".strip()] += 1
        if not r.scored:
            self.unscored[(expect.kind, r.status.name)] += 1
            label = "unscored" if r.status.name in ("TIMEOUT", "ERROR") else "unexpected status"
            self._example(label, f"{r.id} ({expect.kind}): {r.status.name} {r.error[:200]!r}")
            return
        if abs(r.score - expect.score) > 1e-9:
            self.wrong.append(r.id)
            self._example("silently wrong", f"{r.id} ({expect.kind}): expected {expect.score:g}, got {r.score:g} "
                                            f"{r.status.name} extracted={r.extracted!r} error={r.error[:200]!r}")

    def _example(self, kind: str, text: str) -> None:
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(text)

    @property
    def unanswered(self) -> int:
        """Sent and never answered (counted from the totals, so a call that never returned counts too)."""
        with self._lock:
            return len(self.expect) - len(self.answered)

    @property
    def lost(self) -> int:
        return self.unanswered + self.wrong_ids + self.duplicates


def _ms(values: list[float], q: float) -> str:
    return f"{1000 * pct(values, q):.0f} ms"


def memory_bound(rss_start: int) -> int:
    return int(MEMORY_FACTOR * rss_start + MEMORY_SLACK_MB * MB)


def log_tail(log_path: Path, lines: int = 15) -> list[str]:
    try:
        return log_path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def print_report(ledger: Ledger, outcome: dict, args: argparse.Namespace, log_path: Path) -> int:
    """Prints the figures; returns the exit status (0 only when every check holds)."""
    sent, answered = len(ledger.expect), len(ledger.answered)
    wall = outcome.get("wall_s", 0.0)
    all_latency = [x for v in ledger.latency.values() for x in v]
    print("\n== soak results ==")
    print(f"calls: {sum(ledger.calls.values())} ({dict(ledger.calls)}); rpc errors: {dict(ledger.rpc_errors) or 0}")
    print(f"rollouts sent: {sent}")
    print(f"rollouts answered: {answered}")
    print(f"by status: {dict(sorted(ledger.status.items()))}")
    pathological = Counter(e.kind for e in ledger.expect.values() if e.pathological)
    print(f"pathological items sent: {dict(sorted(pathological.items()))}")
    for kind, verdicts in sorted(ledger.verdicts.items()):
        print(f"  {kind}: {dict(verdicts.most_common())}")
    unscored = ", ".join(f"{k}/{s}: {n}" for (k, s), n in sorted(ledger.unscored.items()))
    print(f"unscored by kind/status (allowed): {unscored or 'none'}")
    print(f"lost: {ledger.lost} (unanswered {ledger.unanswered}, wrong id {ledger.wrong_ids}, "
          f"duplicate {ledger.duplicates})")
    print(f"silently wrong: {len(ledger.wrong)}")
    for method in sorted(ledger.latency):
        v = ledger.latency[method]
        print(f"latency {method:<11} p50 {_ms(v, 0.5)}, p99 {_ms(v, 0.99)}, max {_ms(v, 1.0)} ({len(v)} calls)")
    print(f"latency all calls   p50 {_ms(all_latency, 0.5)}, p99 {_ms(all_latency, 0.99)}")
    if wall:
        print(f"throughput: {answered / wall:.1f} rollouts/s over {wall:.1f} s")
    start, peak, end = outcome.get("rss_start", 0), outcome.get("rss_peak", 0), outcome.get("rss_end", 0)
    end_text = f"{end / MB:.0f} MB" if "rss_end" in outcome else "not measured"
    print(f"server RSS (server + workers + sandbox, summed): start {start / MB:.0f} MB, peak {peak / MB:.0f} MB, "
          f"end {end_text} (bound {memory_bound(start) / MB:.0f} MB)")
    faults = outcome.get("faults") or {}
    print(f"faults injected: {sum(faults.values())} ({dict(sorted(faults.items())) or 'none'})")
    print(f"server after the soak: {outcome.get('probe') or 'answered a known batch right'}"
          if "probe" in outcome else "server after the soak: not probed")
    print(f"server exit code on SIGTERM: {outcome.get('server_rc')}; processes left behind: "
          f"{len(outcome.get('leftovers', []))}; sandbox cgroups left behind: "
          f"{len(outcome.get('cgroups_left', []))} (removed by the next executor's start)")
    for kind, texts in sorted(ledger.examples.items()):
        for text in texts:
            print(f"  {kind}: {text}")
    for note in outcome.get("leftovers", [])[:EXAMPLES]:
        print(f"  left behind (killed now): {note}")
    failures = []
    if ledger.lost:
        failures.append(f"{ledger.lost} rollouts lost")
    if ledger.wrong:
        failures.append(f"{len(ledger.wrong)} silently wrong scores")
    if end > memory_bound(start):
        failures.append(f"RSS at end {end / MB:.0f} MB > bound {memory_bound(start) / MB:.0f} MB")
    if outcome.get("probe"):
        failures.append("the server did not answer a known batch right after the soak")
    if outcome.get("leftovers"):
        failures.append(f"{len(outcome['leftovers'])} processes outlived the server")
    if outcome.get("interrupted"):
        print(f"soak: INTERRUPTED (partial figures){': ' + '; '.join(failures) if failures else ''}")
        return 130
    if failures:
        print("faults, in order: " + ("; ".join(outcome.get("fault_log", [])) or "none"))
        print("server log tail:")
        for line in log_tail(log_path):
            print(f"  | {line}")
    print(f"soak: {'FAIL: ' + '; '.join(failures) if failures else 'PASS'}")
    return 1 if failures else 0
