"""The pairs of `make verify-diff`: (gold, response, expected), the verdict known by construction.

Two sources; no pair was seen while tuning either verifier (the dev-set golds that the second
source starts from were: the responses around them are new):

* reasoning-gym's offline generators (``RG_DATASETS``). The dataset's answer is the gold, verbatim
  (fraction_simplification's ``$...$`` answers too; the responses drop the dollars), except the
  sympy-syntax answers of ``SYMPY_ANSWERS``: their gold is ``sympy.latex`` of the answer (a
  constant of integration ``C`` written last), and their raw answer is a second gold (kind
  ``rg:<dataset>:sympy-gold``). Integrals sympy left unevaluated are skipped. Wrong variants of
  those change one number in the sympy text and are kept only where sympy finds the value (for
  antiderivatives: the derivative) different at sample points.
* every gold of ``data/math_devset.jsonl`` and ``data/math_heldout.jsonl`` but the pathological
  ones and the ``sentence_golds`` (a sentence is no answer to rewrite); a full solution
  (``\\boxed{}``, ``####``) stays the gold, its answer goes in the responses.

Each answer goes into responses as it is, through equivalent rewrites and through wrong variants
(``verify_diff_rewrites.py``), in realistic response styles (``STYLES``). The gold also goes in
delimited (``gold-form:*``) and rewritten (``gold-rewrite:*``) forms.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from verify_diff_rewrites import change_number, rewrites, wrongs

ROOT = Path(__file__).resolve().parent.parent
MATH_SETS = {"math_devset": ROOT / "data" / "math_devset.jsonl", "math_heldout": ROOT / "data" / "math_heldout.jsonl"}

# reasoning-gym dataset -> items drawn. Integer-only datasets get few: they all look alike.
RG_DATASETS = {
    "basic_arithmetic": 15, "chain_sum": 10, "simple_equations": 10, "gcd": 10, "lcm": 10, "count_primes": 10,
    "leg_counting": 10, "gsm_symbolic": 10, "simple_geometry": 10, "number_sequence": 10, "products": 30,
    "decimal_arithmetic": 30, "decimal_chain_sum": 30, "number_format": 30, "coin_flip": 40, "power_function": 40,
    "fraction_simplification": 60, "dice": 30, "complex_arithmetic": 50, "polynomial_equations": 50,
    "prime_factorization": 40, "advanced_geometry": 60, "polynomial_multiplication": 50,
    "simple_integration": 50, "intermediate_integration": 80,
}
SYMPY_ANSWERS = {"polynomial_multiplication", "simple_integration", "intermediate_integration"}
ANTIDERIVATIVES = {"simple_integration", "intermediate_integration"}


@dataclass(frozen=True)
class Pair:
    gold: str
    response: str
    expected: bool
    source: str  # math_devset, math_heldout, rg/<dataset>
    # rg:<dataset>:<form>, rewrite:<name>, wrong:<name>, gold-form:<form>[:rewritten|:wrong], gold-rewrite:<name>
    kind: str
    style: str  # the response style, a key of STYLES
    note: str  # what was done, for reading examples


@dataclass(frozen=True)
class Budget:
    """How many pairs one answer yields."""

    identity_styles: int  # styles the answer as it is goes in
    variant_styles: int  # styles each rewrite and wrong variant goes in
    max_rewrites: int
    max_wrongs: int
    gold_forms: int  # delimited golds (each with the answer as it is, rewritten, and made wrong)
    gold_rewrites: int  # rewritten golds


DATASET_BUDGET = Budget(3, 2, 12, 8, 2, 2)
RG_BUDGET = Budget(2, 1, 3, 3, 1, 1)

# ---------------------------------------------------------------- response styles

PREFIXES = (
    "Let me work through this step by step.",
    "First I simplify the expression, then I check the result against the conditions of the problem.",
    "We apply the usual method and verify each step once more.",
    "Reading the problem carefully, we set up the computation and evaluate it.",
    "",
)
STYLES = {
    "boxed": "{p}\n\nTherefore, the final answer is $\\boxed{{{a}}}$.",
    "answer_is": "{p} The answer is ${a}$.",
    "display": "{p} Putting everything together,\n\\[ {a} \\]",
    "dollars": "{p} Putting everything together,\n$$ {a} $$",
    "paren": "{p} So the answer is \\({a}\\).",
    "final_answer": "{p}\n\n**Final Answer:** {fa}",
    "sentence": "{p} Collecting everything, so the result is ${a}$.",
    "hashes": "{p}\n#### {a}",
}
INTEGER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)")
GOLD_FORMS = {"dollars": "${a}$", "paren": "\\({a}\\)", "boxed": "\\boxed{{{a}}}", "dollars_boxed": "$\\boxed{{{a}}}$"}


def embed(style: str, answer: str, rng: random.Random) -> str:
    """A short response that ends with answer in the given style."""
    plain = not re.search(r"[\\^_{}]", answer)
    final = answer if plain else f"${answer}$"
    return STYLES[style].format(p=rng.choice(PREFIXES), a=answer, fa=final).strip()


def pick_styles(answer: str, k: int, rng: random.Random) -> list[str]:
    names = [s for s in STYLES if s != "hashes" or INTEGER.fullmatch(answer)]
    return rng.sample(names, min(k, len(names)))


def _sample(items: list, k: int, rng: random.Random) -> list:
    return rng.sample(items, min(k, len(items)))


def answer_pairs(gold: str, answer: str, source: str, kind: str, rng: random.Random, budget: Budget,
                 bad: list[tuple[str, str]] | None = None) -> list[Pair]:
    """Every pair built from one gold: answer as it is, rewritten, made wrong; the gold in other forms."""
    out: list[Pair] = []

    def emit(g: str, a: str, expected: bool, kind: str, note: str, k: int) -> None:
        out.extend(Pair(g, embed(s, a, rng), expected, source, kind, s, note) for s in pick_styles(a, k, rng))

    same = rewrites(answer)
    bad = wrongs(answer, rng) if bad is None else bad
    emit(gold, answer, True, kind, "the answer as it is", budget.identity_styles)
    for name, b in _sample(same, budget.max_rewrites, rng):
        emit(gold, b, True, f"rewrite:{name}", f"{answer} -> {b}", budget.variant_styles)
    for name, b in _sample(bad, budget.max_wrongs, rng):
        emit(gold, b, False, f"wrong:{name}", f"{answer} -> {b}", budget.variant_styles)
    for form in _sample(list(GOLD_FORMS), budget.gold_forms, rng):
        g = GOLD_FORMS[form].format(a=answer)
        emit(g, answer, True, f"gold-form:{form}", "response: the answer as it is", 1)
        if same:
            name, b = rng.choice(same)
            emit(g, b, True, f"gold-form:{form}:rewritten", f"response {name}: {b}", 1)
        if bad:
            name, b = rng.choice(bad)
            emit(g, b, False, f"gold-form:{form}:wrong", f"response {name}: {b}", 1)
    for name, b in _sample(same, budget.gold_rewrites, rng):
        emit(b, answer, True, f"gold-rewrite:{name}", f"gold {answer} -> {b}", 1)
    return out


# ---------------------------------------------------------------- data/math_*.jsonl

def _last_boxed(text: str) -> str | None:
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed")
    for j in range(i, len(text)):
        depth += (text[j] == "{") - (text[j] == "}")
        if depth == 0:
            return text[i + 1:j].strip()
    return None


def answer_of(gold: str) -> str:
    """The answer in a gold: its last \\boxed{}, its #### answer, its inside of $...$ or \\(...\\), or itself."""
    if "\\boxed" in gold and _last_boxed(gold):
        return _last_boxed(gold)
    if "####" in gold:
        return gold.rsplit("####", 1)[1].strip()
    m = re.fullmatch(r"\$([^$]+)\$|\\\((.+)\\\)", gold.strip(), re.S)
    return (m.group(1) or m.group(2)).strip() if m else gold.strip()


