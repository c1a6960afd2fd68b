"""IFBench's ``custom:*`` constraints: each checks the answer to one fixed prompt (multiples of 7,
four multiple-choice questions, Africa's countries backwards, a reversed sentence, a 26-sentence
alphabet story, Europe's northern capitals, three CSV tables, Napoleon's battle dates). Rules as
allenai/IFBench's ``instructions.py``; where the reference raises on a response (an empty field,
a malformed CSV), the check answers "not followed". Their reference builders take any arguments
and ignore them, and so do ours.
"""

from __future__ import annotations

import csv
import io
import re
import string
import unicodedata

from reward_service.verifiers.instructions.args import Args
from reward_service.verifiers.instructions.ifeval import Check
from reward_service.verifiers.instructions.sentences import split_into_sentences
from reward_service.verifiers.instructions.text_tools import TextTools, remove_punctuation

_STRIP = string.punctuation + " "
_NUMBER = re.compile(r"\d+")
_MULTIPLES_OF_7 = [str(n) for n in range(14, 51, 7)]
_QUESTION = re.compile(r"\n*(?:Question \d+[\.|\):;]?\s*)")
_OPTION_LINE = re.compile(r"^[A-Ea-e][\.|\)]\s*\w+")
_CHOICE_QUESTIONS, _CHOICES = 4, 5
_AFRICA_MIN_LINES = 52  # the reference asks for 52 lines from Zimbabwe on (its comment says 53)
#: European capitals north of 45°, north to south (the reference's list and order).
_NORTHERN_CAPITALS = ("Reykjavik", "Helsinki", "Oslo", "Tallinn", "Stockholm", "Riga", "Moscow", "Copenhagen",
                      "Vilnius", "Minsk", "Dublin", "Berlin", "Amsterdam", "Warsaw", "London", "Brussels", "Prague",
                      "Luxembourg", "Paris", "Vienna", "Bratislava", "Budapest", "Vaduz", "Chisinau", "Bern",
                      "Ljubljana", "Zagreb")
_CITY_HEADER = ["ID", "Country", "City", "Year", "Count"]
_PRODUCT_HEADER = re.compile(r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),'
                             r'[ \t]*(Price|"Price"),[ \t]*(Stock|"Stock")$')
_STUDENT_HEADER = re.compile(r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *'
                             r'(Semester|"Semester")\t *(Score|"Score")$')
_QUOTED_SPECIAL = re.compile(r'".*[^\d\w\s].*"')
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NAPOLEON_YEARS = (1769, 1821)
_DAYS_IN_MONTH = {1: 31, 3: 31, 5: 31, 7: 31, 8: 31, 10: 31, 12: 31, 4: 30, 6: 30, 9: 30, 11: 30, 2: 29}


def _ascii(text: str) -> str:
    """NFKD, then non-ASCII dropped: 'São Tomé' -> 'Sao Tome'."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def _csv_rows(text: str, delimiter: str = ",") -> list[list[str]] | None:
    """``csv.reader`` over the text's lines, or None where it raises (a stray carriage return, a huge field)."""
    try:
        return list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:
        return None


def multiples_of_7(a: Args) -> Check:
    a.ignore_others()
    return lambda text, tools: _NUMBER.findall(text.replace(",", ", ")) == _MULTIPLES_OF_7


def _choice_question_stem(question: str) -> str | None:
    """The text before the first option line; None unless the question has exactly five options."""
    stem, options = "", 0
    for line in question.split("\n"):
        if _OPTION_LINE.match(line.strip()):
            options += 1
        elif not options:
            stem += " " + line.strip()
    return stem.strip() if options == _CHOICES else None


def choice_questions(a: Args) -> Check:
    """Starts at "Question" (nothing before it), four questions with five options each, stems growing."""
    a.ignore_others()

    def check(text: str, tools: TextTools) -> bool:
        if text[text.find("Question"):] != text:
            return False
        questions = [q.strip() for q in _QUESTION.split(text) if q.strip()]
        if len(questions) != _CHOICE_QUESTIONS:
            return False
        stems = [_choice_question_stem(q) for q in questions]
        if any(stem is None for stem in stems):
            return False
        return all(len(first) < len(second) for first, second in zip(stems, stems[1:]))
    return check


