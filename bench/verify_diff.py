"""`make verify-diff`: our math verifier against HF math-verify on pairs neither was tuned on.

Why: the dev and held-out sets are small and were read while the verifier grew; agreement with
the peer on thousands of generated pairs, each with its verdict known by construction, shows
where either one is wrong, by class, with examples. The pairs (``verify_diff_pairs.py``) come from
reasoning-gym's offline generators and from systematic rewrites of every gold of
``data/math_devset.jsonl`` and ``data/math_heldout.jsonl``: equivalent rewrites that must be
accepted, perturbations that must be rejected.

Both verifiers run in this process, single-threaded and interleaved pair by pair (math-verify's
signal-based timeouts need the main thread). A math-verify exception is a False verdict.

    make verify-diff                                  # installs the bench extra first
    .venv/bin/python bench/verify_diff.py --limit 500 --seed 1
    .venv/bin/python bench/verify_diff.py --json /tmp/verify_diff.json --only-disagreements
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from math_peer import peer_detailed
from verify_diff_pairs import Pair, all_pairs


@dataclass(frozen=True)
class DiffConfig:
    limit: int | None  # a deterministic sample of this many pairs; None: all of them
    seed: int  # seeds the generators (reasoning-gym and the rewrites) and the --limit sample
    json_path: Path | None  # where to write every pair with both verdicts
    only_disagreements: bool  # report (and write) only the pairs where a verifier is wrong or they differ

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit must be at least 1, got {self.limit}; leave it out to run every pair")


@dataclass(frozen=True)
class Outcome:
    pair: Pair
    ours: bool
    ours_extracted: str | None
    ours_reason: str
    ours_s: float
    peer: bool
    peer_gold: str
    peer_extracted: str
    peer_error: str | None
    peer_s: float

    @property
    def verdict_class(self) -> str | None:
        """Who is right where the verdicts differ or both are wrong; None where both are right."""
        ours_ok, peer_ok = self.ours == self.pair.expected, self.peer == self.pair.expected
        if ours_ok and peer_ok:
            return None
        return "ours right" if ours_ok else "math-verify right" if peer_ok else "both wrong"


def run(pairs: list[Pair]) -> list[Outcome]:
    from reward_service.verifiers.math import grade

    peer = peer_detailed()
    for warm in ("\\boxed{1}", "#### 2", "The answer is $\\frac{1}{2}$."):
        grade(warm, "1")
        peer(warm, "1")
    out = []
    for i, p in enumerate(pairs):
        start = time.perf_counter()
        try:
            g = grade(p.response, p.gold)
            ours, extracted, reason = g.correct, g.extracted, g.reason
        except Exception as exc:  # grade() must never raise; if it does, the report shows it
            ours, extracted, reason = False, None, f"raised {type(exc).__name__}"
        ours_s = time.perf_counter() - start
        v = peer(p.response, p.gold)
        out.append(Outcome(p, ours, extracted, reason, ours_s,
                           v.correct, v.gold_parsed, v.extracted, v.error, v.seconds))
        if (i + 1) % 2000 == 0:
            print(f"... {i + 1}/{len(pairs)} pairs", file=sys.stderr, flush=True)
    return out


def _pct(hits: int, n: int) -> str:
    return f"{hits / n:.1%}" if n else "-"


def _clip(text: str, n: int = 160) -> str:
    """text on one line, its end kept (responses end with their answer)."""
    flat = text.replace("\n", "\\n")
    return flat if len(flat) <= n else "..." + flat[-(n - 3):]


def _family(r: Outcome) -> str:
    """rg, rewrite, wrong, gold-form, gold-rewrite; with :wrong / :rewritten where the kind ends so."""
    parts = r.pair.kind.split(":")
    return parts[0] + (f":{parts[-1]}" if parts[-1] in ("wrong", "rewritten") and len(parts) > 2 else "")


def report_accuracy(results: list[Outcome]) -> None:
    def table(title: str, key) -> None:
        groups: dict[str, list[Outcome]] = defaultdict(list)
        for r in results:
            groups[key(r)].append(r)
        print(f"\n{title:<34}{'n':>6}{'ours':>9}{'math-verify':>13}{'agree':>9}")
        for name in sorted(groups, key=lambda g: (-len(groups[g]), g)) + ["ALL"]:
            rs = results if name == "ALL" else groups[name]
            print(f"{name:<34}{len(rs):>6}{_pct(sum(r.ours == r.pair.expected for r in rs), len(rs)):>9}"
                  f"{_pct(sum(r.peer == r.pair.expected for r in rs), len(rs)):>13}"
                  f"{_pct(sum(r.ours == r.peer for r in rs), len(rs)):>9}")

    table("accuracy vs ground truth: source", lambda r: r.pair.source)
    table("by kind family", _family)
    table("by response style", lambda r: r.pair.style)
    peer_right = [r for r in results if r.peer == r.pair.expected]
    print(f"\nagreement ours / math-verify: {_pct(sum(r.ours == r.peer for r in results), len(results))}")
    print(f"on the {len(peer_right)} pairs where math-verify is right, ours agrees on "
          f"{_pct(sum(r.ours == r.peer for r in peer_right), len(peer_right))} (goal >= 99%)")
    errors = Counter(r.peer_error for r in results if r.peer_error)
    raised = Counter(r.ours_reason for r in results if r.ours_reason.startswith("raised"))
    print(f"math-verify exceptions (counted as False): {dict(errors) or 'none'}; ours raised: {dict(raised) or 'none'}")


def report_false_positives(results: list[Outcome]) -> None:
    wrong: dict[str, list[Outcome]] = defaultdict(list)
    for r in results:
        if not r.pair.expected:
            wrong[r.pair.kind].append(r)
    print("\n== False positives: a wrong answer accepted, by kind ==")
    print(f"{'kind':<48}{'wrong':>7}{'ours':>7}{'math-verify':>13}")
    for kind in sorted(wrong, key=lambda k: (-sum(r.ours for r in wrong[k]), -len(wrong[k]), k)):
        rs = wrong[kind]
        print(f"{kind:<48}{len(rs):>7}{sum(r.ours for r in rs):>7}{sum(r.peer for r in rs):>13}")
    rs = [r for group in wrong.values() for r in group]
    print(f"{'ALL':<48}{len(rs):>7}{sum(r.ours for r in rs):>7}{sum(r.peer for r in rs):>13}")


def report_disagreements(results: list[Outcome]) -> None:
    classes: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for r in results:
        if r.verdict_class:
            classes[(r.verdict_class, r.pair.kind)].append(r)
    order = {"math-verify right": 0, "both wrong": 1, "ours right": 2}
    totals: Counter[str] = Counter()
    for (who, _), rs in classes.items():
        totals[who] += len(rs)
    print(f"\n== Disagreement classes (kind x who is right), two examples each: {dict(totals)} ==")
    for who, kind in sorted(classes, key=lambda c: (order[c[0]], -len(classes[c]), c[1])):
        rs = classes[(who, kind)]
        print(f"\n[{who}] {kind}: {len(rs)} pairs (expected {rs[0].pair.expected}); "
              f"sources {dict(Counter(r.pair.source for r in rs).most_common(3))}")
        for r in rs[:2]:
            print(f"   gold: {_clip(r.pair.gold)!s}\n   response ({r.pair.style}): {_clip(r.pair.response)}")
            print(f"   ours: {r.ours} extracted {r.ours_extracted!r} ({r.ours_reason}); math-verify: {r.peer} "
                  f"gold {_clip(r.peer_gold, 100)} extracted {_clip(r.peer_extracted, 100)}"
                  + (f" raised {r.peer_error}" if r.peer_error else ""))


def report_speed(results: list[Outcome]) -> None:
    ours, peer = sorted(r.ours_s for r in results), sorted(r.peer_s for r in results)
    print(f"\n== Speed, one thread, interleaved ({len(results)} pairs) ==")
    print(f"{'':<16}{'total s':>10}{'mean ms':>10}{'p99 ms':>10}{'worst ms':>10}")
    for name, ts in (("ours", ours), ("math-verify", peer)):
        print(f"{name:<16}{sum(ts):>10.2f}{1000 * sum(ts) / len(ts):>10.3f}"
              f"{1000 * ts[min(len(ts) - 1, int(0.99 * len(ts)))]:>10.2f}{1000 * ts[-1]:>10.1f}")
    print(f"math-verify / ours, total time: {sum(peer) / max(sum(ours), 1e-9):.1f}x")


def write_json(path: Path, results: list[Outcome]) -> None:
    rows = [{**asdict(r.pair), **{k: v for k, v in asdict(r).items() if k != "pair"}, "class": r.verdict_class}
            for r in results]
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False))


def parse_config(argv: list[str] | None = None) -> DiffConfig:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="run a deterministic sample of N pairs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generators and of the sample")
    parser.add_argument("--json", type=Path, default=None,
                        help="write every pair here, with both verdicts (ours, peer: math-verify) and extractions")
    parser.add_argument("--only-disagreements", action="store_true",
                        help="report (and write) only the pairs where a verifier is wrong or the two differ")
    args = parser.parse_args(argv)
    return DiffConfig(args.limit, args.seed, args.json, args.only_disagreements)


def _pin_hash_seed() -> None:
    """Run under PYTHONHASHSEED=0: reasoning-gym draws some items (polynomial_multiplication,
    intermediate_integration) from sympy sets, whose order follows the hash seed."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})


def main() -> int:
    _pin_hash_seed()
    config = parse_config()
    print(f"config: {config}")
    start = time.perf_counter()
    pairs = all_pairs(config.seed)
    if config.limit is not None and config.limit < len(pairs):
        keep = sorted(random.Random(config.seed).sample(range(len(pairs)), config.limit))
        pairs = [pairs[i] for i in keep]
    n_right = sum(p.expected for p in pairs)
    print(f"pairs: {len(pairs)} ({n_right} correct, {len(pairs) - n_right} wrong), "
          f"generated in {time.perf_counter() - start:.1f}s")
    for source, n in sorted(Counter(p.source for p in pairs).items(), key=lambda kv: -kv[1]):
        print(f"   {source:<34}{n:>6}")
    results = run(pairs)
    if not config.only_disagreements:
        report_accuracy(results)
        report_false_positives(results)
    report_disagreements(results)
    report_speed(results)
    if config.only_disagreements:
        results = [r for r in results if r.verdict_class]  # a verifier is wrong (so also: the two differ)
    if config.json_path:
        write_json(config.json_path, results)
        print(f"\nwrote {len(results)} pairs to {config.json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