#: Dev-set categories whose golds are not answers to rewrite: huge inputs, and sentences.
SKIPPED_CATEGORIES = frozenset({"pathological", "sentence_golds"})


def dataset_pairs(seed: int) -> Iterator[Pair]:
    for source, path in MATH_SETS.items():
        seen: set[str] = set()
        for line in path.read_text().splitlines():
            case = json.loads(line) if line.strip() else None
            if case is None or case["category"] in SKIPPED_CATEGORIES or case["gold"] in seen:
                continue
            seen.add(case["gold"])
            rng = random.Random(f"{seed}:{source}:{case['gold']}")
            yield from answer_pairs(case["gold"], answer_of(case["gold"]), source, "rewrite:as_is", rng, DATASET_BUDGET)


# ---------------------------------------------------------------- reasoning-gym

def _rg_form(name: str, item: dict) -> str:
    meta, answer = item["metadata"], item["answer"]
    named = {"fraction_simplification": "style", "advanced_geometry": "task_type"}
    if name in named:
        return meta[named[name]]
    if re.search(r"\de[+-]", answer):
        return "e-notation"
    if name == "complex_arithmetic":
        return "complex" if "i" in answer else "real"
    if name in ("polynomial_equations", "prime_factorization"):
        return "several" if ("," in answer or "×" in answer) else "one"
    return "integer" if INTEGER.fullmatch(answer) else "decimal" if "." in answer else "fraction"


