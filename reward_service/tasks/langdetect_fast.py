"""langdetect's ``Detector.detect``, the same answer, several times faster.

IFEval's ``language:response_language`` asks langdetect (seeded) which language a response is in, and
its pure-Python loops were most of IFEval's verification time. This runs the same algorithm on the
same profiles with the same random draws, so the answer is langdetect's own:

- the text is prepared as ``Detector.append`` and ``cleaning_text`` prepare it (their URL and e-mail
  patterns, Vietnamese normalisation, runs of spaces collapsed, at most ``max_text_length`` characters;
  ``cleaning_text`` itself for a text that is not ASCII);
- n-grams are extracted as ``Detector._extract_ngrams`` extracts them, but a word at a time: its
  n-gram buffer and capital-word flag restart after every (normalised) space, so a word's n-grams
  depend on the word alone and are kept per word; characters are normalised by ``NGram.normalize``;
- the seven trials draw from a ``random.Random`` seeded as the detector's is, in the same order
  (``gauss`` per trial, ``choice`` per update), and update the probabilities in the same order with
  the same IEEE operations (numpy arrays, elementwise: ``prob *= weight + p(word)``; the sum for
  normalising is Python's own ``sum`` over the values, as langdetect's).

Without numpy, langdetect's own detector runs (the same answer, slower).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from langdetect.detector import Detector
from langdetect.detector_factory import DetectorFactory
from langdetect.lang_detect_exception import LangDetectException
from langdetect.utils.ngram import NGram

#: Words whose n-grams are kept (a bounded cache: cleared when full).
MAX_CACHED_WORDS = 200_000
_SPACES = re.compile(" +")


class _Normaliser(dict):
    """``str.translate`` table that fills itself with ``NGram.normalize`` (character -> character)."""

    def __missing__(self, code: int) -> str:
        value = NGram.normalize(chr(code))
        self[code] = value
        return value


class _Draws:
    """``rng.choice`` over ``n`` items, drawn in bulk: the same indices as that many ``choice`` calls.

    ``choice`` takes ``getrandbits(k)`` (``k = n.bit_length()``: the top ``k`` bits of the generator's
    next 32-bit word) until one is below ``n``; ``getrandbits(32 * m)`` hands out the next ``m`` words
    at once (the first one least significant). ``settle`` puts the generator where the ``choice`` calls
    would have left it: at its state before, advanced by the words the taken draws used.
    """

    CHUNK = 512

    def __init__(self, rng: random.Random, n: int, np: Any) -> None:
        self._rng, self._n, self._np = rng, n, np
        self._state = rng.getstate()
        self._shift = 32 - n.bit_length()
        self._values = np.empty(0, dtype=np.uint32)
        self._ends = np.empty(0, dtype=np.int64)   # words used up to and including each accepted draw
        self._words = 0
        self._taken = 0

    def _more(self) -> None:
        np = self._np
        words = np.frombuffer(self._rng.getrandbits(32 * self.CHUNK).to_bytes(4 * self.CHUNK, "little"),
                              dtype="<u4") >> np.uint32(self._shift)
        accepted = np.nonzero(words < self._n)[0]
        self._values = np.concatenate((self._values, words[accepted]))
        self._ends = np.concatenate((self._ends, accepted + self._words + 1))
        self._words += self.CHUNK

    def take(self, count: int) -> Any:
        while len(self._values) < self._taken + count:
            self._more()
        self._taken += count
        return self._values[self._taken - count:self._taken]

    def settle(self) -> None:
        self._rng.setstate(self._state)
        if self._taken:
            self._rng.getrandbits(32 * int(self._ends[self._taken - 1]))


def word_ngrams(word: str, trailing_space: bool, known: Any) -> tuple[str, ...]:
    """The n-grams ``Detector._extract_ngrams`` emits for one normalised word (no spaces), from the
    space before it through the space after it (``trailing_space``), keeping those in ``known``."""
    out = []
    grams, capital = " ", False
    for ch in word + " " if trailing_space else word:
        last = grams[-1]
        if last == " ":
            grams, capital = " ", False
        elif len(grams) >= NGram.N_GRAM:
            grams = grams[1:]
        grams += ch
        if ch.isupper():
            if last.isupper():
                capital = True
        else:
            capital = False
        if capital:
            continue
        for n in (1, 2, 3):
            if len(grams) < n:
                break
            w = grams[-n:]
            if w != " " and w in known:
                out.append(w)
    return tuple(out)


class FastDetector:
    """``detect(text)``: langdetect's language for ``text`` with ``factory``'s profiles and seed."""

    def __init__(self, factory: DetectorFactory) -> None:
        import numpy

        self._np = numpy
        self._factory = factory
        self._map = factory.word_lang_prob_map
        #: Every profile n-gram's row: its probability per language (built once, ~40 MB).
        self._index = {w: k for k, w in enumerate(self._map)}
        self._table = numpy.array(list(self._map.values()), dtype=numpy.float64)
        self._words: dict[tuple[str, bool], tuple[int, ...]] = {}
        self._normalise = _Normaliser()
        self._size = len(factory.langlist)

    def prepared(self, text: str) -> str:
        """The text as langdetect's detector holds it after ``append`` and ``cleaning_text``."""
        text = Detector.URL_RE.sub(" ", text)
        text = Detector.MAIL_RE.sub(" ", text)
        text = NGram.normalize_vi(text)
        text = _SPACES.sub(" ", text[:Detector(self._factory).max_text_length])
        if text.isascii():
            return text  # no non-Latin character: cleaning_text keeps it as it is
        detector = self._factory.create()
        detector.text = text
        detector.cleaning_text()
        return detector.text

    def ngrams(self, text: str) -> list[int]:
        """``Detector._extract_ngrams`` of a prepared text, each n-gram as its row in the profile table."""
        pieces = text.translate(self._normalise).split(" ")
        if len(self._words) > MAX_CACHED_WORDS:
            self._words.clear()
        out: list[int] = []
        last = len(pieces) - 1
        for i, word in enumerate(pieces):
            if word:
                key = (word, i < last)
                found = self._words.get(key)
                if found is None:
                    index = self._index
                    found = self._words[key] = tuple(index[w] for w in word_ngrams(word, i < last, index))
                out.extend(found)
        return out

    def probabilities(self, ngrams: Sequence[int], seed: int | None,
                      alpha: float = Detector.ALPHA_DEFAULT) -> list[float]:
        """``Detector._detect_block``'s language probabilities for ``ngrams`` (rows of the profile table,
        non-empty)."""
        np = self._np
        unique, ids = np.unique(np.array(ngrams), return_inverse=True)
        table = self._table[unique]
        rng = random.Random()
        rng.seed(seed)
        size = self._size
        langprob = np.zeros(size)
        for _ in range(7):  # Detector.n_trial
            prob = np.full(size, 1.0 / size)
            weighted = table + (alpha + rng.gauss(0.0, 1.0) * Detector.ALPHA_WIDTH) / Detector.BASE_FREQ
            draws = _Draws(rng, len(ids), np)
            prob *= weighted[ids[draws.take(1)[0]]]
            i = 0
            while not self._converged(prob) and i < Detector.ITERATION_LIMIT:
                block = weighted[ids[draws.take(5)]]
                block[0] *= prob
                prob = np.multiply.accumulate(block, axis=0)[-1]
                i += 5
            draws.settle()
            langprob += prob / 7
        return langprob.tolist()

    @staticmethod
    def _converged(prob: Any) -> bool:
        """``Detector._normalize_prob`` (in place) > ``CONV_THRESHOLD``. Its maximum is the largest value
        divided by the sum: dividing by a positive number keeps the order, rounding included."""
        values = prob.tolist()
        total = sum(values)
        prob /= total
        return max(values) / total > Detector.CONV_THRESHOLD

    def detect(self, text: str) -> str:
        """langdetect's ``detect``: the most probable language, ``"unknown"`` when none passes its
        threshold; raises LangDetectException when the text has no features."""
        ngrams = self.ngrams(self.prepared(text))
        if not ngrams:
            raise LangDetectException(0, "No features in text.")
        detector = self._factory.create()
        ranked = detector._sort_probability(self.probabilities(ngrams, detector.seed, detector.alpha))
        return ranked[0].lang if ranked else Detector.UNKNOWN_LANG


def language_detector(factory: DetectorFactory) -> Callable[[str], str]:
    """``FastDetector(factory).detect``, or langdetect's own detector when numpy is missing."""
    try:
        return FastDetector(factory).detect
    except ImportError:
        def detect(text: str) -> str:
            detector = factory.create()
            detector.append(text)
            return detector.detect()
        return detect
