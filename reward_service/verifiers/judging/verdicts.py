"""Verdict parsers: a judge's reply text in, a verdict (a value in [0, 1]) out, or UnparseableVerdict.

Four kinds, each configured by a :class:`ParserSpec` (a template's ``parser:`` section):

- ``pairwise``: MT-Bench's ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (tie) -> 1.0 / 0.0 / 0.5, the preference
  for the answer shown first (A).
- ``score``: ``Score: N/10`` (the pattern and the scale are options) -> ``(N - min) / (max - min)``.
- ``yes_no``: a yes or a no word -> 1.0 / 0.0.
- ``json``: a JSON object in the reply; its ``key`` read as a number on the scale, a boolean, or a label
  (``labels`` maps each to a value: ``{"A": 1, "B": 0, "tie": 0.5}``).

When the reply holds several verdicts, the last one counts (judges reason first and conclude last).
A reply with none, or with a value off the scale, is unparseable: the task answers the rollout
JUDGE_UNPARSEABLE (unscored), never 0. Each kind whose verdicts are a closed set also lists them as
``choices`` (sent as guided choices, so a constrained judge can only answer one of them).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PARSER_KINDS = ("pairwise", "score", "yes_no", "json")
#: The preference for answer A that each pairwise label stands for.
PAIRWISE_VALUES = {"A": 1.0, "B": 0.0, "C": 0.5}
DEFAULT_SCORE_PATTERN = r"score\s*[:=]\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*\d+(?:\.\d+)?)?"
#: Most characters of a reply quoted in an unparseable verdict's reason.
QUOTE_CHARS = 200


class UnparseableVerdict(ValueError):
    """The judge's reply holds no verdict the parser can read (or one off its scale)."""


class InvalidParserSpec(ValueError):
    """A parser configuration that cannot work (unknown kind, bad option); the message says which."""


@dataclass(frozen=True)
class Verdict:
    """A parsed verdict: ``value`` in [0, 1] and the ``label`` it was read from (``"A"``, ``"7"``, ``"yes"``)."""

    value: float
    label: str


@dataclass(frozen=True)
class ParserSpec:
    """How to read a verdict: ``kind`` (one of PARSER_KINDS) and its options.

    Options by kind: ``score``: ``pattern`` (a regex whose group 1 is the number; case-insensitive),
    ``min``, ``max`` (the scale, default 0..10); ``yes_no``: ``yes``, ``no`` (the words, lists);
    ``json``: ``key``, and ``min``/``max`` for a number or ``labels`` for a string; ``pairwise``:
    ``labels`` (``{"A": "[[A]]", "B": "[[B]]", "C": "[[C]]"}``; drop ``C`` to allow no tie).
    """

    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, value: Any) -> ParserSpec:
        """From a template's ``parser:`` mapping (``{"kind": ..., <options>}``)."""
        if isinstance(value, ParserSpec):
            return value
        if not isinstance(value, Mapping) or not isinstance(value.get("kind"), str):
            raise InvalidParserSpec(f"a parser must be a mapping with a 'kind' (one of {PARSER_KINDS}), got {value!r}")
        spec = cls(value["kind"], {k: v for k, v in value.items() if k != "kind"})
        build_parser(spec)  # fails now, not on the first reply
        return spec

    def to_config(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.options}


class VerdictParser:
    """Reads one kind of verdict; ``choices`` are its closed set of canonical replies (empty: open)."""

    choices: tuple[str, ...] = ()

    def parse(self, text: str) -> Verdict:
        raise NotImplementedError


def _unparseable(what: str, text: str) -> UnparseableVerdict:
    shown = text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "..."
    return UnparseableVerdict(f"no {what} in the judge's reply {shown!r}")


def _number(options: Mapping[str, Any], name: str, default: float) -> float:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidParserSpec(f"parser option {name!r} must be a finite number, got {value!r}")
    return float(value)


def _words(options: Mapping[str, Any], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = options.get(name, default)
    value = (value,) if isinstance(value, str) else value
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(w, str) and w.strip() for w in value):
        raise InvalidParserSpec(f"parser option {name!r} must be a non-empty list of words, got {value!r}")
    return tuple(w.strip().lower() for w in value)


