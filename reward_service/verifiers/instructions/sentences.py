"""The rule-based sentence splitter of IFEval's ``instructions_util.split_into_sentences`` (IFBench's
checks use it): abbreviations, initials, decimals, websites and ellipses protected, then a break
after every ``.``, ``?`` and ``!``. Pure; no model."""

from __future__ import annotations

import re

_ALPHABETS = "([A-Za-z])"
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
_STARTERS = (r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s"
             r"|This\s|Wherever)")
_ACRONYMS = "([A-Z][.][A-Z][.](?:[A-Z][.])?)"
_WEBSITES = re.compile("[.](com|net|org|io|gov|edu|me)")
_DECIMAL = re.compile("([0-9])[.]([0-9])")
_MULTIPLE_DOTS = re.compile(r"\.\.+")  # the reference's ``\.{2,}``, led by a literal
_SINGLE_INITIAL = re.compile(r"\s" + _ALPHABETS + "[.] ")
_ACRONYM_THEN_STARTER = re.compile(_ACRONYMS + " " + _STARTERS)
_THREE_INITIALS = re.compile(_ALPHABETS + "[.]" + _ALPHABETS + "[.]" + _ALPHABETS + "[.]")
_TWO_INITIALS = re.compile(_ALPHABETS + "[.]" + _ALPHABETS + "[.]")
_SUFFIX_THEN_STARTER = re.compile(" " + _SUFFIXES + "[.] " + _STARTERS)
_SUFFIX = re.compile(" " + _SUFFIXES + "[.]")
_SPACE_INITIAL = re.compile(" " + _ALPHABETS + "[.]")
#: The reference's ``(Mr|St|Mrs|Ms|Dr)[.]`` -> ``\1<prd>``, and the substitutions above whose match opens with a
#: letter before a ``.``, led by that ``.`` instead (the letter looked behind at): the regex engine then jumps
#: from ``.`` to ``.`` rather than trying every letter, and the same dots are replaced (each match ends in a
#: ``.`` or a starter word's lower-case letter, so the letter a match opens with was never taken by the one
#: before it). ``_SINGLE_INITIAL`` and ``_DECIMAL`` stay as they are: a match there takes the character after.
_PREFIX_DOT = re.compile(r"\.(?:(?<=Mr\.)|(?<=St\.)|(?<=Ms\.)|(?<=Dr\.)|(?<=Mrs\.))")
_ACRONYM_THEN_STARTER_DOT = re.compile(r"\.(?<=[A-Z]\.)([A-Z][.](?:[A-Z][.])?) " + _STARTERS)
_THREE_INITIALS_DOT = re.compile(r"\.(?<=[A-Za-z]\.)([A-Za-z])[.]([A-Za-z])[.]")
_TWO_INITIALS_DOT = re.compile(r"\.(?<=[A-Za-z]\.)([A-Za-z])[.]")
_SPACE_INITIAL_DOT = re.compile(r"\.(?<= [A-Za-z]\.)")
#: Cheap tests (each scans for a literal ``.`` and looks behind it) that a substitution can match at all:
#: without a hit it would leave the text as it is, and is skipped (most responses have no initials).
_MAY_DECIMAL = re.compile(r"\.(?<=[0-9]\.)[0-9]")
#: ``_DECIMAL`` takes the digit after a dot, so in ``1.2.3`` the second dot stays; without such a chain each
#: decimal point is replaced alone, as this dot-led pattern does.
_DECIMAL_CHAIN = re.compile(r"\.(?<=[0-9]\.)[0-9]\.[0-9]")
_DECIMAL_DOT = re.compile(r"\.(?<=[0-9]\.)(?=[0-9])")
_MAY_SINGLE_INITIAL = re.compile(r"\. (?<=\s[A-Za-z]\. )")
_MAY_INITIALS = re.compile(r"\.[A-Za-z]\.")  # in every acronym and every run of two or three initials
_MAY_SUFFIX = re.compile(r"\.(?<=nc\.|td\.|Jr\.|Sr\.|Co\.)")
#: A ``.`` that one of the substitutions could act on (each of them replaces a ``.``, none matches without one,
#: and one that matches nothing leaves the text as it was for the next): without one, all are skipped.
_MAY_ANY = re.compile(r"\.(?:(?=\.|[A-Za-z]\.|com|net|org|io|gov|edu|me)|(?<=[0-9]\.)(?=[0-9])|(?<=\s[A-Za-z]\.)"
                      r"|(?<=Mr\.|St\.|Ms\.|Dr\.)|(?<=Mrs\.)|(?<=nc\.|td\.|Jr\.|Sr\.|Co\.))")