def reverse_alphabetical_lines(a: Args) -> Check:
    """From the first line naming Zimbabwe on, at least 52 non-empty lines in reverse alphabetical order
    (punctuation and spaces trimmed, accents dropped)."""
    a.ignore_others()

    def check(text: str, tools: TextTools) -> bool:
        lines = [line.strip(_STRIP) for line in text.split("\n") if line.strip(_STRIP)]
        start = next((i for i, line in enumerate(lines) if "Zimbabwe" in line), None)
        if start is None or len(lines) - start < _AFRICA_MIN_LINES:
            return False
        names = [_ascii(line) for line in lines[start:]]
        return all(first >= second for first, second in zip(names, names[1:]))
    return check


def word_reverse(a: Args) -> Check:
    a.ignore_others()

    def check(text: str, tools: TextTools) -> bool:
        reversed_words = " ".join(remove_punctuation(text.lower().strip()).split()[::-1])
        return "bald eagle" in reversed_words and reversed_words in split_into_sentences(reversed_words)
    return check


def character_reverse(a: Args) -> Check:
    a.ignore_others()
    return lambda text, tools: "elgae dlab" in text.lower()


def sentence_alphabet(a: Args) -> Check:
    a.ignore_others()

    def check(text: str, tools: TextTools) -> bool:
        sentences = split_into_sentences(text)
        if len(sentences) != len(string.ascii_lowercase):
            return False
        for letter, sentence in zip(string.ascii_lowercase, sentences):
            words = sentence.split()
            if not words or words[0].lower()[0] != letter:
                return False
        return True
    return check


def northern_capitals(a: Args) -> Check:
    a.ignore_others()

    def check(text: str, tools: TextTools) -> bool:
        capitals = [c.strip() for c in _ascii(text).split(",") if c.strip()]
        return tuple(capitals) == _NORTHERN_CAPITALS
    return check


def city_csv(a: Args) -> Check:
    a.ignore_others()

    def check(text: str, tools: TextTools) -> bool:
        rows = _csv_rows(text)
        return (rows is not None and len(rows) == 8 and rows[0] == _CITY_HEADER
                and all(len(row) == 5 for row in rows[1:]))
    return check


def special_character_csv(a: Args) -> Check:
    """The product header, 14 rows of five fields, and (in a row before any short one) a quoted field
    holding a character that is neither a word character nor a space. The reference reads the table with
    every ``"`` tripled, so a quoted field keeps its quotes."""
    a.ignore_others()

    def check(text: str, tools: TextTools) -> bool:
        if not _PRODUCT_HEADER.match(text.split("\n")[0].strip()):
            return False
        rows = _csv_rows(text.replace('"', '"""'))
        if rows is None or len(rows) != 15:
            return False
        for row in rows[1:]:
            if len(row) != 5:
                return False
            if any(_QUOTED_SPECIAL.match(field) for field in row):
                return True
        return False
    return check


def _quoted(field: str) -> bool:
    field = field.strip()
    return bool(field) and field[0] == '"' and field[-1] == '"'  # an empty field: the reference raises


def quoted_tsv(a: Args) -> Check:
    """The student header, tab separated, then three rows; every field of all four rows in double quotes."""
    a.ignore_others()

    def check(text: str, tools: TextTools) -> bool:
        if not _STUDENT_HEADER.match(text.split("\n")[0].strip()):
            return False
        rows = _csv_rows(text.replace('"', '"""'), delimiter="\t")
        return rows is not None and len(rows) == 4 and all(len(row) == 5 and all(map(_quoted, row)) for row in rows)
    return check


def _plausible_date(date: str) -> bool:
    if not _DATE.match(date):
        return False
    year, month, day = (int(part) for part in date.split("-"))
    low, high = _NAPOLEON_YEARS
    return low <= year <= high and month <= 12 and day <= _DAYS_IN_MONTH.get(month, day)


def napoleon_dates(a: Args) -> Check:
    """Comma-separated YYYY-MM-DD dates, years 1769-1821, months at most 12, days within the month
    (February 29; month and day 00 pass, as in the reference)."""
    a.ignore_others()
    return lambda text, tools: all(_plausible_date(d.strip()) for d in text.strip().split(","))