def _sympy(text: str):
    from sympy import Symbol
    from sympy.parsing.sympy_parser import parse_expr

    # Single letters are variables (and C the constant of integration); E and I stay sympy's constants.
    names = {ch: Symbol(ch) for ch in re.findall(r"\b[A-Za-z]\b", text) if ch not in "EI"}
    return parse_expr(text, local_dict=names)


def _latex(expr) -> str:
    from sympy import Symbol, latex

    c = Symbol("C")
    if c in expr.free_symbols:
        return latex(expr - c, inv_trig_style="full") + " + C"
    return latex(expr, inv_trig_style="full")


def _differs(gold, other, variable: str | None) -> bool:
    """Whether other - gold (its derivative, for antiderivatives) is nonzero at one of three points."""
    from sympy import Symbol, diff

    delta = other - gold
    if variable:
        delta = diff(delta, Symbol(variable))
    symbols = sorted(delta.free_symbols, key=str)
    for point in (0.37, 0.71, 1.43):
        try:
            value = complex(delta.subs({s: point + 0.13 * k for k, s in enumerate(symbols)}).evalf())
        except (TypeError, ValueError):
            continue
        if abs(value) > 1e-9:
            return True
    return False


def _sympy_pairs(name: str, item: dict, rng: random.Random) -> list[Pair]:
    raw, source = item["answer"], f"rg/{name}"
    gold = _sympy(raw)
    variable = item["metadata"].get("variable") if name in ANTIDERIVATIVES else None
    bad = []
    for wrong_name, scale in (("perturbed_number", False), ("scaled_number", True)):
        text = change_number(raw, rng, scale)
        if text and _differs(gold, _sympy(text), variable):
            bad.append((wrong_name, _latex(_sympy(text))))
    text = _latex(gold)
    pairs = answer_pairs(text, text, source, f"rg:{name}:latex", rng, RG_BUDGET, bad)
    style = rng.choice(pick_styles(text, 1, rng))
    pairs.append(Pair(raw, embed(style, text, rng), True, source, f"rg:{name}:sympy-gold", style, text))
    if bad:
        wrong_name, b = rng.choice(bad)
        pairs.append(Pair(raw, embed(style, b, rng), False, source, f"rg:{name}:sympy-gold:wrong", style, b))
    return pairs


def rg_pairs(seed: int) -> Iterator[Pair]:
    import reasoning_gym

    for name, size in RG_DATASETS.items():
        for i, item in enumerate(reasoning_gym.create_dataset(name, size=size, seed=seed)):
            rng = random.Random(f"{seed}:{name}:{i}")
            raw = item["answer"]
            if name in SYMPY_ANSWERS:
                if "Integral" not in raw:
                    yield from _sympy_pairs(name, item, rng)
                continue
            kind = f"rg:{name}:{_rg_form(name, item)}"
            yield from answer_pairs(raw, answer_of(raw), f"rg/{name}", kind, rng, RG_BUDGET)


def all_pairs(seed: int) -> list[Pair]:
    return [*dataset_pairs(seed), *rg_pairs(seed)]
