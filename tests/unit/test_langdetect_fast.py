"""``langdetect_fast`` answers exactly what langdetect's own detector answers: the same language and
the same probabilities, bit for bit, on the same profiles and seed."""

from __future__ import annotations

import functools
import random

import pytest

pytest.importorskip("numpy")

from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory  # noqa: E402
from langdetect.lang_detect_exception import LangDetectException  # noqa: E402

from reward_service.tasks.langdetect_fast import FastDetector, _Draws  # noqa: E402

TEXTS = [
    "The quick brown fox jumps over the lazy dog, and NASA said so in the USA.",
    "Bonjour tout le monde, je suis très content de vous voir aujourd'hui.",
    "Hola, ¿cómo estás? Muy bien, gracias por preguntar.",
    "Dies ist ein deutscher Satz über Hunde, Katzen und Straßen.",
    "这是一个中文句子，关于猫和狗。", "これは日本語の文章です。カタカナもあります", "안녕하세요 여러분 반갑습니다",
    "Это предложение на русском языке.", "مرحبا بالعالم یک", "Xin chào thế giới, tôi là người Việt Nam",
    "Șapte țări în România", "Γειά σου κόσμε", "שלום עולם", "नमस्ते दुनिया", "ok", "ABC DEF GHI JKL",
    "Visit http://example.com/a?b=c or write to someone@example.org today please",
    "MiXeD CaSe WoRdS and ALLCAPS words Here", "word " * 3000, "mot " * 2600 + "Wort " * 10,
]


@functools.cache
def _factory() -> DetectorFactory:
    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    factory.seed = 0
    return factory


def _theirs(text: str) -> tuple[str, list[float]] | None:
    detector = _factory().create()
    detector.append(text)
    try:
        return detector.detect(), detector.langprob
    except LangDetectException:
        return None


def _ours(text: str) -> tuple[str, list[float]] | None:
    fast = _fast()
    ngrams = fast.ngrams(fast.prepared(text))
    if not ngrams:
        with pytest.raises(LangDetectException):
            fast.detect(text)
        return None
    return fast.detect(text), fast.probabilities(ngrams, 0)


@functools.cache
def _fast() -> FastDetector:
    return FastDetector(_factory())


def _random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ éèàçñüößøåæ ,.!?-\n ЖжФфДд 中文字 ひらがな カタカナ ١٢ ạảấ"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300))) for _ in range(n)]


@pytest.mark.parametrize("text", TEXTS + _random_texts(60, 7))
def test_the_language_and_probabilities_equal_langdetects(text: str) -> None:
    assert _ours(text) == _theirs(text)


def test_text_with_no_features_raises_as_langdetect_does() -> None:
    for text in ("", "   ", "123 456 !!", "http://example.com"):
        assert _theirs(text) is None and _ours(text) is None


def test_bulk_draws_are_the_choices_and_leave_the_generator_where_choice_would() -> None:
    np = pytest.importorskip("numpy")
    for n in (1, 2, 3, 7, 100, 1000, 70001):
        ours, theirs = random.Random(n), random.Random(n)
        draws = _Draws(ours, n, np)
        taken = [int(x) for x in draws.take(1)] + [int(x) for k in range(300) for x in draws.take(5)]
        draws.settle()
        assert taken == [theirs.choice(range(n)) for _ in range(len(taken))]
        assert ours.random() == theirs.random()
