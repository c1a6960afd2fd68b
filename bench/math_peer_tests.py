"""Our math verifier on HF math-verify's own published tests, side by side with math-verify.

Why: math-verify's test suite is the peer's own statement of what a math verifier must get
right. Each parametrized case (gold, prediction, expected verdict) becomes one differential
case: ours (``grade(prediction, gold)``) and math-verify (its tests' own ``compare_strings``
or ``verify(parse(gold), parse(pred))``, with the options that test passes) answer it in the
same process, and the script prints accuracy and false positives (equal where the test
expects not equal) for both, the misses of ours, and the time each took.

The cases are read with ``ast`` from the ``tests/`` folder of math-verify's source
distribution for the installed version (``pip download --no-binary :all: math-verify==<v>``,
kept under ``build/``); their code is never imported or run, and nothing of them is committed.
A test option that has a counterpart in ours is passed on: a ``precision`` below math-verify's
default of 6 (the test accepts a coarse decimal for an exact value) runs ours with
``decimal_approximations="allow"``; LaTeX-only extraction (``match_types=["latex"]``) runs ours
with ``last_number_fallback=False``. Cases that test an option only math-verify has (``strict``,
``allow_set_relation_comp``) are counted apart. A published expectation that math-verify itself
corrected later (``CORRECTED``) is replaced by the correction, and printed with its source.
Newer tests than the installed version's: ``--tests-dir`` a checkout of Math-Verify's repository.

    .venv/bin/python bench/math_peer_tests.py                    # fetches the sdist once (pip)
    .venv/bin/python bench/math_peer_tests.py --tests-dir ~/src/Math-Verify/tests --show-all
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "math-verify-tests"
PEER_DEFAULT_PRECISION = 6
#: Options of math-verify's verify() that ours has no counterpart for.
PEER_ONLY_OPTIONS = ("strict", "allow_set_relation_comp")
#: Published expectations that math-verify itself later corrected (file, gold, pred) -> (expected, why).
CORRECTED = {
    ("test_yujianll.py", "$1 - \\frac{1}{\\mathrm{e}}$", "$1 + \\frac{1}{\\mathrm{e}}$"):
        (False, "huggingface/Math-Verify PR #82: 1 - 1/e is not 1 + 1/e (the 0.9.0 test expected equal)"),
}


@dataclass(frozen=True)
class PeerCase:
    """One parametrized case of a math-verify test and the options that test passes."""

    source: str  # file::function[index]
    gold: str
    pred: str
    expected: bool
    helper: str  # "compare_strings" or "verify"
    options: dict = field(default_factory=dict, hash=False)  # compare_strings keyword arguments
    corrected: str = ""  # why the published expectation was replaced (CORRECTED)

    def ours_config(self):  # -> GradeConfig (imported lazily: the script parses before it grades)
        """Ours configured as the test configures math-verify, where ours has the knob: a ``precision``
        below 6 allows short decimals; LaTeX-only extraction (no ``expr``) takes no bare last number."""
        from reward_service.verifiers.math import EquivalenceConfig, ExtractionConfig, GradeConfig

        coarse = self.options.get("precision", PEER_DEFAULT_PRECISION) < PEER_DEFAULT_PRECISION
        latex_only = "expr" not in self.options.get("match_types", ["latex", "expr"])
        return GradeConfig(extraction=ExtractionConfig(last_number_fallback=not latex_only),
                           equivalence=EquivalenceConfig(decimal_approximations="allow" if coarse else "strict"))

    @property
    def peer_only(self) -> list[str]:
        """The test's options that ours has no counterpart for: the case tests math-verify's option."""
        return [f"{k}={self.options[k]}" for k in PEER_ONLY_OPTIONS if k in self.options]


# ---------------------------------------------------------------- reading the tests (no import)

def fetch_tests(dest: Path) -> Path:
    """``tests/`` of math-verify's sdist for the installed version, downloaded once with pip."""
    tests = dest / version("math-verify") / "tests"
    if tests.is_dir():
        return tests
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        f"math-verify=={version('math-verify')}", "-d", tmp], check=True)
        sdist = next(Path(tmp).glob("math_verify-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if "/tests/" in m.name and m.name.endswith(".py") and m.isfile()]
            tests.mkdir(parents=True, exist_ok=True)
            for member in members:
                (tests / Path(member.name).name).write_bytes(tar.extractfile(member).read())
    return tests


def _literal(node: ast.AST, params: dict[str, object]) -> object:
    if isinstance(node, ast.Name) and node.id in params:
        return params[node.id]
    return ast.literal_eval(node)


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return None


def _verdict_call(func: ast.FunctionDef) -> ast.Call | None:
    """The ``compare_strings(...)`` or ``verify(...)`` call the test asserts on."""
    for node in ast.walk(func):
        if _call_name(node) in ("compare_strings", "verify"):
            return node  # type: ignore[return-value]
    return None


def _param_rows(func: ast.FunctionDef) -> tuple[list[str], list[ast.AST]] | None:
    for deco in func.decorator_list:
        if _call_name(deco) == "parametrize" and len(deco.args) == 2:  # type: ignore[attr-defined]
            names_node, rows = deco.args  # type: ignore[attr-defined]
            if isinstance(names_node, ast.Constant) and isinstance(rows, ast.List):
                names = [n.strip() for n in names_node.value.split(",")]
                return names, rows.elts
    return None


def _case(path: Path, func: ast.FunctionDef, index: int, call: ast.Call,
          params: dict[str, object]) -> PeerCase | None:
    helper = _call_name(call)
    if helper == "verify":  # verify(parse(gold), parse(pred)): math-verify's defaults
        args = [a.args[0] if _call_name(a) == "parse" and a.args else a for a in call.args[:2]]  # type: ignore
        options: dict = {}
    else:
        args = call.args[:2]
        options = {kw.arg: _literal(kw.value, params) for kw in call.keywords if kw.arg}
    gold, pred = (_literal(a, params) for a in args)
    expected = params.get("expected", params.get("result"))
    if not isinstance(gold, str) or not isinstance(pred, str) or expected is None:
        return None
    expected, note = CORRECTED.get((path.name, gold, pred), (bool(expected), ""))
    return PeerCase(f"{path.name}::{func.name}[{index}]", gold, pred, expected, helper, options, note)


def _assert_cases(path: Path, func: ast.FunctionDef) -> list[PeerCase]:
    """``assert compare_strings("<gold>", "<pred>", ...) == 1`` written out in a test body."""
    out = []
    for node in ast.walk(func):
        if (isinstance(node, ast.Compare) and _call_name(node.left) == "compare_strings"
                and len(node.comparators) == 1 and isinstance(node.comparators[0], ast.Constant)):
            try:
                case = _case(path, func, len(out), node.left,  # type: ignore[arg-type]
                             {"expected": node.comparators[0].value})
            except ValueError:
                continue
            if case is not None:
                out.append(case)
    return out


def load_cases(tests: Path) -> tuple[list[PeerCase], int]:
    """Every (gold, pred, expected) case of the tests, and how many rows were not literals."""
    cases: list[PeerCase] = []
    skipped = 0
    for path in sorted(tests.glob("test_*.py")):
        for func in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(func, ast.FunctionDef):
                continue
            param = _param_rows(func)
            call = _verdict_call(func)
            if param is None:
                cases.extend(_assert_cases(path, func))
                continue
            names, rows = param
            if call is None or not {"gold", "pred"} <= set(names):
                continue
            for index, row in enumerate(rows):
                try:
                    values = ast.literal_eval(row)
                    case = _case(path, func, index, call, dict(zip(names, values)))
                except ValueError:
                    case = None
                if case is None:
                    skipped += 1
                else:
                    cases.append(case)
    return cases, skipped


# ---------------------------------------------------------------- the two verifiers

def peer_checker():
    """math-verify as each test calls it (its tests' ``compare_strings``, rebuilt from its public API)."""
    import logging

    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
    from math_verify.errors import TimeoutException

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)

    def check(case: PeerCase) -> bool:
        try:
            if case.helper == "verify":
                return bool(verify(parse(case.gold), parse(case.pred)))
            opts = case.options
            targets = [LatexExtractionConfig(boxed_match_priority=0) if t == "latex" else ExprExtractionConfig()
                       for t in opts.get("match_types", ["latex", "expr"])]
            return bool(verify(parse(case.gold, targets), parse(case.pred, targets),
                               float_rounding=opts.get("precision", PEER_DEFAULT_PRECISION),
                               strict=opts.get("strict", True),
                               allow_set_relation_comp=opts.get("allow_set_relation_comp", False)))
        except (Exception, TimeoutException):  # math-verify's timeout is a BaseException
            return False

    return check


def ours_checker():
    from reward_service.verifiers.math import grade

    def check(case: PeerCase) -> bool:
        return grade(case.pred, case.gold, case.ours_config()).correct

    return check


def run(check, cases: list[PeerCase]) -> tuple[list[bool], list[float]]:
    verdicts, seconds = [], []
    for case in cases:
        start = time.perf_counter()
        verdicts.append(check(case))
        seconds.append(time.perf_counter() - start)
    return verdicts, seconds


# ---------------------------------------------------------------- report

def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _table(title: str, idx: list[int], cases: list[PeerCase], runs: dict[str, tuple[list[bool], list[float]]]) -> None:
    print(f"{title} ({len(idx)} cases)")
    rows = [
        ("accuracy", lambda v: f"{sum(v[i] == cases[i].expected for i in idx) / len(idx):.1%}"),
        ("correct", lambda v: f"{sum(v[i] == cases[i].expected for i in idx)}/{len(idx)}"),
        ("false positives", lambda v: str(sum(v[i] and not cases[i].expected for i in idx))),
        ("false negatives", lambda v: str(sum(cases[i].expected and not v[i] for i in idx))),
    ]
    print(f"{'':<26}" + "".join(f"{name:>14}" for name in runs))
    for label, fn in rows:
        print(f"{label:<26}" + "".join(f"{fn(verdicts):>14}" for verdicts, _ in runs.values()))


def report(cases: list[PeerCase], runs: dict[str, tuple[list[bool], list[float]]], show_all: bool) -> None:
    comparable = [i for i, c in enumerate(cases) if not c.peer_only]
    _table("Cases ours can be configured for (not testing a math-verify-only option)", comparable, cases, runs)
    print()
    _table("All cases", list(range(len(cases))), cases, runs)
    for label, fn in (("total seconds", sum), ("worst case ms", max)):
        print(f"{label:<26}" + "".join(f"{fn(s) * (1000 if 'ms' in label else 1):>14.3f}"
                                       for _, s in runs.values()))
    corrected = [c for c in cases if c.corrected]
    if corrected:
        print("\nexpectations replaced by math-verify's own later correction:")
        for c in corrected:
            print(f"  {c.source}: expected={int(c.expected)}: {c.corrected}")
    names = list(runs)
    ours, peer = runs[names[0]][0], runs[names[1]][0]
    wrong = [i for i, c in enumerate(cases) if ours[i] != c.expected]
    print(f"\ncases where {names[0]} is wrong ({len(wrong)}{'' if show_all else ', first 60'}):")
    for i in wrong if show_all else wrong[:60]:
        c = cases[i]
        kind = "FALSE POSITIVE" if ours[i] else "miss"
        match_types = [f"match_types={c.options['match_types']}"] if "match_types" in c.options else []
        notes = ", ".join(c.peer_only + match_types)
        print(f"  [{kind}] {c.source} expected={int(c.expected)} {names[1]}={int(peer[i])}"
              + (f" ({notes})" if notes else ""))
        print(f"      gold: {_short(c.gold)}")
        print(f"      pred: {_short(c.pred)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests-dir", type=Path, help="math-verify's tests/ folder (default: the sdist's, via pip)")
    parser.add_argument("--show-all", action="store_true", help="list every case ours gets wrong")
    args = parser.parse_args()
    tests = args.tests_dir or fetch_tests(CACHE)
    cases, skipped = load_cases(tests)
    print(f"math-verify {version('math-verify')} tests from {tests}: {len(cases)} cases "
          f"({skipped} rows not literal, left out)\n")
    checks = {"ours": ours_checker(), "math-verify": peer_checker()}
    for check in checks.values():  # warm both (imports, caches)
        check(PeerCase("warm", "$1$", "\\boxed{1}", True, "verify"))
    runs = {name: run(check, cases) for name, check in checks.items()}
    report(cases, runs, args.show_all)
    return 0


if __name__ == "__main__":
    sys.exit(main())
