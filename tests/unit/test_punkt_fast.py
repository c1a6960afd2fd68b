"""``punkt_fast``'s sentences are nltk's own Punkt sentences (same parameters), text for text: on the bench
corpus and every loose variant of it, and on texts full of the cases Punkt decides by context."""

from __future__ import annotations

import random
from collections import defaultdict

from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

from bench.bench_tasks_instructions import make_rows
from reward_service.tasks.instructions_nlp import split_sentences
from reward_service.verifiers.instructions.grading import response_variants

PIECES = ("Dr. Smith", " said", " so.", " The U.S.A. team", " won!", " (Really?)", " \"Yes.\"", " e.g.", " 5 p.m.",
          " Jan. 3rd", "\n\n", "\t", " ", "...", " etc.", " Mr.", " NASA.", " ok?!", " it.)", " 3.14", " No.", "\r\n")


def nltk_punkt() -> PunktSentenceTokenizer:
    import punkt.data.english as model

    params = PunktParameters()
    params.abbrev_types = set(model.ABBREV_TYPES)
    params.collocations = set(model.COLLOCATIONS)
    params.sent_starters = set(model.SENT_STARTERS)
    params.ortho_context = defaultdict(int, model.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


def test_the_sentences_are_nltks_on_the_bench_corpus_its_variants_and_context_heavy_texts() -> None:
    reference = nltk_punkt()
    texts = {variant for _, response in make_rows(150, 0) for variant in response_variants(response, "loose")}
    rng = random.Random(4)
    texts |= {"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40))) for _ in range(400)}
    assert [t for t in sorted(texts) if split_sentences(t) != reference.tokenize(t)] == []
