"""The rule-based sentence splitter of IFEval's ``instructions_util.split_into_sentences`` (IFBench's
checks use it): abbreviations, initials, decimals, websites and ellipses protected, then a break
after every ``.``, ``?`` and ``!``. Pure; no model."""

from __future__ import annotations

import re

_ALPHABETS = "([A-Za-z])"
_PREFIXES = re.compile("(Mr|St|Mrs|Ms|Dr)[.]")
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
_STARTERS = (r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s"
             r"|This\s|Wherever)")
_ACRONYMS = "([A-Z][.][A-Z][.](?:[A-Z][.])?)"
_WEBSITES = re.compile("[.](com|net|org|io|gov|edu|me)")
_DECIMAL = re.compile("([0-9])[.]([0-9])")
_MULTIPLE_DOTS = re.compile(r"\.{2,}")
_SINGLE_INITIAL = re.compile(r"\s" + _ALPHABETS + "[.] ")
_ACRONYM_THEN_STARTER = re.compile(_ACRONYMS + " " + _STARTERS)
_THREE_INITIALS = re.compile(_ALPHABETS + "[.]" + _ALPHABETS + "[.]" + _ALPHABETS + "[.]")
_TWO_INITIALS = re.compile(_ALPHABETS + "[.]" + _ALPHABETS + "[.]")
_SUFFIX_THEN_STARTER = re.compile(" " + _SUFFIXES + "[.] " + _STARTERS)
_SUFFIX = re.compile(" " + _SUFFIXES + "[.]")
_SPACE_INITIAL = re.compile(" " + _ALPHABETS + "[.]")
#: Cheap tests (each scans for a literal ``.`` and looks behind it) that a substitution can match at all:
#: without a hit it would leave the text as it is, and is skipped (most responses have no initials).
_MAY_PREFIX = re.compile(r"\.(?<=Mr\.|St\.|Ms\.|Dr\.|rs\.)")
_MAY_DECIMAL = re.compile(r"\.(?<=[0-9]\.)[0-9]")
_MAY_SINGLE_INITIAL = re.compile(r"\. (?<=\s[A-Za-z]\. )")
_MAY_INITIALS = re.compile(r"\.[A-Za-z]\.")  # in every acronym and every run of two or three initials
_MAY_SUFFIX = re.compile(r"\.(?<=nc\.|td\.|Jr\.|Sr\.|Co\.)")
_MAY_SPACE_INITIAL = re.compile(r"\.(?<= [A-Za-z]\.)")


def split_into_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped; a trailing empty one dropped."""
    text = (" " + text + "  ").replace("\n", " ")
    if _MAY_PREFIX.search(text):
        text = _PREFIXES.sub("\\1<prd>", text)
    text = _WEBSITES.sub("<prd>\\1", text)
    if _MAY_DECIMAL.search(text):
        text = _DECIMAL.sub("\\1<prd>\\2", text)
    if ".." in text:
        text = _MULTIPLE_DOTS.sub(lambda match: "<prd>" * len(match.group(0)) + "<stop>", text)
    if "Ph.D" in text:
        text = text.replace("Ph.D.", "Ph<prd>D<prd>")
    if _MAY_SINGLE_INITIAL.search(text):
        text = _SINGLE_INITIAL.sub(" \\1<prd> ", text)
    if _MAY_INITIALS.search(text):
        text = _ACRONYM_THEN_STARTER.sub("\\1<stop> \\2", text)
        text = _THREE_INITIALS.sub("\\1<prd>\\2<prd>\\3<prd>", text)
        text = _TWO_INITIALS.sub("\\1<prd>\\2<prd>", text)
    if _MAY_SUFFIX.search(text):
        text = _SUFFIX_THEN_STARTER.sub(" \\1<stop> \\2", text)
        text = _SUFFIX.sub(" \\1<prd>", text)
    if _MAY_SPACE_INITIAL.search(text):
        text = _SPACE_INITIAL.sub(" \\1<prd>", text)
    for closing in ("”", '"'):
        text = text.replace("." + closing, closing + ".")
    text = text.replace('!"', '"!').replace('?"', '"?')
    text = text.replace(".", ".<stop>").replace("?", "?<stop>").replace("!", "!<stop>").replace("<prd>", ".")
    sentences = [s.strip() for s in text.split("<stop>")]
    if sentences and not sentences[-1]:
        sentences = sentences[:-1]
    return sentences
