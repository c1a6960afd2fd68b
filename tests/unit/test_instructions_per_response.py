"""One response's tools (``per_response``) answer what the process's tools answer, each text done once."""

from __future__ import annotations

from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions.grading import response_variants
from reward_service.verifiers.instructions.text_tools import TextTools, per_response

RESPONSE = ("*Dear* Dr. Smith,\nI can't say it's done. The U.S. team -- and NASA -- said \"yes\" (twice)!\n\n"
            "P.S. See you at 5 p.m. on Jan. 3rd.\n***\nLast line, with *stars* and a word's end.")


def test_the_words_sentences_and_language_equal_the_process_tools_on_every_loose_variant() -> None:
    shared = per_response(ENGLISH_TOOLS)
    for text in response_variants(RESPONSE, "loose"):
        assert list(shared.word_tokenize(text)) == list(ENGLISH_TOOLS.word_tokenize(text))
        assert list(shared.split_sentences(text)) == list(ENGLISH_TOOLS.split_sentences(text))
        assert shared.detect_language(text) == ENGLISH_TOOLS.detect_language(text)


def test_each_text_and_sentence_is_worked_once() -> None:
    calls: list[str] = []

    def sentences(text: str) -> list[str]:
        calls.append(f"split {text}")
        return text.split(". ")

    def words(sentence: str) -> list[str]:
        calls.append(f"words {sentence}")
        return sentence.split()

    tools = TextTools(sentences, lambda t: [], lambda t: None, lambda w: 1, lambda t: False, sentence_words=words)
    shared = per_response(tools)
    assert shared.word_tokenize("a b. c d") == ["a", "b", "c", "d"]
    assert shared.word_tokenize("a b. c d") == ["a", "b", "c", "d"]
    assert shared.word_tokenize("c d. e") == ["c", "d", "e"]
    assert calls == ["split a b. c d", "words a b", "words c d", "split c d. e", "words e"]
