"""Verdict parsers (reward_service/verifiers/judging/verdicts.py): each kind reads its verdicts, the last
one wins, and a reply without one is unparseable (never a default of 0)."""

from __future__ import annotations

import pytest

from reward_service.verifiers.judging import InvalidParserSpec, ParserSpec, UnparseableVerdict, build_parser


def parse(kind: str, text: str, **options: object) -> tuple[float, str]:
    verdict = build_parser(ParserSpec(kind, options)).parse(text)
    return verdict.value, verdict.label


@pytest.mark.parametrize("text, expected", [("[[A]]", (1.0, "A")), ("[[B]]", (0.0, "B")), ("[[C]]", (0.5, "C")),
                                             ("A looks right at first... final verdict: [[B]]", (0.0, "B"))])
def test_pairwise_reads_mt_bench_labels(text: str, expected: tuple[float, str]) -> None:
    assert parse("pairwise", text) == expected


def test_pairwise_last_label_wins_when_the_judge_changes_its_mind() -> None:
    assert parse("pairwise", "At first [[A]], but on reflection [[B]]") == (0.0, "B")


@pytest.mark.parametrize("text", ["A is better", "[A]", "[[D]]", "", "zorb flim quux"])
def test_pairwise_without_a_label_is_unparseable(text: str) -> None:
    with pytest.raises(UnparseableVerdict):
        parse("pairwise", text)


def test_pairwise_without_tie_label_offers_two_choices() -> None:
    parser = build_parser(ParserSpec("pairwise", {"labels": {"A": "A wins", "B": "B wins"}}))
    assert parser.choices == ("A wins", "B wins")
    with pytest.raises(UnparseableVerdict):
        parser.parse("[[C]]")


@pytest.mark.parametrize("text, value", [("Score: 7/10", 0.7), ("score=10", 1.0), ("SCORE: 0 / 10", 0.0),
                                         ("Score: 3/10 ... revised Score: 8/10", 0.8), ("Score: 2.5/10", 0.25)])
def test_score_scales_the_last_score_to_0_1(text: str, value: float) -> None:
    assert parse("score", text)[0] == pytest.approx(value)


def test_score_on_a_1_to_5_scale() -> None:
    assert parse("score", "Score: 4/5", min=1, max=5)[0] == pytest.approx(0.75)


@pytest.mark.parametrize("text", ["Score: 11/10", "Score: -1/10", "I rate it highly", "Score: N/10"])
def test_score_off_the_scale_or_missing_is_unparseable(text: str) -> None:
    with pytest.raises(UnparseableVerdict):
        parse("score", text)


def test_score_choices_are_every_integer_of_the_scale() -> None:
    parser = build_parser(ParserSpec("score", {"min": 0, "max": 3}))
    assert parser.choices == ("Score: 0/3", "Score: 1/3", "Score: 2/3", "Score: 3/3")
    assert [parser.parse(c).value for c in parser.choices] == pytest.approx([0, 1 / 3, 2 / 3, 1])


@pytest.mark.parametrize("text, value", [("yes", 1.0), ("No.", 0.0), ("YES", 1.0), ("Hmm, no... actually yes", 1.0)])
def test_yes_no_reads_the_last_word(text: str, value: float) -> None:
    assert parse("yes_no", text)[0] == value


@pytest.mark.parametrize("text", ["yesterday", "nobody knows", "maybe", "non-answer"])
def test_yes_no_needs_whole_words(text: str) -> None:
    with pytest.raises(UnparseableVerdict):
        parse("yes_no", text)


def test_yes_no_custom_words() -> None:
    assert parse("yes_no", "EQUIVALENT", yes=["equivalent", "same"], no=["different"])[0] == 1.0
    assert parse("yes_no", "they are different", yes=["equivalent"], no=["different"])[0] == 0.0


@pytest.mark.parametrize("text, value", [('{"score": 6}', 0.6), ('reasoning... {"score": 9, "why": "ok"}', 0.9),
                                         ('{"score": 2} then {"score": 4}', 0.4), ('{"score": true}', 1.0)])
def test_json_number_or_boolean(text: str, value: float) -> None:
    assert parse("json", text)[0] == pytest.approx(value)


def test_json_labels() -> None:
    spec = {"key": "winner", "labels": {"A": 1, "B": 0, "tie": 0.5}}
    assert parse("json", '{"winner": "tie"}', **spec) == (0.5, "tie")
    assert build_parser(ParserSpec("json", spec)).choices == ('{"winner": "A"}', '{"winner": "B"}', '{"winner": "tie"}')


@pytest.mark.parametrize("text", ['{"score": "high"}', '{"grade": 5}', "score 5", '{"score": 50}', "{not json"])
def test_json_without_a_readable_value_is_unparseable(text: str) -> None:
    with pytest.raises(UnparseableVerdict):
        parse("json", text)


@pytest.mark.parametrize("spec", [
    {"kind": "vibes"}, {"kind": "score", "max": 0}, {"kind": "score", "pattern": "(["},
    {"kind": "score", "pattern": "Score"}, {"kind": "yes_no", "yes": ["ok"], "no": ["ok"]},
    {"kind": "pairwise", "labels": {"A": "x"}}, {"no": "kind"}])
def test_bad_parser_specs_are_refused_when_configured(spec: dict) -> None:
    with pytest.raises(InvalidParserSpec):
        ParserSpec.from_config(spec)