#: What each substitution needs at a ``.`` (tried at the ``.``s ``_MAY_ANY`` finds: a few per text).
_AT_DOT = {"prefix": _PREFIX_DOT, "website": re.compile(r"\.(?:com|net|org|io|gov|edu|me)"), "decimal": _MAY_DECIMAL,
           "dots": re.compile(r"\.\."), "single": _MAY_SINGLE_INITIAL, "initials": _MAY_INITIALS, "suffix": _MAY_SUFFIX,
           "space": _SPACE_INITIAL_DOT}


def _substitutions_needed(text: str) -> set[str]:
    """The substitutions (``_AT_DOT``'s names) with a ``.`` to act on in ``text``. Taken on the text before
    any of them: none creates a ``.`` or changes a character next to one other than by replacing that ``.``
    (into ``<prd>``, whose letters never touch a ``.``), so a later one finds nothing the first text lacked."""
    needed: set[str] = set()
    for dot in _MAY_ANY.finditer(text):
        at = dot.start()
        needed.update(name for name, pattern in _AT_DOT.items() if name not in needed and pattern.match(text, at))
    return needed


def _protect_dots(text: str, needed: set[str]) -> str:
    """The reference's substitutions: each ``.`` that ends no sentence becomes ``<prd>`` (a run of dots ends one);
    only those ``needed`` are tried (the costlier ones also only when the text, as it is by then, still holds
    their ``.``)."""
    if "prefix" in needed:
        text = _PREFIX_DOT.sub("<prd>", text)
    if "website" in needed:
        text = _WEBSITES.sub("<prd>\\1", text)
    if "decimal" in needed and _MAY_DECIMAL.search(text):
        if _DECIMAL_CHAIN.search(text):
            text = _DECIMAL.sub("\\1<prd>\\2", text)
        else:  # each decimal point alone, no digit shared: the same dots, found from dot to dot
            text = _DECIMAL_DOT.sub("<prd>", text)
    if "dots" in needed and ".." in text:
        text = _MULTIPLE_DOTS.sub(lambda match: "<prd>" * len(match.group(0)) + "<stop>", text)
    if "Ph.D" in text:
        text = text.replace("Ph.D.", "Ph<prd>D<prd>")
    if "single" in needed and _MAY_SINGLE_INITIAL.search(text):
        text = _SINGLE_INITIAL.sub(" \\1<prd> ", text)
    if "initials" in needed and _MAY_INITIALS.search(text):
        text = _ACRONYM_THEN_STARTER_DOT.sub(".\\1<stop> \\2", text)
        text = _THREE_INITIALS_DOT.sub("<prd>\\1<prd>\\2<prd>", text)
        text = _TWO_INITIALS_DOT.sub("<prd>\\1<prd>", text)
    if "suffix" in needed and _MAY_SUFFIX.search(text):
        text = _SUFFIX_THEN_STARTER.sub(" \\1<stop> \\2", text)
        text = _SUFFIX.sub(" \\1<prd>", text)
    if "space" in needed:
        text = _SPACE_INITIAL_DOT.sub("<prd>", text)
    return text


def split_into_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped; a trailing empty one dropped."""
    text = (" " + text + "  ").replace("\n", " ")
    needed = _substitutions_needed(text)
    if needed:
        text = _protect_dots(text, needed)
    if "”" in text:
        text = text.replace(".”", "”.")
    if '"' in text:
        text = text.replace('."', '".').replace('!"', '"!').replace('?"', '"?')
    text = text.replace(".", ".<stop>").replace("?", "?<stop>").replace("!", "!<stop>").replace("<prd>", ".")
    sentences = list(map(str.strip, text.split("<stop>")))
    if sentences and not sentences[-1]:
        sentences = sentences[:-1]
    return sentences