class PairwiseParser(VerdictParser):
    """``[[A]]`` / ``[[B]]`` / ``[[C]]``: the last label in the reply."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        labels = options.get("labels", {"A": "[[A]]", "B": "[[B]]", "C": "[[C]]"})
        if not isinstance(labels, Mapping) or not {"A", "B"} <= set(labels) or not set(labels) <= {"A", "B", "C"} \
                or not all(isinstance(v, str) and v for v in labels.values()):
            raise InvalidParserSpec(f"pairwise parser 'labels' must map A, B (and C, a tie) to strings, got {labels!r}")
        self._labels = dict(labels)
        self.choices = tuple(self._labels.values())
        self._pattern = re.compile("|".join(re.escape(v) for v in sorted(self.choices, key=len, reverse=True)))
        self._by_text = {v: k for k, v in self._labels.items()}

    def parse(self, text: str) -> Verdict:
        found = self._pattern.findall(text)
        if not found:
            raise _unparseable(f"verdict ({' / '.join(self.choices)})", text)
        label = self._by_text[found[-1]]
        return Verdict(PAIRWISE_VALUES[label], label)


def _on_scale(number: float, low: float, high: float, text: str) -> float:
    if not low <= number <= high:
        raise UnparseableVerdict(f"the judge's score {number:g} is off the scale {low:g}..{high:g} "
                                 f"(reply {text[:QUOTE_CHARS]!r})")
    return (number - low) / (high - low)


class ScoreParser(VerdictParser):
    """``Score: N/10``: the last match of ``pattern``, scaled from ``min``..``max`` to 0..1."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._low, self._high = _number(options, "min", 0), _number(options, "max", 10)
        if self._high <= self._low:
            raise InvalidParserSpec(f"score parser: max {self._high:g} must be above min {self._low:g}")
        pattern = options.get("pattern", DEFAULT_SCORE_PATTERN)
        try:
            self._pattern = re.compile(pattern, re.IGNORECASE)
        except (re.error, TypeError) as exc:
            raise InvalidParserSpec(f"score parser 'pattern' {pattern!r} is not a regular expression: {exc}") from None
        if self._pattern.groups < 1:
            raise InvalidParserSpec(f"score parser 'pattern' {pattern!r} needs a group capturing the number")
        integers = self._low.is_integer() and self._high.is_integer() and self._high - self._low <= 100
        template = options.get("choice_format", "Score: {n}/" + f"{self._high:g}")
        if not isinstance(template, str) or "{n}" not in template:
            raise InvalidParserSpec(f"score parser 'choice_format' must contain '{{n}}', got {template!r}")
        self.choices = tuple(template.replace("{n}", str(n)) for n in range(int(self._low), int(self._high) + 1)) \
            if integers else ()

    def parse(self, text: str) -> Verdict:
        found = self._pattern.findall(text)
        if not found:
            raise _unparseable("score", text)
        last = found[-1][0] if isinstance(found[-1], tuple) else found[-1]
        try:
            number = float(last)
        except ValueError:
            raise _unparseable("numeric score", text) from None
        return Verdict(_on_scale(number, self._low, self._high, text), f"{number:g}")


class YesNoParser(VerdictParser):
    """A yes word -> 1, a no word -> 0: the last one in the reply (whole words, any case)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._yes, self._no = _words(options, "yes", ("yes",)), _words(options, "no", ("no",))
        if set(self._yes) & set(self._no):
            raise InvalidParserSpec(f"yes_no parser: {sorted(set(self._yes) & set(self._no))} are both yes and no")
        words = sorted(self._yes + self._no, key=len, reverse=True)
        self._pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(w) for w in words) + r")(?![\w-])",
                                   re.IGNORECASE)
        self.choices = (self._yes[0], self._no[0])

    def parse(self, text: str) -> Verdict:
        found = self._pattern.findall(text)
        if not found:
            raise _unparseable(f"{self._yes[0]}/{self._no[0]} verdict", text)
        word = found[-1].lower()
        return Verdict(1.0 if word in self._yes else 0.0, word)


def _json_objects(text: str) -> list[Any]:
    """Every JSON value that starts at a ``{`` of ``text`` and parses, in order (nested ones too)."""
    decoder = json.JSONDecoder()
    found = []
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        found.append(value)
    return found


class JsonParser(VerdictParser):
    """The last JSON object in the reply that has ``key``: a number on the scale, a boolean, or a label."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._key = options.get("key", "score")
        if not isinstance(self._key, str) or not self._key:
            raise InvalidParserSpec(f"json parser 'key' must be a non-empty string, got {self._key!r}")
        self._low, self._high = _number(options, "min", 0), _number(options, "max", 10)
        if self._high <= self._low:
            raise InvalidParserSpec(f"json parser: max {self._high:g} must be above min {self._low:g}")
        labels = options.get("labels", {})
        if not isinstance(labels, Mapping) or not all(
                isinstance(k, str) and not isinstance(v, bool) and isinstance(v, (int, float)) and 0 <= v <= 1
                for k, v in labels.items()):
            raise InvalidParserSpec(f"json parser 'labels' must map strings to values in [0, 1], got {labels!r}")
        self._labels = {k: float(v) for k, v in labels.items()}
        self.choices = tuple(json.dumps({self._key: k}) for k in self._labels)

    def parse(self, text: str) -> Verdict:
        candidates = [v for v in _json_objects(text) if isinstance(v, dict) and self._key in v]
        if not candidates:
            raise _unparseable(f"JSON object with {self._key!r}", text)
        value = candidates[-1][self._key]
        if isinstance(value, bool):
            return Verdict(1.0 if value else 0.0, str(value).lower())
        if isinstance(value, (int, float)) and math.isfinite(value):
            return Verdict(_on_scale(float(value), self._low, self._high, text), f"{value:g}")
        if isinstance(value, str) and value in self._labels:
            return Verdict(self._labels[value], value)
        raise UnparseableVerdict(f"the judge's {self._key!r} is {value!r}: not a number on {self._low:g}.."
                                 f"{self._high:g}, a boolean, or one of {sorted(self._labels)}")


_PARSERS = {"pairwise": PairwiseParser, "score": ScoreParser, "yes_no": YesNoParser, "json": JsonParser}


def build_parser(spec: ParserSpec) -> VerdictParser:
    """The parser ``spec`` describes; raises InvalidParserSpec for an unknown kind or a bad option."""
    cls = _PARSERS.get(spec.kind)
    if cls is None:
        raise InvalidParserSpec(f"unknown parser kind {spec.kind!r}; known: {list(PARSER_KINDS)}")
    return cls(spec.options)


def parse_verdict(spec: ParserSpec, text: str) -> Verdict:
    """Reads ``text`` with the parser ``spec`` describes (raises UnparseableVerdict)."""
    return build_parser(spec).parse(text)
