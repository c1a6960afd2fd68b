"""``langdetect_fast`` answers exactly what langdetect's own detector answers: the same language and
the same probabilities, bit for bit, on the same profiles and seed."""

from __future__ import annotations

import functools
import random

import pytest

pytest.importorskip("numpy")

from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory  # noqa: E402
from langdetect.lang_detect_exception import LangDetectException  # noqa: E402

from reward_service.tasks.langdetect_fast import FastDetector, _Stream  # noqa: E402

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


def test_the_stream_gives_the_generators_own_choices_and_gaussians_in_order() -> None:
    np = pytest.importorskip("numpy")
    openings: dict[int, object] = {}
    for n in (1, 2, 3, 7, 100, 1000, 70001, 8, 70002):  # seeds 0-2 reused: later streams start from kept words
        stream, theirs = _Stream(n % 3, n, np, openings), random.Random(n % 3)
        ours, expected = [], []
        for step in range(40):  # gaussians between runs of choices, runs of every length, some drawn twice
            ours.append(stream.gauss())
            expected.append(theirs.gauss(0.0, 1.0))
            looked = stream.choices(step * 37 % 300 + 1)
            used = step * 11 % len(looked) + 1
            stream.consume(used)
            ours.extend(int(x) for x in looked[:used])
            expected.extend(theirs.choice(range(n)) for _ in range(used))
        assert ours == expected


def test_long_texts_the_language_and_probabilities_equal_langdetects() -> None:
    """Paragraphs like the bench's (several hundred words, several trials past the first step of draws)."""
    rng = random.Random(3)
    words = "the cat sat on a mat while NASA and the USA le chat est sur la table der Hund".split()
    for _ in range(8):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(50, 400)))
        assert _ours(text) == _theirs(text)


@pytest.mark.parametrize("step", [6, 7, 11])
def test_draws_gathered_a_few_at_a_time_give_the_same_answer(step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import reward_service.tasks.langdetect_fast as fast

    monkeypatch.setattr(fast, "DRAWS_PER_STEP", step)
    for text in TEXTS[:14] + _random_texts(10, 11):
        assert _ours(text) == _theirs(text)


def test_answers_kept_per_ngram_sequence_are_langdetects_for_each_text() -> None:
    """IFEval's loose variants (first or last line dropped, ``*`` removed) often share an n-gram sequence
    and so an answer, worked out once; each text's answer is still langdetect's own."""
    from bench.bench_tasks_instructions import make_rows
    from reward_service.verifiers.instructions.grading import response_variants

    fast = FastDetector(_factory())
    worked: list[int] = []
    probabilities = fast.probabilities
    fast.probabilities = lambda ngrams, *rest, **options: (  # type: ignore
        worked.append(1) or probabilities(ngrams, *rest, **options))
    texts = 0
    for _, response in make_rows(12, 5):
        variants = {text for text in response_variants(response, "loose") if _theirs(text) is not None}
        texts += len(variants)
        for text in variants:
            assert fast.detect(text) == _theirs(text)[0]
    assert 0 < len(worked) < texts


def test_stopping_once_the_language_is_decided_keeps_langdetects_answer_on_close_calls() -> None:
    """Texts mixing two or three languages, where trials disagree: detection stops before the seventh trial
    only when the trials left cannot change the answer (both happen here), and answers langdetect's language."""
    vocabulary = ["the cat and the dog went home with their friends today".split(),
                  "le chat et le chien sont rentrés avec leurs amis aujourd'hui".split(),
                  "der Hund und die Katze gingen heute mit ihren Freunden".split(),
                  "el gato y el perro fueron a casa con sus amigos hoy".split(),
                  "il gatto e il cane sono tornati a casa con gli amici oggi".split()]
    rng = random.Random(9)
    fast = FastDetector(_factory())
    trials: list[int] = []
    run_trial = fast._trial
    fast._trial = lambda *args: trials.append(1) or run_trial(*args)  # type: ignore[method-assign]
    stopped_early = ran_all = 0
    for _ in range(60):
        languages = rng.sample(vocabulary, rng.randint(2, 3))
        text = " ".join(rng.choice(rng.choice(languages)) for _ in range(rng.randint(3, 40)))
        trials.clear()
        assert fast.detect(text) == _theirs(text)[0]
        stopped_early += len(trials) < 7
        ran_all += len(trials) == 7
    assert stopped_early and ran_all
