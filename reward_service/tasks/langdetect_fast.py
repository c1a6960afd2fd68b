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
- the seven trials take the same draws from a ``random.Random`` seeded as the detector's is, in the
  same order (``gauss`` per trial, ``choice`` per update), worked out from its 32-bit words read in
  bulk; they update the probabilities with the same IEEE operations in the same order (numpy arrays,
  elementwise: ``prob *= weight + p(word)`` row after row; the sum for normalising added left to
  right as Python's ``sum`` of floats adds up to 3.11, and by ``sum`` itself from 3.12, which
  compensates);
- the answer is kept for the last few n-gram sequences: it depends on nothing else;
- ``detect`` stops after the trial that leaves the leading language ahead of every other by more than
  the trials left could add (each at most 1/7 to one language): the first language cannot change.

Without numpy, langdetect's own detector runs (the same answer, slower).
"""

from __future__ import annotations

import math
import random
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from langdetect.detector import Detector
from langdetect.detector_factory import DetectorFactory
from langdetect.lang_detect_exception import LangDetectException
from langdetect.utils.ngram import NGram

#: Words whose n-grams are kept (a bounded cache: cleared when full).
MAX_CACHED_WORDS = 200_000
#: N-gram sequences whose language is kept: enough for the texts of the response being graded (IFEval's
#: eight loose variants of it), cleared when full.
MAX_CACHED_TEXTS = 16
#: Runs of two or more spaces (collapsed to one; a lone space needs no replacing, and is not looked at).
_SPACES = re.compile("  +")
TWOPI = 2.0 * math.pi
#: Generator words fetched at once (a paragraph's seven trials use several hundred).
WORDS_PER_FETCH = 1024
#: Draws gathered per step of a trial (a trial on a paragraph takes ~55 draws, nine in ten under ~90).
DRAWS_PER_STEP = 96
#: Python's ``sum`` of floats adds them in order up to 3.11 (as ``cumsum`` does); 3.12 compensates.
_SEQUENTIAL_SUM = sys.version_info < (3, 12)


#: ``Detector.n_trial``: trials whose normalised probabilities are averaged.
N_TRIAL = 7
#: Room for the rounding of the sums (each of 7 terms at most 1/7, a few ulps each) when telling that the
#: remaining trials cannot change the most probable language.
DECIDED_MARGIN = 1e-9


def _lead(np: Any, langprob: Any) -> float:
    """How far the largest value of ``langprob`` is ahead of the next one."""
    second, first = np.partition(langprob, -2)[-2:]
    return float(first - second)


class _Normaliser(dict):
    """``str.translate`` table that fills itself with ``NGram.normalize`` (character -> character)."""

    def __missing__(self, code: int) -> str:
        value = NGram.normalize(chr(code))
        self[code] = value
        return value


class _Stream:
    """A seeded ``random.Random``'s draws, read ahead in bulk: ``choice`` over ``n`` items and ``gauss()``,
    the same values in the same order as the generator's own methods would give.

    The generator's 32-bit words are fetched at once (``getrandbits(32 * m)`` hands out the next ``m``
    words, the first one least significant). ``choice`` takes ``getrandbits(k)`` (``k = n.bit_length()``:
    the top ``k`` bits of the next word) until one is below ``n``; ``random()`` takes two words
    (``(a >> 5) * 2**26 + (b >> 6)``, over ``2**53``); ``gauss`` is CPython's (two ``random()`` calls give
    two normals, the second kept for the next call).
    """

    def __init__(self, seed: Any, n: int, np: Any, openings: dict[int, Any] | None = None) -> None:
        """Draws of ``random.Random(seed)``; ``openings`` keeps each int seed's first words (the same
        every time), so a stream that needs no more than those never seeds a generator."""
        self._seed, self._rng, self._n, self._np = seed, None, n, np
        self._shift = np.uint32(32 - n.bit_length())
        self._words = np.empty(0, dtype=np.uint32)
        self._accepted = np.empty(0, dtype=np.int64)  # positions of the words that are draws below n
        self._position = 0  # the next unread word
        self._first = 0  # the draw the last ``choices`` started at
        self._gauss_next: float | None = None
        keep = openings is not None and type(seed) is int
        opening = openings.get(seed) if keep else None  # type: ignore[union-attr]
        if opening is None:
            self._more(WORDS_PER_FETCH)
            if keep:
                opening = openings[seed] = self._words  # type: ignore[index]
                opening.flags.writeable = False
        else:
            self._words = opening
            self._accepted = np.nonzero((opening >> self._shift) < n)[0]

    def _more(self, words: int) -> None:
        np = self._np
        if self._rng is None:  # seeded now, moved past the words already read
            self._rng = random.Random(self._seed)
            if len(self._words):
                self._rng.getrandbits(32 * len(self._words))
        fresh = np.frombuffer(self._rng.getrandbits(32 * words).to_bytes(4 * words, "little"), dtype="<u4")
        self._accepted = np.concatenate((self._accepted, np.nonzero((fresh >> self._shift) < self._n)[0]
                                         + len(self._words)))
        self._words = np.concatenate((self._words, fresh))

    def _random(self) -> float:
        while len(self._words) < self._position + 2:
            self._more(WORDS_PER_FETCH)
        a, b = self._words[self._position:self._position + 2].tolist()
        self._position += 2
        return ((a >> 5) * 67108864.0 + (b >> 6)) * (1.0 / 9007199254740992.0)

    def gauss(self) -> float:
        """``rng.gauss(0.0, 1.0)``."""
        z, self._gauss_next = self._gauss_next, None
        if z is None:
            x2pi = self._random() * TWOPI
            g2rad = math.sqrt(-2.0 * math.log(1.0 - self._random()))
            z = math.cos(x2pi) * g2rad
            self._gauss_next = math.sin(x2pi) * g2rad
        return 0.0 + z * 1.0

    def choices(self, count: int) -> Any:
        """The next ``count`` ``rng.choice(range(n))`` values (an array), not yet consumed: ``consume``
        says how many of them were used."""
        first = self._first = int(self._accepted.searchsorted(self._position))
        while len(self._accepted) < first + count:
            self._more(max(WORDS_PER_FETCH, 2 * (first + count - len(self._accepted))))
        return self._words[self._accepted[first:first + count]] >> self._shift

    def consume(self, used: int) -> None:
        """Move past the first ``used`` draws the last ``choices`` returned."""
        if used:
            self._position = int(self._accepted[self._first + used - 1]) + 1


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
        #: Each word's n-gram rows: words followed by a space, and (apart) a text's last word.
        self._words: dict[str, tuple[int, ...]] = {}
        self._last_words: dict[str, tuple[int, ...]] = {}
        self._normalise = _Normaliser()
        #: The same normalisation for ASCII text as a byte table (``bytes.translate``, far faster).
        self._ascii_normalise = bytes(ord(NGram.normalize(chr(code))) if code < 128 else code for code in range(256))
        self._size = len(factory.langlist)
        #: A detector of the factory's, for its settings and its ranking (creating one seeds a generator).
        self._detector = factory.create()
        self._sequential_sum = numpy.add.accumulate  # Python's sum of floats up to 3.11: left to right
        self._largest = numpy.maximum.reduce
        #: The answer per n-gram sequence (with the seed and alpha) of the last few texts: the draws depend
        #: on nothing else, and texts that differ only in what normalises to a space (IFEval's loose
        #: variants without their ``*``, say) have the same sequence.
        self._languages: dict[tuple[bytes, Any, float], str] = {}
        #: Each int seed's first generator words (``_Stream``).
        self._openings: dict[int, Any] = {}

    def prepared(self, text: str) -> str:
        """The text as langdetect's detector holds it after ``append`` and ``cleaning_text``."""
        if "://" in text:  # the patterns cannot match without their "://", "@" or a combining mark
            text = Detector.URL_RE.sub(" ", text)
        if "@" in text:
            text = Detector.MAIL_RE.sub(" ", text)
        if not text.isascii():
            text = NGram.normalize_vi(text)
        text = _SPACES.sub(" ", text[:self._detector.max_text_length])
        if text.isascii():
            return text  # no non-Latin character: cleaning_text keeps it as it is
        detector = self._factory.create()
        detector.text = text
        detector.cleaning_text()
        return detector.text

    def ngrams(self, text: str) -> list[int]:
        """``Detector._extract_ngrams`` of a prepared text, each n-gram as its row in the profile table."""
        if text.isascii():  # an ASCII character normalises to an ASCII one
            text = text.encode("ascii").translate(self._ascii_normalise).decode("ascii")
        else:
            text = text.translate(self._normalise)
        pieces = text.split(" ")
        words, index = self._words, self._index
        if len(words) + len(self._last_words) > MAX_CACHED_WORDS:
            words.clear()
            self._last_words.clear()
        out: list[int] = []
        last = pieces.pop()
        for word in pieces:
            if word:
                found = words.get(word)
                if found is None:
                    found = words[word] = tuple(index[w] for w in word_ngrams(word, True, index))
                out.extend(found)
        if last:
            found = self._last_words.get(last)
            if found is None:
                found = self._last_words[last] = tuple(index[w] for w in word_ngrams(last, False, index))
            out.extend(found)
        return out

    def probabilities(self, ngrams: Sequence[int] | Any, seed: int | None,
                      alpha: float = Detector.ALPHA_DEFAULT, until_decided: bool = False) -> list[float]:
        """``Detector._detect_block``'s language probabilities for ``ngrams`` (rows of the profile table,
        non-empty). ``until_decided``: stop after the trial that leaves the most probable language ahead of
        every other by more than the trials still to run could add (each adds at most ``1/7`` to one
        language): the sums so far, whose first language is the final one's, and over ``PROB_THRESHOLD``."""
        np = self._np
        ids = ngrams if isinstance(ngrams, np.ndarray) else np.fromiter(ngrams, dtype=np.intp, count=len(ngrams))
        stream = _Stream(seed, len(ids), np, self._openings)
        size = self._size
        langprob = np.zeros(size)
        start = np.full(size, 1.0 / size)
        for trial in range(N_TRIAL):
            weight = (alpha + stream.gauss() * Detector.ALPHA_WIDTH) / Detector.BASE_FREQ
            prob = self._trial(start, ids, weight, stream)
            langprob += prob / N_TRIAL
            left = N_TRIAL - 1 - trial
            if until_decided and 2 * left < N_TRIAL and _lead(np, langprob) > left / N_TRIAL + DECIDED_MARGIN:
                break
        return langprob.tolist()

    def _trial(self, start: Any, ids: Any, weight: float, stream: _Stream) -> Any:
        """One trial of ``_detect_block``: ``prob *= weight + p(ngram)`` for one drawn n-gram, then five
        at a time, normalised after each as ``_normalize_prob`` does, until the largest probability
        passes ``CONV_THRESHOLD`` or the count ``ITERATION_LIMIT``. The largest normalised value is the
        largest value divided by the sum: dividing by a positive number keeps the order, rounding included."""
        np, table = self._np, self._table
        product, total_of, largest = np.multiply.reduce, self._sequential_sum, self._largest
        threshold, limit, sequential = Detector.CONV_THRESHOLD, Detector.ITERATION_LIMIT, _SEQUENTIAL_SUM
        rows = table[ids[stream.choices(DRAWS_PER_STEP)]] + weight  # the same sum per element as langdetect's
        prob = start * rows[0]
        used, held, i = 1, 0, 0  # rows used; rows held that are not draws (the first, after a refill)
        available = len(rows)
        while True:
            prob /= total_of(prob)[-1] if sequential else sum(prob.tolist())  # a float64 either way
            if largest(prob) > threshold or i >= limit:
                break
            if used + 5 > available:
                stream.consume(used - held)
                rows = np.concatenate((rows[:1], table[ids[stream.choices(DRAWS_PER_STEP)]] + weight))
                used, held, available = 1, 1, len(rows)
            block = rows[used - 1:used + 5]  # a used row, overwritten with prob, then the next five draws
            block[0] = prob
            prob = product(block, axis=0)  # ((prob * w1) * w2) ...: row after row, in langdetect's order
            used += 5
            i += 5
        stream.consume(used - held)
        return prob

    def detect(self, text: str) -> str:
        """langdetect's ``detect``: the most probable language, ``"unknown"`` when none passes its
        threshold; raises LangDetectException when the text has no features."""
        ngrams = self.ngrams(self.prepared(text))
        if not ngrams:
            raise LangDetectException(0, "No features in text.")
        detector = self._detector
        ids = self._np.fromiter(ngrams, dtype=self._np.intp, count=len(ngrams))
        key = (ids.tobytes(), self._factory.seed, detector.alpha)
        language = self._languages.get(key)
        if language is None:
            ranked = detector._sort_probability(self.probabilities(ids, self._factory.seed, detector.alpha,
                                                                   until_decided=True))
            language = ranked[0].lang if ranked else Detector.UNKNOWN_LANG
            if len(self._languages) >= MAX_CACHED_TEXTS:
                self._languages.clear()
            self._languages[key] = language
        return language


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
